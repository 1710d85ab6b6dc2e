/**
 * What an editing action writes: the code it adds and, where the action names it, the code
 * it replaces. The probe quality report uses it to ask whether a gold fix's new lines are
 * already in its context (then BPB rewards copying, not finding the fix).
 *
 * Read from the action as the item renders it: editor arguments (`new_str`, `file_text`,
 * SWE-agent's `edit` body), and in shell commands the forms agents use to edit: `sed`
 * substitutions and insertions, a heredoc written to a file, a Python script's
 * `.replace(old, new)`. Anything else (an arbitrary script) has no new code we can name.
 */
import { parseActionText } from '../formats/registry.ts';
import { SWE_AGENT_TOOL } from '../formats/swe-agent.ts';

export interface NewCode {
  /** How the action writes it, for the report: `str_replace`, `sed`, `heredoc`, `python-replace`, … */
  how: string;
  /** The text the action writes. */
  added: string;
  /** The text it replaces, where the action names it ('' for whole-file writes and insertions). */
  removed: string;
}

/** The new code of an action in a probe item's format, or null when the action writes none we can name. */
export function newCode(action: string, format: string): NewCode | null {
  let parsed;
  try {
    parsed = parseActionText(action, format);
  } catch {
    return null;
  }
  const args = parsed.args;
  const str = (key: string) => (typeof args[key] === 'string' ? (args[key] as string) : '');
  if (parsed.tool === 'str_replace_editor') {
    if (args.command === 'str_replace') return { how: 'str_replace', added: str('new_str'), removed: str('old_str') };
    if (args.command === 'insert') return { how: 'insert', added: str('new_str'), removed: '' };
    if (args.command === 'create') return { how: 'create', added: str('file_text'), removed: '' };
    return null;
  }
  if (parsed.tool === SWE_AGENT_TOOL) {
    if (args.command === 'edit') return { how: 'edit-range', added: str('replacement'), removed: '' };
    if (args.command === 'edit_replace') return { how: 'edit-replace', added: str('replace'), removed: str('search') };
    return null;
  }
  if (parsed.tool === 'bash') return shellNewCode(str('command'));
  return null;
}

/**
 * The lines of new code worth looking for: added lines that the replaced text does not already
 * have, trimmed, with at least `minChars` non-blank characters (a lone `}` or `else:` is in
 * every context and says nothing).
 */
export function distinctiveLines(code: NewCode, minChars = 8): string[] {
  const removed = new Set(code.removed.split('\n').map((l) => l.trim()));
  const lines = code.added
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => !removed.has(l) && l.replace(/\s/g, '').length >= minChars);
  return [...new Set(lines)];
}

function shellNewCode(command: string): NewCode | null {
  // A heredoc written to a file (`cat > f <<'EOF'`, `cat <<EOF > f`, `tee f <<EOF`): the file's new text.
  const opening =
    /\bcat\s*>>?\s*\S+\s*<<-?\s*(['"]?)(\w+)\1|\bcat\s*<<-?\s*(['"]?)(\w+)\3\s*>>?\s*\S+|\btee\s+(?:-a\s+)?\S+\s*<<-?\s*(['"]?)(\w+)\5/.exec(
      command,
    );
  if (opening) {
    const delimiter = opening[2] ?? opening[4] ?? opening[6]!;
    const bodyStart = command.indexOf('\n', opening.index + opening[0].length) + 1;
    const close = new RegExp(`^[ \\t]*${delimiter}[ \\t]*$`, 'm').exec(command.slice(bodyStart));
    if (bodyStart > 0 && close)
      return { how: 'heredoc', added: command.slice(bodyStart, bodyStart + close.index).replace(/\n$/, ''), removed: '' };
  }
  const replaced = pythonReplace(command);
  if (replaced) return replaced;
  return sedNewCode(command);
}

/** `sed -i 's/old/new/'` (any delimiter) or `sed -i 'Ni text'` / `'Na text'`. */
function sedNewCode(command: string): NewCode | null {
  if (!/\bsed\b/.test(command)) return null;
  const subst = /\bs([/|#,:@])((?:\\.|(?!\1)[^\\])*)\1((?:\\.|(?!\1)[^\\])*)\1/.exec(command);
  if (subst) {
    const d = subst[1]!;
    const unescaped = (s: string) =>
      s.replace(/\\n/g, '\n').replace(new RegExp(`\\\\([\\\\${d === '/' ? '/' : `\\${d}`}&.*\\[\\]^$])`, 'g'), '$1');
    return { how: 'sed', added: unescaped(subst[3]!), removed: unescaped(subst[2]!) };
  }
  const insert = /\bsed\s+(?:-\w+\s+)*'(?:\d+|\$|\/[^/]*\/)\s*([ia])\\?\s?((?:[^'\\]|\\.)*)'/.exec(command);
  if (insert) return { how: 'sed', added: insert[2]!.replace(/\\n/g, '\n').replace(/\\(.)/g, '$1'), removed: '' };
  return null;
}

/** A Python script's `X.replace(old, new)`, its arguments string literals or names bound to one. */
function pythonReplace(script: string): NewCode | null {
  if (!/\bpython[\d.]*\b/.test(script)) return null;
  const call = /\.replace\(\s*/g;
  for (let m; (m = call.exec(script)); ) {
    const first = pythonArgument(script, m.index + m[0].length);
    if (!first) continue;
    const comma = /^\s*,\s*/.exec(script.slice(first.end));
    if (!comma) continue;
    const second = pythonArgument(script, first.end + comma[0].length);
    if (second) return { how: 'python-replace', added: second.value, removed: first.value };
  }
  return null;
}

function pythonArgument(src: string, at: number): { value: string; end: number } | null {
  const literal = pythonString(src, at);
  if (literal) return literal;
  const name = /^[A-Za-z_]\w*/.exec(src.slice(at));
  if (!name) return null;
  // The name's last binding to a string literal before the call.
  const bindings = [...src.slice(0, at).matchAll(new RegExp(`^[ \\t]*${name[0]}\\s*=\\s*`, 'gm'))];
  const binding = bindings.at(-1);
  if (!binding) return null;
  const value = pythonString(src, binding.index! + binding[0].length);
  return value ? { value: value.value, end: at + name[0].length } : null;
}

const PY_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '\n': '' };

/** A Python string literal at `at` (optional r prefix, single or triple quotes), decoded. */
function pythonString(src: string, at: number): { value: string; end: number } | null {
  const open = /^([rRbBuU]?)('''|"""|'|")/.exec(src.slice(at));
  if (!open) return null;
  const raw = open[1]!.toLowerCase() === 'r';
  const quote = open[2]!;
  let value = '';
  for (let i = at + open[0].length; i < src.length; i++) {
    if (src.startsWith(quote, i)) return { value, end: i + quote.length };
    const c = src[i]!;
    if (c === '\n' && quote.length === 1) return null;
    if (c === '\\' && !raw && i + 1 < src.length) {
      const next = src[++i]!;
      value += PY_ESCAPES[next] ?? `\\${next}`;
    } else {
      value += c;
    }
  }
  return null;
}
