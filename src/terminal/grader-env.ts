/**
 * What a Terminal-Bench task's tests run with, so that the grader's shell, interpreter and
 * test runner load nothing the agent wrote except the files under test.
 *
 * The tests run as the agent's own uid (TERMINAL_UID): a task's tests compile, run and
 * rewrite the agent's files in its working directory, as Harbor's (root) tests do, and a
 * second uid could not. What makes that safe is the order of grading (container.ts):
 *
 * 1. every process of the agent is killed, until none is left (none can come back: nothing
 *    runs as that uid again but the grader);
 * 2. a fresh HOME and TMPDIR are made, which no agent process ever saw;
 * 3. the image's path variables that reach the tests (PYTHONPATH, LD_LIBRARY_PATH…, below)
 *    keep only absolute entries the agent could not write, resolved; the rest are dropped
 *    and named in the verifier's output;
 * 4. the start-up scan (startup-scan.py, run as `python3 -I -S`) removes what the agent put
 *    where the grader looks first — a command in a directory on the grader's PATH, a `.pth`,
 *    sitecustomize/usercustomize, packaging metadata (`pytest11` plugins) or a module named
 *    like one Python tries to import at start-up in a directory on the grader python's path
 *    that the agent could write (the paths an image's `.pth` adds); at the top of the working
 *    directory (first on sys.path for a test.sh's own `python3 -m pytest`) the same names,
 *    their bytecode, and pytest11 metadata; in every git repository the agent could write,
 *    config entries that run a command; it reports all of it as tampering, with what it
 *    planted in its own HOME (not read, and left in place);
 * 5. test.sh runs under `env -i` with an environment that is an allow-list (below): a few
 *    of the image's variables that load nothing, the path variables of step 3, the fixed
 *    PATH, the fresh HOME/TMPDIR, PYTHONNOUSERSITE, and git settings that outrank the
 *    repository's (git-env.ts); the offline uvx runs pytest as `python3 -s -P` (no user
 *    site, no working directory on sys.path);
 * 6. every process is killed again before the reward is read (a test's leftover cannot
 *    rewrite it afterwards).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tampering } from '../verify/harness-paths.ts';
import { gitEnvironment } from './git-env.ts';
import { OFFLINE_BIN, TERMINAL_UID } from './image.ts';

/** Made by root at container start, before the agent's first action: what changed after it is the agent's. */
export const EPISODE_MARKER = '/opt/probe/state/episode-start';
/** The agent's HOME (its tmpfs), where a grader that kept it would have read its start-up files. */
export const AGENT_HOME = '/tmp';
/** The system directories of the grader's PATH, after probe's offline bin. */
const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
export const GRADER_PATH = [OFFLINE_BIN, ...SYSTEM_DIRS].join(':');
/** The PATH of probe's own commands in the container (kill, prepare, read the reward): nothing of the image's. */
export const HARNESS_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
/**
 * The image's variables that reach the tests as the image sets them: names no program reads
 * as a file or code to load, with a value that is a word, not a path (a locale name with a
 * slash is a path to glibc). Everything else the image sets is left out: a task's tests that
 * need a variable set it themselves. NODE_OPTIONS, JAVA_TOOL_OPTIONS, RUBYOPT, PERL5OPT,
 * PYTHONWARNINGS (which imports a warning category's module), PYTHONHOME, BASH_ENV… load code
 * from where their value says, which may be the agent's working directory.
 */
