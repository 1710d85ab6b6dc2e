/**
 * Turns a grader's sandbox holding base + the candidate's patch into the tree that is
 * graded: every change grading does not read (harness-paths.ts: all but edits to tracked
 * files and new files inside source packages) is put back as the base has it.
 *
 * Everything in the sandbox is the candidate's: paths are read from git inside the sandbox
 * (a tree just restored, so `.git` is the base's own), travel as hex (file names may hold
 * any byte but NUL and `/`) and go back as NUL-separated bytes on stdin, never through the
 * host's file system or a shell word.
 */
import { ProbeError } from '../errors.ts';
import type { LoadedTask } from '../schema/task.ts';
import { FILE_OUTPUT_CAP, type Sandbox } from '../sandbox/types.ts';
import { baseSet, classifyPath, harnessContext, TAMPERING, type Tampering } from './harness-paths.ts';
import { STDLIB_MODULE_NAMES } from './stdlib-names.ts';
import { repoPathFromBytes, type RepoPath } from './patch-paths.ts';
import { testSettingsChanged, type SettingsFormat } from './runner-settings.ts';

/** The graded tree could not be prepared; the verdict is an error, never a pass. */
export class GradedTreeError extends ProbeError {}

export interface GradedTree {
  /** Left out because a test run loads or reads it: the candidate changed how the tests run. */
  tampering: Tampering[];
  /** Test files the candidate added: left out, since only the task's tests grade. */
  ownTests: string[];
  /** New files outside the source packages that no test run loads (a reproduction script, notes): left out, nothing more. */
  leftOut: string[];
}

/**
 * git that no setting can redirect: literal pathspecs, no replace refs, no system or user
 * config (an image's /etc/gitconfig is the task set's), no hooks, fsmonitor or attributes
 * file. The repository's own config is the base's (restore copies `.git` fresh).
 */
const GIT_ENV = { GIT_LITERAL_PATHSPECS: '1', GIT_NO_REPLACE_OBJECTS: '1', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
const GIT = 'git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.attributesFile=/dev/null';
/** Prints a file (or stdin) as one line of hex. */
const hex = (file = '') => `od -An -v -tx1 ${file} | tr -d ' \\n'; echo`;
/** Config files read for their test sections; a larger one counts as changed. */
const SETTINGS_READ_CAP = 1024 * 1024;

/** Runs a script at the repository's top level; its stdout is the answer, its stderr only shown when it fails. */
async function run(sb: Sandbox, what: string, command: string, env: Record<string, string>, stdin?: Buffer | string): Promise<string> {
  const script = [
    'cd "$(git rev-parse --show-toplevel)" || exit 99',
    'e="$(mktemp)" || exit 98',
    `(\n${command}\n) 2>"$e"; s=$?`,
    '[ "$s" -eq 0 ] || cat "$e"; rm -f "$e"; exit "$s"',
  ].join('\n');
  const r = await sb.exec(script, {
    env: { ...GIT_ENV, ...env },
    timeoutMs: 120_000,
    outputCap: FILE_OUTPUT_CAP,
    ...(stdin === undefined ? {} : { stdin }),
  });
  if (r.exitCode !== 0 || r.timedOut || r.truncated)
    throw new GradedTreeError(`cannot ${what} in the ${sb.provider} sandbox (exit ${r.exitCode}): ${r.output.trim().slice(0, 300)}`);
  return r.output;
}

/** One line of hex: NUL-separated byte strings. */
function nulList(line: string): Buffer[] {
  const bytes = Buffer.from(line.trim(), 'hex');
  const items: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0) {
      items.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  if (start < bytes.length) items.push(bytes.subarray(start));
  return items;
}

/** `git apply --numstat -z` records: "added\tdeleted\tpath", or "added\tdeleted\t" then source and destination. */
function numstatPaths(records: Buffer[]): Buffer[] {
  const paths: Buffer[] = [];
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    const second = record.indexOf(9, record.indexOf(9) + 1);
    const path = record.subarray(second + 1);
    if (path.length > 0) paths.push(path);
    else {
      paths.push(...records.slice(i + 1, i + 3));
      i += 2;
    }
  }
  return paths;
}

/**
 * What the candidate changed against the base — tracked files changed or deleted, and every
 * file its patch writes, ignored ones included (an ignored file is not in `git status`
 * but Python imports it all the same) — and the base's own paths.
 */
