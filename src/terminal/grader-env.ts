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
 * 3. the start-up scan (startup-scan.py, run as `python3 -I -S`) removes what the agent put
 *    where the grader looks first — a command in a directory on the grader's PATH, a `.pth`,
 *    sitecustomize/usercustomize, packaging metadata (`pytest11` plugins) or a module
 *    shadowing the runner or the standard library in a directory on the grader python's
 *    path — in any such directory the agent could write; at the top of the working directory
 *    (first on sys.path for a test.sh's own `python3 -m pytest`) every module named like one
 *    the runner imports at start-up (probed by running the image's pytest on an empty
 *    directory), its bytecode, and pytest11 metadata; it reports all of it as tampering, with
 *    what it planted in its own HOME (not read, and left in place);
 * 4. test.sh runs under `env -i` with the environment below: the image's variables (the task
 *    author's) less those that make a shell or Python load files (BASH_ENV, ENV,
 *    PYTHONSTARTUP, PYTHONUSERBASE, LD_PRELOAD…), the fixed PATH, the fresh HOME/TMPDIR and
 *    PYTHONNOUSERSITE; the offline uvx runs pytest as `python3 -s -P` (no user site, no
 *    working directory on sys.path);
 * 5. every process is killed again before the reward is read (a test's leftover cannot
 *    rewrite it afterwards).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tampering } from '../verify/harness-paths.ts';
import { OFFLINE_BIN, TERMINAL_UID } from './image.ts';

/** Made by root at container start, before the agent's first action: what changed after it is the agent's. */
export const EPISODE_MARKER = '/opt/probe/episode-start';
/** The agent's HOME (its tmpfs), where a grader that kept it would have read its start-up files. */
export const AGENT_HOME = '/tmp';
/** The system directories of the grader's PATH, after probe's offline bin. */
const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
export const GRADER_PATH = [OFFLINE_BIN, ...SYSTEM_DIRS].join(':');
/** The PATH of probe's own commands in the container (kill, prepare, read the reward): nothing of the image's. */
export const HARNESS_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
/** The image's variables that make bash, sh, Python or the loader read a file: never passed to the grader. */
const LOADERS =
  /^(PATH|HOME|TMPDIR|TMP|TEMP|PWD|OLDPWD|BASH_ENV|ENV|BASH_FUNC_.*|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|PS4|CDPATH|GLOBIGNORE|PYTHONSTARTUP|PYTHONUSERBASE|PYTHONNOUSERSITE|PYTHONSAFEPATH|PYTHONINSPECT|PYTHONDONTWRITEBYTECODE|LD_PRELOAD|LD_AUDIT|PYTEST_ADDOPTS|PYTEST_PLUGINS|PYTEST_DISABLE_PLUGIN_AUTOLOAD)$/;

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

/** The environment test.sh runs with: the image's (less loaders), then probe's fixed part. */
export function graderEnvironment(imageEnv: readonly string[], home: string, tmp: string): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const entry of imageEnv) {
    const at = entry.indexOf('=');
    if (at <= 0) continue;
    const name = entry.slice(0, at);
    if (!LOADERS.test(name)) kept[name] = entry.slice(at + 1);
  }
  return {
    LANG: 'C.UTF-8',
    ...kept,
    PATH: GRADER_PATH,
    HOME: home,
    TMPDIR: tmp,
    USER: 'agent',
    LOGNAME: 'agent',
    PYTHONNOUSERSITE: '1',
    PYTHONDONTWRITEBYTECODE: '1',
  };
}

/** The image's PYTHONPATH (kept for the tests, so its directories are scanned). */
export function imagePythonPath(imageEnv: readonly string[]): string {
  return imageEnv.find((e) => e.startsWith('PYTHONPATH='))?.slice('PYTHONPATH='.length) ?? '';
}

/**
 * Bash, run as the agent's uid once none of its processes is left: makes the fresh HOME and
 * TMPDIR, picks a python3 the agent could not have touched, and runs the start-up scan with
 * it. Prints `HOME=…`, `TMPDIR=…` and the scan's JSON line (or `SCAN=none`).
 */
export function prepareGrading(workdir: string, pythonPath: string): { script: string; env: Record<string, string> } {
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
home=$(mktemp -d /tmp/.probe-grader-home.XXXXXXXXXX) && tmp=$(mktemp -d /tmp/.probe-grader-tmp.XXXXXXXXXX) || { echo "cannot make the grader's HOME and TMPDIR in /tmp"; exit 3; }
echo "HOME=$home"
echo "TMPDIR=$tmp"
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
  return {
    script,
    env: {
      PATH: HARNESS_PATH,
      LANG: 'C.UTF-8',
      PROBE_SCAN: SCAN,
      PROBE_MARKER: EPISODE_MARKER,
      PROBE_PATH: GRADER_PATH,
      PROBE_PYTHONPATH: pythonPath,
      PROBE_AGENT_HOME: AGENT_HOME,
      PROBE_WORKDIR: workdir,
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
}

/** Reads prepareGrading's output; null when it did not get as far as the fresh directories. */
export function readPreparation(output: string): Preparation | null {
  const lines = output.split('\n');
  const value = (key: string) => lines.find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1);
  const home = value('HOME');
  const tmp = value('TMPDIR');
  if (!home || !tmp) return null;
  if (value('SCAN') === 'none') return { home, tmp, tampering: [], unremoved: [], path: value('SAFEPATH') || OFFLINE_BIN };
  const json = lines.find((l) => l.startsWith('{"tampering"'));
  if (!json) return null;
  let scan: { tampering: Array<Tampering & { removed: boolean | null }> };
  try {
    scan = JSON.parse(json);
  } catch {
    return null;
  }
  return {
    home,
    tmp,
    tampering: scan.tampering.map(({ path, reason }) => ({ path, reason })),
    unremoved: scan.tampering.filter((t) => t.removed === false).map((t) => t.path),
    path: GRADER_PATH,
  };
}