const PLAIN: Record<string, RegExp> = {
  LANG: /^[A-Za-z0-9_.@+-]*$/,
  LANGUAGE: /^[A-Za-z0-9_.@:+-]*$/,
  // A zone name under /usr/share/zoneinfo or a POSIX rule; an absolute path (":/app/tz") is not kept.
  TZ: /^:?(?!\/)(?!.*\.\.)[A-Za-z0-9_.,:+/<>-]*$/,
  TERM: /^[A-Za-z0-9_.+-]*$/,
  COLUMNS: /^\d*$/,
  LINES: /^\d*$/,
  NO_COLOR: /^[A-Za-z0-9]*$/,
  FORCE_COLOR: /^[A-Za-z0-9]*$/,
  CI: /^[A-Za-z0-9]*$/,
  DEBIAN_FRONTEND: /^[A-Za-z]*$/,
  PYTHONUNBUFFERED: /^[A-Za-z0-9]*$/,
  PYTHONIOENCODING: /^[A-Za-z0-9_.:-]*$/,
  PYTHONUTF8: /^[01]?$/,
  PYTHONHASHSEED: /^(random|\d+)?$/,
  PYTHONFAULTHANDLER: /^[A-Za-z0-9]*$/,
};
/** LC_ALL, LC_CTYPE…: locale names, as LANG. */
const LOCALE_CATEGORY = /^LC_[A-Z]+$/;

/**
 * The image's variables whose value is a list of places a runtime loads code or data from,
 * which a task's tests may rely on (a PYTHONPATH into the image's own packages, a JAVA_HOME, a
 * model cache). They reach the tests with only the entries the agent could not write: each
 * absolute entry resolved (links followed) and kept when neither it nor a directory above it
 * is the agent's or writable by it; a relative or empty entry (the tests' working directory,
 * the agent's) and a writable one are dropped, and said so in the verifier's output. The
 * container's root file system is read-only, so what is kept is the image's own.
 */
export const PATH_VARIABLES = [
  'PYTHONPATH',
  'LD_LIBRARY_PATH',
  'JAVA_HOME',
  'CLASSPATH',
  'NODE_PATH',
  'PERL5LIB',
  'GOROOT',
  'GOPATH',
  'CARGO_HOME',
  'RUSTUP_HOME',
  'HF_HOME',
  'NLTK_DATA',
] as const;

/**
 * Bash builtins only (run as the agent's uid, with no `timeout` around it: kill -1 would take
 * its own parent): kill every other process of the uid, and again, until /proc shows none
 * (real, effective or saved uid) — a process forking as it dies is caught by the next round.
 */
export const KILL_EVERY_AGENT_PROCESS = `for ((round = 0; round < 200; round++)); do
  kill -9 -1 2>/dev/null
  left=0
  for f in /proc/[0-9]*/status; do
    p=\${f#/proc/}; p=\${p%/status}
    [ "$p" = "$$" ] && continue
    while read -r key real effective saved rest; do
      if [ "$key" = Uid: ]; then
        if [ "$real" = ${TERMINAL_UID} ] || [ "$effective" = ${TERMINAL_UID} ] || [ "$saved" = ${TERMINAL_UID} ]; then left=$((left + 1)); fi
        break
      fi
    done 2>/dev/null < "$f"
  done
  [ "$left" = 0 ] && { echo none left; exit 0; }
done
echo "$left left"
exit 1
`;

const SCAN = readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'startup-scan.py'), 'utf8');

/** The image's variables, by name (the last of a repeated name wins, as in the engine). */
function variables(imageEnv: readonly string[]): Map<string, string> {
  const vars = new Map<string, string>();
  for (const entry of imageEnv) {
    const at = entry.indexOf('=');
    if (at > 0) vars.set(entry.slice(0, at), entry.slice(at + 1));
  }
  return vars;
}

function plain(name: string, value: string): boolean {
  const shape = PLAIN[name] ?? (LOCALE_CATEGORY.test(name) ? PLAIN.LANG : undefined);
  return shape?.test(value) === true;
}

/** The image's path variables (PATH_VARIABLES) to check in the container; one holding a newline is not. */
export function imagePathVariables(imageEnv: readonly string[]): Record<string, string> {
  const vars = variables(imageEnv);
  const found: Record<string, string> = {};
  for (const name of PATH_VARIABLES) {
    const value = vars.get(name);
    if (value !== undefined && !value.includes('\n')) found[name] = value;
  }
  return found;
}

