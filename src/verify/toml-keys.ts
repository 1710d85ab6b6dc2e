/**
 * The key paths of a TOML document, each with the raw text of its value: enough to tell
 * whether a `pyproject.toml` change touches the test runner's tables (`[tool.pytest…]`,
 * `[tool.coverage…]`) however they are spelled (headers, dotted keys, inline tables,
 * quoted and escaped keys).
 *
 * Strict on purpose: it reads a subset of TOML 1.0 and throws `TomlShapeError` on anything
 * else. The caller treats a document it cannot read as a changed test section, so a
 * construct read differently here and by Python's tomllib can only make grading stricter,
 * never hide a change.
 */

export class TomlShapeError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} at offset ${offset}`);
    this.name = 'TomlShapeError';
  }
}

export interface TomlEntry {
  /** The full key path: the enclosing table's, then the dotted key. */
  path: string[];
  /** The value's source text; for a table header, `[` or `[[`. */
  raw: string;
}

const BARE_KEY = /[A-Za-z0-9_-]/;
/** Integers, floats, booleans, dates and times: no quotes, brackets or braces. */
const SCALAR = /^[A-Za-z0-9_+\-.:]+/;

export function tomlEntries(text: string): TomlEntry[] {
  let pos = 0;
  const fail = (what: string): never => {
    throw new TomlShapeError(what, pos);
  };
  const peek = (n = 0) => text[pos + n] ?? '';
  const skipBlanks = () => {
    while (peek() === ' ' || peek() === '\t') pos++;
  };
  const skipComment = () => {
    if (peek() !== '#') return;
    while (pos < text.length && peek() !== '\n' && peek() !== '\r') pos++;
  };
  const atNewline = () => peek() === '\n' || (peek() === '\r' && peek(1) === '\n');
  const takeNewline = () => {
    if (peek() === '\n') pos++;
    else if (peek() === '\r' && peek(1) === '\n') pos += 2;
    else fail('expected a line end');
  };
  /** Blanks, comments and line ends (inside arrays). */
  const skipSpace = () => {
    for (;;) {
      skipBlanks();
      skipComment();
      if (atNewline()) takeNewline();
      else return;
    }
  };

  const basicString = (): string => {
    pos++; // opening quote
    let out = '';
    for (;;) {
      const c = peek();
      if (c === '' || c === '\n' || c === '\r') fail('unterminated string');
      pos++;
      if (c === '"') return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = peek();
      pos++;
      const simple: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' };
      if (e in simple) {
        out += simple[e];
        continue;
      }
      const width = e === 'u' ? 4 : e === 'U' ? 8 : 0;
      if (!width) fail(`escape \\${e}`);
      const hex = text.slice(pos, pos + width);
      if (!new RegExp(`^[0-9A-Fa-f]{${width}}$`).test(hex)) fail('bad unicode escape');
      const code = Number.parseInt(hex, 16);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) fail('bad unicode scalar');
      out += String.fromCodePoint(code);
      pos += width;
    }
  };
  const literalString = (): string => {
    const end = text.slice(pos + 1).search(/['\r\n]/);
    if (end < 0 || text[pos + 1 + end] !== "'") fail('unterminated literal string');
    const value = text.slice(pos + 1, pos + 1 + end);
    pos += end + 2;
    return value;
  };
  /** `"""…"""` or `'''…'''`; the closing run may carry up to two quotes of content. */
  const multilineString = (quote: '"' | "'") => {
    pos += 3;
    for (;;) {
      const c = peek();
      if (c === '') fail('unterminated multi-line string');
      if (c === '\\' && quote === '"') {
        pos += 2;
        continue;
      }
      if (c === quote && peek(1) === quote && peek(2) === quote) {
        let run = 0;
        while (peek(run) === quote) run++;
        if (run > 5) fail('too many quotes');
        pos += run;
        return;
      }
      pos++;
    }
  };

  const simpleKey = (): string => {
    const c = peek();
    if (c === '"') return basicString();
    if (c === "'") return literalString();
    const start = pos;
    while (BARE_KEY.test(peek())) pos++;
    if (pos === start) fail('expected a key');
    return text.slice(start, pos);
  };
  const dottedKey = (): string[] => {
    const parts = [simpleKey()];
    for (;;) {
      skipBlanks();
      if (peek() !== '.') return parts;
      pos++;
      skipBlanks();
      parts.push(simpleKey());
    }
  };

  const value = (): void => {
    const c = peek();
    if (c === '"' || c === "'") {
      if (peek(1) === c && peek(2) === c) multilineString(c);
      else if (c === '"') basicString();
      else literalString();
      return;
    }
    if (c === '[') {
      pos++;
      for (;;) {
        skipSpace();
        if (peek() === ']') {
          pos++;
          return;
        }
        value();
        skipSpace();
        if (peek() === ',') {
          pos++;
          continue;
        }
        if (peek() === ']') {
          pos++;
          return;
        }
        fail('expected , or ] in an array');
      }
    }
    if (c === '{') {
      pos++;
      skipBlanks();
      if (peek() === '}') {
        pos++;
        return;
      }
      for (;;) {
        skipBlanks();
        dottedKey();
        skipBlanks();
        if (peek() !== '=') fail('expected = in an inline table');
        pos++;
        skipBlanks();
        value();
        skipBlanks();
        if (peek() === ',') {
          pos++;
          continue;
        }
        if (peek() === '}') {
          pos++;
          return;
        }
        fail('expected , or } in an inline table');
      }
    }
    const m = SCALAR.exec(text.slice(pos));
    if (!m) fail('expected a value');
    pos += m![0].length;
    // A date-time may separate its date and time with one space.
    if (/^\d{4}-\d{2}-\d{2}$/.test(m![0]) && peek() === ' ' && /\d/.test(peek(1))) {
      pos++;
      pos += SCALAR.exec(text.slice(pos))![0].length;
    }
  };

  const entries: TomlEntry[] = [];
  let table: string[] = [];
  for (;;) {
    skipBlanks();
    skipComment();
    if (pos >= text.length) return entries;
    if (atNewline()) {
      takeNewline();
      continue;
    }
    if (peek() === '[') {
      const array = peek(1) === '[';
      pos += array ? 2 : 1;
      skipBlanks();
      table = dottedKey();
      skipBlanks();
      if (text.slice(pos, pos + (array ? 2 : 1)) !== (array ? ']]' : ']')) fail('unterminated table header');
      pos += array ? 2 : 1;
      entries.push({ path: table, raw: array ? '[[' : '[' });
    } else {
      const key = dottedKey();
      skipBlanks();
      if (peek() !== '=') fail('expected =');
      pos++;
      skipBlanks();
      const start = pos;
      value();
      entries.push({ path: [...table, ...key], raw: text.slice(start, pos) });
    }
    skipBlanks();
    skipComment();
    if (pos < text.length) takeNewline();
  }
}