async function listTree(sb: Sandbox, baseCommit: string, patch: string): Promise<{ changed: RepoPath[]; base: RepoPath[] }> {
  const out = await run(
    sb,
    "list the candidate's changes",
    [
      'd="$(mktemp -d)" || exit 90',
      'trap \'rm -rf "$d"\' EXIT',
      `${GIT} diff --no-ext-diff --no-renames --name-only -z "$PROBE_BASE" -- > "$d/changed" || exit 91`,
      `if [ -n "$PROBE_HAS_PATCH" ]; then ${GIT} apply --numstat -z - > "$d/written" || exit 92; else : > "$d/written"; fi`,
      `${GIT} ls-tree -r -z --name-only "$PROBE_BASE" > "$d/base" || exit 93`,
      `for f in changed written base; do ${hex('"$d/$f"')}; done`,
    ].join('\n'),
    { PROBE_BASE: baseCommit, PROBE_HAS_PATCH: patch.trim() ? '1' : '' },
    patch.trim() ? patch : undefined,
  );
  const [changed = '', written = '', base = ''] = out.split('\n');
  const unique = new Map<string, RepoPath>();
  for (const bytes of [...nulList(changed), ...numstatPaths(nulList(written))]) {
    const path = repoPathFromBytes(bytes);
    unique.set(path.key, path);
  }
  return { changed: [...unique.values()], base: nulList(base).map(repoPathFromBytes) };
}

/** Whether a settings file's test part differs between the base and the candidate (a link or an unreadable file does). */
async function settingsChanged(sb: Sandbox, baseCommit: string, path: RepoPath, format: SettingsFormat): Promise<boolean> {
  if (path.text.includes('\uFFFD')) return true; // not UTF-8: cannot be named through the environment
  const out = await run(
    sb,
    `read ${path.text}`,
    [
      'if [ -L "$PROBE_PATH" ]; then echo link; exit 0; fi; echo file',
      `if ${GIT} cat-file -e "$PROBE_BASE:$PROBE_PATH" 2>/dev/null; then ${GIT} cat-file blob "$PROBE_BASE:$PROBE_PATH" | head -c ${SETTINGS_READ_CAP + 1} | ${hex()}; else echo -; fi`,
      `if [ -f "$PROBE_PATH" ]; then head -c ${SETTINGS_READ_CAP + 1} -- "$PROBE_PATH" | ${hex()}; elif [ -e "$PROBE_PATH" ]; then echo other; else echo -; fi`,
    ].join('\n'),
    { PROBE_BASE: baseCommit, PROBE_PATH: path.text },
  );
  const [kind, base = '-', candidate = '-'] = out.split('\n');
  if (kind !== 'file' || candidate === 'other') return true;
  const text = (line: string) => (line === '-' ? null : Buffer.from(line, 'hex'));
  const [before, after] = [text(base), text(candidate)];
  if ((before?.length ?? 0) > SETTINGS_READ_CAP || (after?.length ?? 0) > SETTINGS_READ_CAP) return true;
  return testSettingsChanged(format, before?.toString('utf8') ?? null, after?.toString('utf8') ?? null);
}

/**
 * Which of some module names the test run may import from outside the candidate's tree, so
 * that a new module of that name could stand in for it: asked of the task's own Python in
 * isolated mode without `site` (no `.pth`, no sitecustomize, the repository off its path:
 * nothing the candidate wrote runs). A name is taken when it is
 *
 * - a standard-library module of any platform (`sys.stdlib_module_names`, and probe's copy
 *   of CPython 3.11's for older Pythons): `msvcrt` fails to import on Linux, yet
 *   `subprocess` tries it;
 * - one the runner tries to import while it starts, failed attempts included (`copy` tries
 *   `org`): recorded by a finder put first on `sys.meta_path` while pytest collects an empty
 *   directory of its own;
 * - built in, or found on the path outside the repository (site-packages).
 *
 * The first three depend on the sandbox's Python alone, not on the state graded, so they are
 * asked once per grader's sandbox (STARTUP_NAMES); the last for the names at hand (INSTALLED).
 */
const OFF_THE_REPOSITORY = `
import importlib.util, io, os, site, sys, tempfile, contextlib
root = os.path.realpath(os.environ["PROBE_ROOT"]) + os.sep
try:
    extra = site.getsitepackages()
except Exception:
    extra = []
sys.path[:] = [p for p in [q for q in sys.path if q] + extra if not (os.path.realpath(p) + os.sep).startswith(root)]
`;
const STARTUP_NAMES = `${OFF_THE_REPOSITORY}
attempts = {"sitecustomize", "usercustomize"}
class Recorder:
    def find_spec(self, name, path=None, target=None):
        if path is None:
            attempts.add(name.partition(".")[0])
        return None
sys.meta_path.insert(0, Recorder())
empty = tempfile.mkdtemp()
try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        import unittest, doctest
        import pytest
        pytest.main(["-q", "-p", "no:cacheprovider", "--collect-only", empty])
except BaseException:
    pass
finally:
    os.rmdir(empty)
print(*sorted(attempts | set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)), sep="\\n")
`;
const INSTALLED = `${OFF_THE_REPOSITORY}
for name in os.environ["PROBE_NAMES"].split():
    try:
        found = importlib.util.find_spec(name) is not None
    except Exception:
        found = True
    if found:
        print(name)
`;