/** The environment test.sh runs with: the allow-listed image variables, the checked path variables, then probe's fixed part. */
export function graderEnvironment(imageEnv: readonly string[], ready: Preparation): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of variables(imageEnv)) if (plain(name, value)) kept[name] = value;
  for (const [name, value] of Object.entries(ready.pathVariables)) if (value !== '') kept[name] = value;
  return {
    LANG: 'C.UTF-8',
    ...kept,
    ...gitEnvironment(),
    PATH: ready.path,
    HOME: ready.home,
    TMPDIR: ready.tmp,
    USER: 'agent',
    LOGNAME: 'agent',
    PYTHONNOUSERSITE: '1',
    PYTHONDONTWRITEBYTECODE: '1',
  };
}

/** What of the image's environment did not reach the tests, in lines for the verifier's output. */
export function environmentNotes(imageEnv: readonly string[], ready: Preparation): string[] {
  const checked = new Set(Object.keys(ready.pathVariables));
  const left = [...variables(imageEnv)]
    .filter(([name, value]) => name !== 'PATH' && !plain(name, value) && !checked.has(name))
    .map(([name]) => name);
  return [
    ...(left.length ? [`probe: the image's ${left.join(', ')} did not reach the tests (not on the allow-list)`] : []),
    ...ready.dropped.map((d) => `probe: ${d}`),
  ];
}

/**
 * Bash, run as the agent's uid once none of its processes is left: makes the fresh HOME and
 * TMPDIR, keeps the path variables' entries the agent could not write, picks a python3 the
 * agent could not have touched, and runs the start-up scan with it. Prints `HOME=…`,
 * `TMPDIR=…`, `PATHVAR NAME=…` and `DROPPED …` lines, and the scan's JSON line (or `SCAN=none`).
 */
export function prepareGrading(
  workdir: string,
  pathVariables: Record<string, string>,
  writable: readonly string[],
): { script: string; env: Record<string, string> } {
  const script = `set -u
controlled() {
  local p q
  p=$(cd -P -- "$1" 2>/dev/null && pwd -P) || return 1
  while :; do
    if [ -O "$p" ] || [ -w "$p" ]; then return 0; fi
    [ "$p" = / ] && return 1
    q=\${p%/*}; q=\${q:-/}
    if [ -O "$q" ]; then return 0; fi
    if [ -w "$q" ] && ! [ -k "$q" ]; then return 0; fi
    p=$q
  done
}
# Whether the agent could write the path, put another thing in its place, or create it (links followed).
could_write() {
  local p
  p=$(readlink -m -- "$1" 2>/dev/null) && [ -n "$p" ] || return 0
  if [ -e "$p" ]; then
    if [ -O "$p" ] || [ -w "$p" ]; then return 0; fi
    [ -d "$p" ] || { p=\${p%/*}; p=\${p:-/}; }
    controlled "$p"
    return
  fi
  while ! [ -e "$p" ]; do p=\${p%/*}; p=\${p:-/}; done
  [ -O "$p" ] || [ -w "$p" ] || controlled "$p"
}
home=$(mktemp -d /tmp/.probe-grader-home.XXXXXXXXXX) && tmp=$(mktemp -d /tmp/.probe-grader-tmp.XXXXXXXXXX) || { echo "cannot make the grader's HOME and TMPDIR in /tmp"; exit 3; }
echo "HOME=$home"
echo "TMPDIR=$tmp"
export PROBE_GRADER_HOME=$home PROBE_GRADER_TMP=$tmp PROBE_PYTHONPATH=
for name in $PROBE_VARS; do
  var=PROBE_VAR_$name
  kept=
  IFS=: read -r -a entries <<< "\${!var}"
  for e in "\${entries[@]}"; do
    # CLASSPATH's "dir/*" names the jars in dir.
    wild=; base=$e
    case "$e" in */\\*) wild=/*; base=\${e%/\\*} ;; esac
    if [ -z "$base" ]; then why="an empty entry (the tests' working directory, the agent's)"
    elif [ "\${base#/}" = "$base" ]; then why="a relative entry (resolved against the tests' working directory, the agent's)"
    elif could_write "$base"; then why="the agent could write it"
    else kept=\${kept:+$kept:}$(readlink -m -- "$base")$wild; continue
    fi
    echo "DROPPED $name entry '$e' left out: $why"
  done
  echo "PATHVAR $name=$kept"
  [ "$name" = PYTHONPATH ] && PROBE_PYTHONPATH=$kept
done
scanner=
IFS=: read -r -a dirs <<< "$PROBE_PATH"
for d in "\${dirs[@]}"; do
  if [ -x "$d/python3" ] && ! [ -O "$d/python3" ] && ! [ -w "$d/python3" ] && ! controlled "$d"; then scanner=$d/python3; break; fi
done
if [ -z "$scanner" ]; then
  # No python3 to scan with: the PATH directories the agent could write are left out instead.
  safe=
  for d in "\${dirs[@]}"; do controlled "$d" || safe=\${safe:+$safe:}$d; done
  echo "SCAN=none"
  echo "SAFEPATH=$safe"
  exit 0
fi
cd / && exec "$scanner" -I -S -c "$PROBE_SCAN"
`;
  const names = Object.keys(pathVariables);
  return {
    script,
    env: {
      PATH: HARNESS_PATH,
      LANG: 'C.UTF-8',
      PROBE_SCAN: SCAN,
      PROBE_MARKER: EPISODE_MARKER,
      PROBE_PATH: GRADER_PATH,
      PROBE_AGENT_HOME: AGENT_HOME,
      PROBE_WORKDIR: workdir,
      PROBE_WRITABLE: writable.join(':'),
      PROBE_VARS: names.join(' '),
      ...Object.fromEntries(names.map((name) => [`PROBE_VAR_${name}`, pathVariables[name]!])),
    },
  };
}

