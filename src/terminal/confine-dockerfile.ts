/**
 * A Dockerfile rewritten so that none of its steps can open a raw socket or reach the host
 * through the engine (issue 26, class 3). The build's network is build-network.ts; this is
 * what the network cannot stop:
 *
 * - Every RUN starts with drop-net-caps (build-step/drop-net-caps.S), copied in fresh just
 *   before the step so that nothing an earlier step or COPY put at its path runs instead:
 *   `RUN cmd` becomes `COPY <it>` + `RUN ["<it>", <the stage's SHELL…>, "cmd"]`, and the exec
 *   form gets it in front. The shell form turned exec form runs exactly what the builder
 *   would (it, too, hands the string to the stage's SHELL).
 * - The file is re-emitted one logical instruction per line (continuations joined as the
 *   builder joins them), so the builder parses the same instructions this module saw; a
 *   line that would still continue is refused.
 * - Refused, naming the line: ONBUILD (its steps would run in a later build, before any
 *   step of ours), RUN flags (BuildKit's; the classic builder has none that are safe here),
 *   ADD from a URL and COPY --from an image the engine lacks (the engine itself would fetch
 *   them, over the host's network), and either with a `$` the builder would expand.
 */
import { InputError } from '../errors.ts';

/** Where each step's drop-net-caps lives in the image, and its name in the build context. */
export const STEP_WRAPPER_PATH = '/.probe-build-step';
export const STEP_WRAPPER_CONTEXT_NAME = '.probe-build-step';
const DEFAULT_SHELL = ['/bin/sh', '-c'];

export interface Instruction {
  /** Lower-case keyword (`run`, `from`, …). */
  keyword: string;
  /** The rest of the logical line, continuations joined. */
  rest: string;
  /** The logical line as the builder sees it. */
  text: string;
  /** 1-based line where it starts. */
  line: number;
}

export interface ParsedDockerfile {
  /** The parser directives at the top (`# escape=…`), verbatim. */
  directives: string[];
  escape: string;
  instructions: Instruction[];
}

/** Go's unicode.IsSpace, as the builder trims. */
const trimLeft = (s: string) => s.replace(/^[\s\u0085]+/u, '');

/** Instructions as the classic builder's parser reads them (moby/buildkit frontend/dockerfile/parser). */
export function parseDockerfile(text: string): ParsedDockerfile {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const directives: string[] = [];
  let escapeToken = '\\';
  let i = 0;
  for (; i < lines.length; i++) {
    const m = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$/.exec(lines[i]!);
    if (!m) break;
    directives.push(lines[i]!);
    if (m[1]!.toLowerCase() === 'escape') escapeToken = m[2]!;
  }
  const continuation = new RegExp(`${escapeToken.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}[ \\t]*$`);
  const isComment = (s: string) => trimLeft(s).startsWith('#');
  const instructions: Instruction[] = [];
  for (; i < lines.length; i++) {
    const first = trimLeft(lines[i]!);
    if (first.startsWith('#')) continue;
    const start = i + 1;
    let line = first;
    let open = continuation.test(line);
    if (open) line = line.replace(continuation, '');
    while (open && i + 1 < lines.length) {
      const next = lines[++i]!;
      if (isComment(next) || trimLeft(next) === '') continue;
      open = continuation.test(next);
      line += open ? next.replace(continuation, '') : next;
    }
    if (line.trim() === '') continue;
    const [keyword = '', rest = ''] = line.trim().split(/[\t\v\f\r ]+(.*)/s);
    instructions.push({ keyword: keyword.toLowerCase(), rest, text: line, line: start });
  }
  return { directives, escape: escapeToken, instructions };
}

