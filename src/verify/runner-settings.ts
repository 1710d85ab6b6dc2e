/**
 * The test-runner part of a file that also configures other things — `setup.cfg`,
 * `tox.ini`, `pyproject.toml`, `package.json` — as a string, so that two versions can be
 * compared: a candidate's change outside that part (a dependency, a linter setting) is
 * kept, a change inside it is dropped from grading.
 *
 * `null` means the text could not be read with certainty (not UTF-8, a construct the
 * strict readers here do not take, duplicate keys): the caller then counts the test part
 * as changed. So a reader that disagrees with the runner's own can make grading stricter,
 * never let a change through.
 */
import { tomlEntries, TomlShapeError } from './toml-keys.ts';

export type SettingsFormat = 'ini' | 'toml' | 'package.json';

/** Files read here, by base name. */
export const SETTINGS_FILES: Record<string, SettingsFormat> = {
  'setup.cfg': 'ini',
  'tox.ini': 'ini',
  'pyproject.toml': 'toml',
  'package.json': 'package.json',
};

/** Section or table names that configure pytest or coverage (which loads plugins). */
const TEST_SECTION = /pytest|coverage/i;

/** Line ends as Python's `str.splitlines` knows them (iniconfig splits with it). */
const PY_LINE_END = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

/** Python's `str.isspace` characters: iniconfig strips with them, and JavaScript's trim differs (\uFEFF, \x1c-\x1f). */
const PY_SPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_TRAILING_SPACE = new RegExp(`[${PY_SPACE}]+$`);
const PY_LEADING_SPACE = new RegExp(`^[${PY_SPACE}]+`);
const pyRstrip = (s: string) => s.replace(PY_TRAILING_SPACE, '');
const pyLstrip = (s: string) => s.replace(PY_LEADING_SPACE, '');

/**
 * INI as pytest's iniconfig reads it: a line that is not a comment and starts with `[`
 * opens a section when, comments cut, it ends with `]`; every other line belongs to the
 * section above. The test part is the lines of sections named like pytest/coverage, plus
 * every line anywhere that mentions them (other readers, such as coverage's configparser,
 * split sections slightly differently; a header they alone see is caught this way).
 */
function iniTestPart(text: string): string {
  const sections: Array<[string, string[]]> = [];
  const mentions: string[] = [];
  let current: string[] | null = null;
  for (const raw of text.split(PY_LINE_END)) {
    const line = pyRstrip(raw);
    if (TEST_SECTION.test(line)) mentions.push(line);
    const comment = /^[#;]/.test(pyLstrip(line));
    const cut = pyRstrip(pyRstrip(line.split('#')[0]!).split(';')[0]!);
    if (!comment && line.startsWith('[') && cut.endsWith(']')) {
      const name = cut.slice(1, -1);
      current = TEST_SECTION.test(name) ? [] : null;
      if (current) sections.push([name, current]);
      continue;
    }
    current?.push(line);
  }
  return JSON.stringify({ sections, mentions });
}

/** Tables under `tool.pytest…`/`tool.coverage…`, and `tool` itself when set whole. */
function tomlTestPart(text: string): string | null {
  try {
    const part = tomlEntries(text)
      .filter(({ path }) => path[0] === 'tool' && (path.length === 1 || TEST_SECTION.test(path[1]!)))
      .map(({ path, raw }) => [path, raw]);
    return JSON.stringify(part);
  } catch (error) {
    if (error instanceof TomlShapeError) return null;
    throw error;
  }
}

/** Keys of package.json that decide how tests run: npm scripts, module type, runner settings. */
const PACKAGE_TEST_KEYS = ['scripts', 'type', 'imports', 'jest', 'mocha', 'ava', 'nyc', 'c8', 'tap', 'babel', 'vitest'];

function packageTestPart(text: string): string | null {
  let value: unknown;
  try {
    value = strictJson(text.replace(/^\uFEFF/, ''));
  } catch (error) {
    if (error instanceof SyntaxError) return null;
    throw error;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  return JSON.stringify(PACKAGE_TEST_KEYS.map((k) => [k, record[k] ?? null]));
}

/** What an absent file counts as: one with no settings. */
const EMPTY: Record<SettingsFormat, string> = { ini: '', toml: '', 'package.json': '{}' };

/** The test part of a file's text (`null` text: the file is absent); `null` when unreadable. */
export function testSettings(format: SettingsFormat, text: string | null): string | null {
  if (text === null) return testSettings(format, EMPTY[format]);
  if (text.includes('\uFFFD') || text.includes('\0')) return null; // not UTF-8, or binary
  switch (format) {
    case 'ini':
      return iniTestPart(text);
    case 'toml':
      return tomlTestPart(text);
    case 'package.json':
      return packageTestPart(text);
  }
}

/** Whether the candidate's version may configure the runner differently from the base's. */
export function testSettingsChanged(format: SettingsFormat, base: string | null, candidate: string | null): boolean {
  const before = testSettings(format, base);
  const after = testSettings(format, candidate);
  return before === null || after === null || before !== after;
}

/**
 * JSON.parse, except that a key appearing twice in one object is an error: readers differ
 * on which of the two wins (JSON.parse keeps the last), so such a file is not read at all.
 */
export function strictJson(text: string): unknown {
  let pos = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at offset ${pos}`);
  };
  const ws = () => {
    while (/[ \t\n\r]/.test(text[pos] ?? '')) pos++;
  };
  const string = (): string => {
    const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*"/.exec(text.slice(pos));
    if (!m) fail('bad string');
    pos += m![0].length;
    return JSON.parse(m![0]) as string;
  };
  const value = (): unknown => {
    ws();
    const c = text[pos];
    if (c === '{') {
      pos++;
      const out: Record<string, unknown> = {};
      const seen = new Set<string>();
      ws();
      if (text[pos] === '}') {
        pos++;
        return out;
      }
      for (;;) {
        ws();
        const key = string();
        if (seen.has(key)) fail(`duplicate key ${JSON.stringify(key)}`);
        seen.add(key);
        ws();
        if (text[pos] !== ':') fail('expected :');
        pos++;
        Object.defineProperty(out, key, { value: value(), enumerable: true, writable: true, configurable: true });
        ws();
        if (text[pos] === ',') {
          pos++;
          continue;
        }
        if (text[pos] === '}') {
          pos++;
          return out;
        }
        fail('expected , or }');
      }
    }
    if (c === '[') {
      pos++;
      const out: unknown[] = [];
      ws();
      if (text[pos] === ']') {
        pos++;
        return out;
      }
      for (;;) {
        out.push(value());
        ws();
        if (text[pos] === ',') {
          pos++;
          continue;
        }
        if (text[pos] === ']') {
          pos++;
          return out;
        }
        fail('expected , or ]');
      }
    }
    if (c === '"') return string();
    const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(pos));
    if (!m) fail('unexpected token');
    pos += m![0].length;
    return JSON.parse(m![0]) as unknown;
  };
  const result = value();
  ws();
  if (pos !== text.length) fail('trailing text');
  return result;
}