export interface Preparation {
  home: string;
  tmp: string;
  /** What the agent planted where the grader looks (removed unless the grader never reads it). */
  tampering: Tampering[];
  /** Planted files the scan could not remove: the tests would load them, so the episode is not graded. */
  unremoved: string[];
  /** The PATH to grade with (the fixed one, or without the agent-writable directories when there was no scan). */
  path: string;
  /** The image's path variables with only the entries the agent could not write (empty: none left). */
  pathVariables: Record<string, string>;
  /** Each entry of them left out, and why. */
  dropped: string[];
}

/** Reads prepareGrading's output; null when it did not get as far as the fresh directories. */
export function readPreparation(output: string): Preparation | null {
  const lines = output.split('\n');
  const value = (key: string) => lines.find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1);
  const home = value('HOME');
  const tmp = value('TMPDIR');
  if (!home || !tmp) return null;
  const pathVariables: Record<string, string> = {};
  for (const line of lines) {
    const m = /^PATHVAR ([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m && (PATH_VARIABLES as readonly string[]).includes(m[1]!)) pathVariables[m[1]!] = m[2]!;
  }
  const dropped = lines.filter((l) => l.startsWith('DROPPED ')).map((l) => l.slice('DROPPED '.length));
  const checked = { home, tmp, pathVariables, dropped };
  if (value('SCAN') === 'none') return { ...checked, tampering: [], unremoved: [], path: value('SAFEPATH') || OFFLINE_BIN };
  const json = lines.find((l) => l.startsWith('{"tampering"'));
  if (!json) return null;
  let scan: { tampering: Array<Tampering & { removed: boolean | null }> };
  try {
    scan = JSON.parse(json);
  } catch {
    return null;
  }
  return {
    ...checked,
    tampering: scan.tampering.map(({ path, reason }) => ({ path, reason })),
    unremoved: scan.tampering.filter((t) => t.removed === false).map((t) => t.path),
    path: GRADER_PATH,
  };
}