/** A JSON array of strings (the exec form), or undefined for the shell form. */
function execForm(rest: string, where: () => InputError): string[] | undefined {
  if (!rest.trimStart().startsWith('[')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(rest);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw where();
  return value;
}

/** Leading `--name=value` flags and what follows them. */
function flagsOf(rest: string): { flags: string[]; args: string } {
  const flags: string[] = [];
  let args = rest.trim();
  for (let m = /^(--\S*)\s*(.*)$/s.exec(args); m; m = /^(--\S*)\s*(.*)$/s.exec(args)) {
    flags.push(m[1]!);
    args = m[2]!;
  }
  return { flags, args };
}

/** Facts about the images the Dockerfile names that this engine has (FROM and COPY --from). */
export interface LocalImage {
  /** Its SHELL (Config.Shell), where it set one. */
  shell?: string[];
}

/** Images named by FROM and COPY --from, for the caller to look up before `confineDockerfile`. */
export function namedImages(text: string): string[] {
  const names = new Set<string>();
  for (const ins of parseDockerfile(text).instructions) {
    if (ins.keyword === 'from') {
      const image = flagsOf(ins.rest).args.split(/\s+/)[0];
      if (image) names.add(image);
    }
    if (ins.keyword === 'copy')
      for (const flag of flagsOf(ins.rest).flags) if (flag.startsWith('--from=')) names.add(flag.slice('--from='.length));
  }
  return [...names];
}

/** The Dockerfile `text` (read from `file`) with every step confined (see the module comment). */
export function confineDockerfile(text: string, file: string, images: ReadonlyMap<string, LocalImage>): string {
  const parsed = parseDockerfile(text);
  const out = [...parsed.directives];
  const stageShells = new Map<string, string[]>();
  const continuation = new RegExp(`${parsed.escape.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}[ \\t]*$`);
  let shell = DEFAULT_SHELL;
  let stage: string | undefined;
  let stages = 0;
  const endStage = () => {
    if (stage) stageShells.set(stage, shell);
  };
  for (const ins of parsed.instructions) {
    const refuse = (problem: string) => new InputError({ file, line: ins.line, field: ins.keyword.toUpperCase() }, problem);
    if (continuation.test(ins.text)) throw refuse('the file ends inside a line continuation');
    switch (ins.keyword) {
      case 'from': {
        endStage();
        const words = flagsOf(ins.rest).args.split(/\s+/);
        const image = words[0] ?? '';
        stage = words[1]?.toLowerCase() === 'as' ? words[2]?.toLowerCase() : undefined;
        shell = stageShells.get(image.toLowerCase()) ?? images.get(image)?.shell ?? DEFAULT_SHELL;
        stages++;
        out.push(ins.text);
        break;
      }
      case 'shell': {
        const argv = execForm(ins.rest, () => refuse('SHELL takes a JSON array of strings'));
        if (!argv || argv.length === 0) throw refuse('SHELL takes a JSON array of strings');
        shell = argv;
        out.push(ins.text);
        break;
      }
      case 'run': {
        if (ins.rest.trimStart().startsWith('--'))
          throw refuse(
            'RUN flags (--mount, --network, --security, …) are BuildKit’s; task images are built by the classic builder, without them',
          );
        const argv = execForm(ins.rest, () => refuse('the exec form takes a JSON array of strings')) ?? [...shell, ins.rest.trim()];
        if (argv.length === 0 || (argv.length === shell.length && ins.rest.trim() === '')) {
          out.push(ins.text);
          break;
        }
        // A program without a path: let /bin/sh find it on PATH, as the engine would (after the drop).
        const program = argv[0]!.startsWith('/') ? argv : ['/bin/sh', '-c', 'exec "$@"', 'sh', ...argv];
        out.push(`COPY ${STEP_WRAPPER_CONTEXT_NAME} ${STEP_WRAPPER_PATH}`);
        out.push(`RUN ${JSON.stringify([STEP_WRAPPER_PATH, ...program])}`);
        break;
      }
      case 'onbuild':
        throw refuse('ONBUILD is not allowed: its steps would run in a later build, outside what confines this one');
      case 'add': {
        const { args } = flagsOf(ins.rest);
        const words = execForm(args, () => refuse('the exec form takes a JSON array of strings')) ?? args.split(/\s+/);
        for (const source of words.slice(0, -1))
          if (/[:$]/.test(source))
            throw refuse(
              `ADD ${source}: the engine would fetch it over the host's network (or expand a variable into a URL); put the file in environment/ and COPY it`,
            );
        out.push(ins.text);
        break;
      }
      case 'copy': {
        for (const flag of flagsOf(ins.rest).flags) {
          if (!flag.startsWith('--from=')) continue;
          const from = flag.slice('--from='.length);
          const known = /^\d+$/.test(from) ? Number(from) < stages : stageShells.has(from.toLowerCase()) || images.has(from);
          if (from.includes('$') || !known)
            throw refuse(
              `COPY ${flag}: no earlier stage and no image on this engine is named so (the engine would pull it over the host's network)`,
            );
        }
        out.push(ins.text);
        break;
      }
      default:
        out.push(ins.text);
    }
  }
  return `${out.join('\n')}\n`;
}
