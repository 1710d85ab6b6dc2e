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
 *   ADD from a URL, and FROM or COPY --from an image the engine lacks (the engine itself
 *   would fetch them, over the host's network, and run a FROM image's ONBUILD triggers
 *   first), and either with a `$` the builder would expand.
 * - After every FROM, `ARG NAME` for each setting the build passes that Docker does not
 *   predefine (pip's and npm's indexes: sandbox/build-egress.ts packageBuildArgs), so that
 *   every RUN of the stage sees it. ARG, not ENV: a build arg is in the steps' environment
 *   only, never in the image's, so the task's container does not inherit the build's
 *   mirrors (Docker's own proxy args need no declaration and are not kept either).
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

/** Go's unicode.IsSpace, the set the builder trims a line's start with. */
const GO_SPACE = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const trimLeft = (s: string) => s.replace(new RegExp(`^[${GO_SPACE}]+`, 'u'), '');
const trim = (s: string) => trimLeft(s).replace(new RegExp(`[${GO_SPACE}]+$`, 'u'), '');
/**
 * A parser directive as the builder matches it: RE2's `\s` is `[\t\n\f\r ]` (JavaScript's is
 * wider) and its `.` takes anything but `\n`.
 */
const DIRECTIVE = /^#[\t\n\f\r ]*([a-zA-Z][a-zA-Z0-9]*)[\t\n\f\r ]*=[\t\n\f\r ]*([^\n]+?)[\t\n\f\r ]*$/;
/** The directives the builder knows; the first line that is not one of them ends the directives. */
const DIRECTIVE_NAMES = new Set(['syntax', 'escape', 'check']);
const ESCAPE_TOKENS = new Set(['\\', '`']);

/** The builder's line continuation: the escape token, then only spaces and tabs, at the end of a line. */
export function continuationOf(token: string): RegExp {
  return new RegExp(`${token.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}[ \\t]*$`);
}

/**
 * Instructions as the classic builder's parser reads them (moby/buildkit
 * frontend/dockerfile/parser, Parse and DirectiveParser): lines end at `\n`; directives only
 * in the leading run of `# name=value` lines, which ends at the first line that is not a
 * known one; a continuation skips comment and empty lines. What the builder reads the same
 * only by luck, or reads differently from one engine version to the next, is refused instead
 * (a carriage return that does not end a line; heredocs are refused by confineDockerfile).
 */
export function parseDockerfile(text: string, file = 'Dockerfile'): ParsedDockerfile {
  const lines = text
    .replace(/^\uFEFF/, '')
    .replace(/\r\n/g, '\n')
    .split('\n');
  lines.forEach((line, i) => {
    if (line.includes('\r'))
      throw new InputError(
        { file, line: i + 1 },
        'a carriage return that does not end the line (CR LF): the image builder reads such a line differently from a plain reading (a continuation or not), so it is refused',
      );
  });
  const directives: string[] = [];
  const seen = new Set<string>();
  let escapeToken = '\\';
  let i = 0;
  for (; i < lines.length; i++) {
    const m = DIRECTIVE.exec(trimLeft(lines[i]!));
    const name = m?.[1]?.toLowerCase();
    if (!m || !name || !DIRECTIVE_NAMES.has(name)) break;
    const where = { file, line: i + 1, field: `# ${name}` };
    if (seen.has(name)) throw new InputError(where, `only one ${name} parser directive can be used`);
    seen.add(name);
    if (name === 'escape') {
      if (!ESCAPE_TOKENS.has(m[2]!)) throw new InputError(where, `the escape token is \\ or \`, not ${JSON.stringify(m[2])}`);
      escapeToken = m[2]!;
    }
    directives.push(lines[i]!);
  }
  const continuation = continuationOf(escapeToken);
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
    if (trim(line) === '') continue;
    const [keyword = '', rest = ''] = trim(line).split(/[\t\v\f\r ]+(.*)/s);
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

/** A FROM instruction's parts: its flags, the image (or earlier stage) it names, and the stage it starts, as written. */
export function fromParts(rest: string): { flags: string[]; image: string; stage?: string } {
  const { flags, args } = flagsOf(rest);
  const words = args.split(/\s+/);
  const stage = words[1]?.toLowerCase() === 'as' ? words[2] : undefined;
  return { flags, image: words[0] ?? '', ...(stage ? { stage } : {}) };
}

/** Facts about the images the Dockerfile names that this engine has (FROM and COPY --from). */
export interface LocalImage {
  /** Its SHELL (Config.Shell), where it set one. */
  shell?: string[];
}

/** Images named by FROM and COPY --from, for the caller to look up before `confineDockerfile`. */
export function namedImages(text: string, file: string): string[] {
  const names = new Set<string>();
  for (const ins of parseDockerfile(text, file).instructions) {
    if (ins.keyword === 'from') {
      const { image } = fromParts(ins.rest);
      if (image) names.add(image);
    }
    if (ins.keyword === 'copy')
      for (const flag of flagsOf(ins.rest).flags) if (flag.startsWith('--from=')) names.add(flag.slice('--from='.length));
  }
  return [...names];
}

/** A build arg's name as ARG takes it, with nothing the builder would expand or split. */
const ARG_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The Dockerfile `text` (read from `file`) with every step confined (see the module
 * comment), and `args` (build args the build passes) declared after every FROM.
 */
export function confineDockerfile(
  text: string,
  file: string,
  images: ReadonlyMap<string, LocalImage>,
  args: readonly string[] = [],
): string {
  for (const name of args) if (!ARG_NAME.test(name)) throw new Error(`not a build arg name: ${JSON.stringify(name)}`);
  const parsed = parseDockerfile(text, file);
  // Only the escape directive, always, in the one form every engine reads: what the task's
  // directives meant is in `parsed`, and the builder must read the emitted lines with that token.
  const out = [`# escape=${parsed.escape}`];
  const stageShells = new Map<string, string[]>();
  const continuation = continuationOf(parsed.escape);
  let shell = DEFAULT_SHELL;
  let stage: string | undefined;
  let stages = 0;
  const endStage = () => {
    if (stage) stageShells.set(stage, shell);
  };
  for (const ins of parsed.instructions) {
    const refuse = (problem: string) => new InputError({ file, line: ins.line, field: ins.keyword.toUpperCase() }, problem);
    if (continuation.test(ins.text)) throw refuse('the file ends inside a line continuation');
    if (['add', 'copy', 'run'].includes(ins.keyword) && hasHeredoc(ins))
      throw refuse(
        'heredocs (<<WORD) are not allowed: the classic builder runs no heredoc, and newer parsers would read the lines after it as its body',
      );
    switch (ins.keyword) {
      case 'from': {
        endStage();
        const from = fromParts(ins.rest);
        const image = from.image;
        // An image the engine lacks would be pulled by the builder itself, past probe's registry handling, its ONBUILD
        // triggers run before any step of ours: every FROM is an earlier stage, scratch, or an image the engine has.
        if (!stageShells.has(image.toLowerCase()) && image.toLowerCase() !== 'scratch' && !images.has(image))
          throw refuse(
            `FROM ${image}: no earlier stage and no image on this engine is named so (the builder would pull it over the host's network)`,
          );
        stage = from.stage?.toLowerCase();
        shell = stageShells.get(image.toLowerCase()) ?? images.get(image)?.shell ?? DEFAULT_SHELL;
        stages++;
        out.push(ins.text);
        for (const name of args) out.push(`ARG ${name}`);
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
  const emitted = `${out.join('\n')}\n`;
  requireReadAsEmitted(emitted, out, file);
  return emitted;
}

/**
 * A heredoc as a newer builder's parser would see one (a word `<<NAME`, `<<-NAME`, `2<<NAME`;
 * not bash's `<<<`): the lines after it would be its body, not the instructions they are.
 * ADD and COPY are refused on any `<<`; the exec form of RUN holds none.
 */
function hasHeredoc(ins: Instruction): boolean {
  if (ins.keyword !== 'run') return ins.rest.includes('<<');
  if (ins.rest.trimStart().startsWith('[')) return false;
  return ins.rest.split(/[\t\v\f\r ]+/).some((word) => /^\d*<<-?[^<]*$/.test(word.replace(/^['"]|['"]$/g, '')));
}

/**
 * The emitted file read back must be exactly the emitted lines, one instruction each: no line
 * joins the next (a continuation), none is skipped (a comment, an empty line). The confinement
 * rests on that, not on this module having read the task's file as the builder would: the
 * builder reads only what is emitted here.
 */
function requireReadAsEmitted(emitted: string, lines: string[], file: string): void {
  const back = parseDockerfile(emitted, file);
  const expected = lines.slice(1);
  const same =
    back.directives.length === 1 &&
    back.instructions.length === expected.length &&
    back.instructions.every((ins, k) => ins.text === expected[k] && ins.line === k + 2);
  if (!same)
    throw new InputError(
      { file },
      'the confined Dockerfile would not read back one instruction per line (a construct the image builder would read differently); it is refused',
    );
}