/** Runs one of the scripts above with the task's Python; its output lines. */
async function askPython(sb: Sandbox, what: string, script: string, names = ''): Promise<string[]> {
  const out = await run(
    sb,
    what,
    [
      'root="$(pwd)"',
      'py="$(command -v python || command -v python3)" || exit 0',
      'cd / && PROBE_ROOT="$root" "$py" -I -S -c "$PROBE_SCRIPT"',
    ].join('\n'),
    { PROBE_NAMES: names, PROBE_SCRIPT: script },
  );
  return out
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** Per grader's sandbox: the standard library's names, the built-in ones and what the runner tries at start-up. */
const startupNames = new WeakMap<Sandbox, Promise<Set<string>>>();

function startupNamesOf(sb: Sandbox): Promise<Set<string>> {
  let names = startupNames.get(sb);
  if (!names) {
    names = askPython(sb, "record what the test runner's start-up imports", STARTUP_NAMES).then(
      (lines) => new Set([...STDLIB_MODULE_NAMES, ...lines]),
    );
    startupNames.set(sb, names);
    names.catch(() => startupNames.delete(sb));
  }
  return names;
}

async function takenNames(sb: Sandbox, names: string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const startup = await startupNamesOf(sb);
  const taken = new Set(names.filter((n) => startup.has(n)));
  const ask = names.filter((n) => !taken.has(n));
  if (ask.length > 0)
    for (const name of await askPython(sb, 'ask Python which modules are installed', INSTALLED, ask.join(' '))) taken.add(name);
  return taken;
}

/**
 * Puts paths back as the base has them: each removed, then the base's ones checked out
 * again. A directory the candidate made that is left empty goes too: an empty `org/` is a
 * namespace package, which Python imports.
 */
async function restorePaths(sb: Sandbox, baseCommit: string, paths: RepoPath[], base: Set<string>): Promise<void> {
  if (paths.length === 0) return;
  const list = (ps: RepoPath[]) => Buffer.concat(ps.map((p) => Buffer.concat([Buffer.from(p.key, 'latin1'), Buffer.from([0])])));
  await run(sb, "drop the candidate's changes that are not graded", 'xargs -0 rm -rf --', {}, list(paths));
  const madeDirs = new Set<string>();
  for (const p of paths)
    for (let dir = p.key.split('/').slice(0, -1); dir.length > 0 && !base.has(dir.join('/')); dir = dir.slice(0, -1))
      madeDirs.add(dir.join('/'));
  if (madeDirs.size > 0) {
    const deepestFirst = [...madeDirs].sort((a, b) => b.split('/').length - a.split('/').length);
    await run(
      sb,
      'remove the directories it left empty',
      'xargs -0 rmdir --ignore-fail-on-non-empty --',
      {},
      list(deepestFirst.map((key) => ({ key, text: key }))),
    );
  }
  const inBase = paths.filter((p) => base.has(p.key));
  if (inBase.length === 0) return;
  await run(
    sb,
    'restore files from the base',
    `${GIT} checkout "$PROBE_BASE" --pathspec-from-file=- --pathspec-file-nul`,
    { PROBE_BASE: baseCommit },
    list(inBase),
  );
}

/** Prepares the graded tree in a sandbox restored to base + `patch`, and says what was left out and why. */
export async function prepareGradedTree(sb: Sandbox, task: LoadedTask, baseCommit: string, patch: string): Promise<GradedTree> {
  if (patch.trim() === '') return { tampering: [], ownTests: [], leftOut: [] };
  const listed = await listTree(sb, baseCommit, patch);
  const base = baseSet(listed.base);
  const ctx = harnessContext(task, base);
  const tampering: Tampering[] = [];
  const dropped: RepoPath[] = [];
  const ownTests: string[] = [];
  const leftOut: string[] = [];
  const named = new Map<string, Array<{ path: RepoPath; graded: boolean }>>();
  const drop = (path: RepoPath, reason: string) => {
    tampering.push({ path: path.text, reason });
    dropped.push(path);
  };
  const leave = (path: RepoPath, into: string[]) => {
    into.push(path.text);
    dropped.push(path);
  };
  for (const path of listed.changed) {
    const verdict = classifyPath(path, ctx);
    switch (verdict.kind) {
      case 'keep':
        break;
      case 'tampering':
        drop(path, verdict.reason);
        break;
      case 'own-test':
        leave(path, ownTests);
        break;
      case 'left-out':
        leave(path, leftOut);
        break;
      case 'settings':
        if (await settingsChanged(sb, baseCommit, path, verdict.format)) drop(path, TAMPERING.settings(path.text.split('/').at(-1)!));
        else if (!verdict.graded) leave(path, leftOut);
        break;
      case 'named':
        named.set(verdict.module, [...(named.get(verdict.module) ?? []), { path, graded: verdict.graded }]);
        break;
    }
  }
  const taken = await takenNames(sb, [...named.keys()]);
  for (const [module, paths] of named)
    for (const { path, graded } of paths) {
      if (taken.has(module)) drop(path, TAMPERING.shadow(module));
      else if (!graded) leave(path, leftOut);
    }
  await restorePaths(sb, baseCommit, dropped, base);
  const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  return { tampering: tampering.sort(byPath), ownTests: ownTests.sort(), leftOut: leftOut.sort() };
}
