/**
 * One Terminal-Bench episode's container, jailed as every sandbox is (sandbox/docker.ts):
 * no network whatever task.toml's allow_internet says, no capability (root included), no
 * new privileges, the task's cpus and memory, a pid limit; every model-driven command runs
 * as the unprivileged TERMINAL_UID, which owns the task's working directory and nothing
 * else the image holds.
 *
 * Two ways to act, one per tool profile:
 * - `terminus`: one persistent shell in a tmux session; keystrokes go in (`send-keys`), and
 *   the screen (`capture-pane`) comes back after the step's duration, as Terminus-2 does;
 * - `bash`: each command a fresh `bash -c` in the working directory (mini-swe-agent style);
 *   every process it leaves is killed when it ends.
 *
 * The container's root file system is read-only, root's included; its working directory,
 * /tmp, /logs and /tests are tmpfs mounts sharing one disk cap (writable.ts), the working
 * directory filled from the image's at start: what the agent writes never reaches the host's
 * disk, and a write past the cap fails in that container alone. /etc/hosts is the one file
 * root may write (an image's ENTRYPOINT routes names through it), a file of probe's on the
 * host that the container's fsize limit caps.
 *
 * Grading (`verify`, in the order grader-env.ts gives its reasons for): every process of the
 * sandbox user killed until none is left, a fresh /logs/verifier made by root with the reward
 * files in it (reward.ts: the tests' uid writes them but cannot chmod or replace them), the
 * task's tests/ copied to the root-owned /tests, a fresh HOME and TMPDIR, the image's path
 * variables checked, what the agent planted where the grader looks removed and reported as
 * tampering, `bash /tests/test.sh` run as the sandbox user under `env -i` with an allow-listed
 * environment within the verifier's timeout, every process killed again, then the reward
 * read. A sample that filled a place to its cap, or whose test.sh could not write its
 * reward, is not graded, and says so. probe's own commands in the container run with a PATH
 * of system directories and none of the image's variables (whose directories the agent may
 * write).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import type Docker from 'dockerode';
import { EnvironmentError, ProbeError } from '../errors.ts';
import { client, dockerAvailable, LABEL, rootOwnedTarOf, sweepLeftovers } from '../sandbox/docker.ts';
import { OutputCapture } from '../sandbox/output-capture.ts';
import { LIMITS } from '../sandbox/types.ts';
import { onShutdown } from '../util/shutdown.ts';
import { boundedTimeout, keptDelay, sleep } from '../util/timeout.ts';
import type { Tampering } from '../verify/harness-paths.ts';
import {
  EPISODE_MARKER,
  environmentNotes,
  graderEnvironment,
  HARNESS_PATH,
  imagePathVariables,
  KILL_EVERY_AGENT_PROCESS,
  prepareGrading,
  readPreparation,
} from './grader-env.ts';
import { TERMINAL_UID, type TerminalImage, WORKDIR_SEED } from './image.ts';
import { failedRewardWrite, FRESH_REWARD_FILES, parseReward, READ_REWARD } from './reward.ts';
import type { TerminalTask } from './task.ts';
import { fullPlaces, PLACES_FREE, type WritableLayout, writableLayout } from './writable.ts';

/** The tmux session, and the size of its screen (what the model sees each step). */
/** How long past its own timeout the host waits for a command before cutting its stream. */
const BACKSTOP_MS = 15_000;
const SESSION = 'agent';
export const SCREEN = { columns: 160, rows: 40 } as const;
const OUTPUT_CAP = 1024 * 1024;
/** Processes over the cap the kill loop may use when the agent's processes fill it. */
const KILL_HEADROOM = 64;
/**
 * `$1` seconds of `$2` as the sandbox user, in an outer shell that then kills every other
 * process of the user (`kill -9 -1` spares the shell itself) with a builtin, which needs no
 * new process. Its own stderr goes to /dev/null so that a killed `timeout` is not reported
 * into the command's output.
 */
const REAPED_COMMAND = 'exec 3>&2 2>/dev/null; timeout -k 5 "$1" bash -c "$2" 2>&3 3>&-; status=$?; kill -9 -1; exit $status';
const USER = `${TERMINAL_UID}:${TERMINAL_UID}`;
/**
 * Every command's environment, the tmux shell's included. No pager: a harness screen stuck
 * in `less` would turn every `git log` of a replayed reference into a wait for `q`.
 */
const SHELL_ENV = {
  HOME: '/tmp',
  USER: 'agent',
  LANG: 'C.UTF-8',
  TERM: 'xterm-256color',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  PYTHONDONTWRITEBYTECODE: '1',
};

export interface CommandResult {
  output: string;
  exitCode: number;
  timedOut: boolean;
}

export interface Grade {
  /** The reward the task's tests wrote (reward.txt, or reward.json's `reward`); null when they wrote none. */
  reward: number | null;
  resolved: boolean;
  /** Why it is not resolved, in a line. */
  reason: string | null;
  /** The end of test.sh's output. */
  output: string;
  /** What the agent planted where the grader's shell, Python or pytest would load it (removed before the tests, or never read). */
  tampering: Tampering[];
}

const live = new Set<TerminalContainer>();
let cleanupInstalled = false;

/** The key names tmux knows that a step may send alone (`C-c`, `Escape`, `Up`…), not as text. */
const KEY_NAME = /^(?:[CM]-[A-Za-z\\[\]]|Escape|Enter|Tab|BSpace|Up|Down|Left|Right|Home|End|PageUp|PageDown)$/;

export class TerminalContainer {
  private closed = false;
  private shellStarted = false;

  private constructor(
    private readonly container: Docker.Container,
    readonly workdir: string,
    private readonly layout: WritableLayout,
    /** The image's variables: blanked in probe's own commands, allow-listed for the tests. */
    private readonly imageEnv: readonly string[],
    /** The host directory holding this container's /etc/hosts, removed with it. */
    private readonly etcDir: string,
  ) {}

  static async start(task: TerminalTask, image: TerminalImage): Promise<TerminalContainer> {
    if (!(await dockerAvailable()))
      throw new EnvironmentError('no Docker engine answers (is dockerd running? scripts/start-dockerd.sh starts one)');
    await sweepLeftovers();
    if (!cleanupInstalled) {
      cleanupInstalled = true;
      onShutdown(async () => {
        await Promise.allSettled([...live].map((c) => c.close()));
      });
    }
    const layout = writableLayout(image.workdir);
    const imageEnv = (await client().getImage(image.tag).inspect()).Config.Env ?? [];
    const etcDir = writableHosts();
    const container = await client()
      .createContainer({
        Image: image.tag,
        Cmd: ['sleep', 'infinity'],
        // One host name for every container: the prompt the screen shows is the same in every episode.
        Hostname: 'task',
        User: '0:0',
        WorkingDir: image.workdir,
        NetworkDisabled: true,
        Labels: { [LABEL]: '1', 'probe.pid': String(process.pid), 'probe.task': task.id },
        HostConfig: {
          NetworkMode: 'none',
          // The task's memory for its processes, and the writable places' pages on top (writable.ts).
          Memory: task.memoryMb * 2 ** 20 + layout.bytes,
          NanoCpus: Math.round(task.cpus * 1e9),
          PidsLimit: LIMITS.processes,
          Init: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          // Processes are bounded per container (PidsLimit), not by RLIMIT_NPROC: every terminal
          // container's user is the same uid, and NPROC counts a uid across containers, so a
          // fork bomb in one episode would starve the others.
          Ulimits: [
            { Name: 'fsize', Soft: LIMITS.fileBytes, Hard: LIMITS.fileBytes },
            { Name: 'core', Soft: 0, Hard: 0 },
          ],
          ReadonlyRootfs: true,
          Tmpfs: layout.tmpfs,
          ShmSize: layout.shmBytes,
          // A task's ENTRYPOINT may route names to a local server through /etc/hosts, as Harbor's images do
          // (dns-blacklisting): root can write this one file, on the host, grown at most to fsize.
          Binds: [`${join(etcDir, 'hosts')}:/etc/hosts:rw`],
        },
      })
      .catch((error: Error) => {
        rmSync(etcDir, { recursive: true, force: true });
        throw new ProbeError(`cannot create a container from image ${image.tag}: ${error.message}`, { cause: error });
      });
    const sandbox = new TerminalContainer(container, image.workdir, layout, imageEnv, etcDir);
    live.add(sandbox);
    try {
      await container.start();
      if (layout.workdirBytes > 0) await sandbox.fillWorkdir();
      // Before any command of the agent: what changes after it (its ctime, which no one can set back) is the agent's.
      const marked = await sandbox.exec(`touch ${EPISODE_MARKER}`, { timeoutMs: 30_000, root: true, clean: { PATH: HARNESS_PATH } });
      if (marked.exitCode !== 0) throw new ProbeError(`cannot mark the episode's start: ${marked.output.trim().slice(0, 300)}`);
    } catch (error) {
      await sandbox.close();
      throw new ProbeError(`cannot start task ${task.id}'s container: ${(error as Error).message}`, { cause: error });
    }
    return sandbox;
  }

  /**
   * A command as the sandbox user (or capability-less root), its output interleaved and capped.
   * `clean`: exactly this environment (`env -i`), none of the image's; `bare`: no `timeout`
   * process around it (the kill loop must not kill its own parent); `input`: makes its
   * standard input, once the command is there to read it (Node discards what a finished child
   * process wrote to a pipe nobody reads yet, so a tar's output cannot be made beforehand);
   * `args`: the script's positional parameters ($1, $2, …).
   */
  async exec(
    command: string,
    options: {
      timeoutMs: number;
      root?: boolean;
      env?: Record<string, string>;
      clean?: Record<string, string>;
      bare?: boolean;
      input?: () => Readable;
      args?: string[];
    },
  ): Promise<CommandResult> {
    if (this.closed) throw new ProbeError('the terminal sandbox is closed');
    keptDelay(options.timeoutMs + BACKSTOP_MS); // refused before the command starts, not after
    const seconds = Math.max(1, Math.ceil(options.timeoutMs / 1000));
    const script = `exec 2>&1\n${command}`;
    const limit = options.bare ? [] : ['timeout', '-k', '5', String(seconds)];
    const pairs = (env: Record<string, string>) => Object.entries(env).map(([k, v]) => `${k}=${v}`);
    const args = options.args ? ['bash', ...options.args] : [];
    const exec = await this.container.exec({
      // A clean command's own programs are found on the harness PATH (docker resolves the first from the
      // exec's environment), and bash by its path, before `env -i` leaves only what the caller gave.
      Cmd: options.clean
        ? [...limit, 'env', '-i', ...pairs(options.clean), '/bin/bash', '-c', script, ...args]
        : [...limit, 'bash', '-c', script, ...args],
      User: options.root ? '0:0' : USER,
      WorkingDir: this.workdir,
      Env: options.clean ? this.harnessEnv() : pairs({ ...SHELL_ENV, ...options.env }),
      AttachStdin: options.input !== undefined,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: true, stdin: options.input !== undefined })) as Duplex;
    const output = new OutputCapture(OUTPUT_CAP);
    this.container.modem.demuxStream(stream, output, output);
    const cut = await new Promise<boolean>((resolve) => {
      const backstop = boundedTimeout(() => {
        stream.destroy();
        resolve(true);
      }, options.timeoutMs + BACKSTOP_MS);
      const done = () => {
        clearTimeout(backstop);
        resolve(false);
      };
      stream.on('end', done);
      stream.on('close', done);
      stream.on('error', done);
      // Its end closes the command's standard input (a half-close: the output still comes back).
      options
        .input?.()
        .on('error', () => stream.end())
        .pipe(stream);
    });
    const exitCode = cut ? 124 : ((await exec.inspect()).ExitCode ?? 1);
    const text = output.bytes().toString('utf8');
    return {
      output: output.truncated ? `${text}\n[... output truncated at ${OUTPUT_CAP} bytes ...]` : text,
      exitCode,
      timedOut: cut || exitCode === 124 || exitCode === 137,
    };
  }

  /**
   * The engine's environment for a clean command: docker starts `timeout` and `env` with the
   * image's variables under the exec's, so every one of them is set empty here (an image's
   * LD_PRELOAD or LD_LIBRARY_PATH into the working directory would load the agent's library
   * into probe's own processes, root's included), and PATH is the harness's.
   */
  private harnessEnv(): string[] {
    const names = new Set(this.imageEnv.map((e) => e.slice(0, e.indexOf('='))).filter((n) => n !== '' && n !== 'PATH'));
    return [...[...names].map((n) => `${n}=`), `PATH=${HARNESS_PATH}`];
  }

  /** Fills the tmpfs working directory from the image's (WORKDIR_SEED), as the sandbox user, so that all of it is the user's as before. */
  private async fillWorkdir(): Promise<void> {
    const filled = await this.exec(`tar -xpf ${WORKDIR_SEED} -C "$PROBE_WORKDIR" --no-same-owner`, {
      timeoutMs: 300_000,
      clean: { PATH: HARNESS_PATH, PROBE_WORKDIR: this.workdir },
    });
    if (filled.exitCode !== 0)
      throw new ProbeError(
        `cannot fill the working directory ${this.workdir} from the image (is it larger than its share of the disk cap, ${Math.round(this.layout.workdirBytes / 2 ** 20)} MiB?): ${filled.output.trim().slice(0, 300)}`,
      );
  }

  /** The places filled to their cap (writable.ts), each named with its size. */
  private async fullPlaces(places: readonly string[]): Promise<string[]> {
    const r = await this.exec(PLACES_FREE, { timeoutMs: 30_000, clean: { PATH: HARNESS_PATH, PROBE_PLACES: places.join(':') } });
    return fullPlaces(r.output);
  }

  /**
   * `bash` profile: one command in a fresh shell; nothing it started outlives it. The shell
   * around it kills what it left before this returns: a command that filled the container's
   * process cap leaves no room for the engine to start another exec (runc's init needs
   * several), so the kill must come from a process that already runs. The kill loop after it
   * catches what forked as it died.
   */
  async runCommand(command: string, timeoutMs: number): Promise<CommandResult> {
    const seconds = String(Math.max(1, Math.ceil(timeoutMs / 1000)));
    const result = await this.exec(REAPED_COMMAND, { timeoutMs, bare: true, args: [seconds, command] });
    await this.killAll();
    return result;
  }

  /** `terminus` profile: the persistent shell, started once. */
  async startShell(): Promise<void> {
    if (this.shellStarted) return;
    const r = await this.exec(
      `tmux new-session -d -s ${SESSION} -x ${SCREEN.columns} -y ${SCREEN.rows} && tmux set-option -t ${SESSION} history-limit 10000 >/dev/null`,
      { timeoutMs: 30_000 },
    );
    if (r.exitCode !== 0) throw new ProbeError(`cannot start the tmux session in the terminal sandbox: ${r.output.trim().slice(0, 300)}`);
    this.shellStarted = true;
  }

  /**
   * Sends keystrokes to the shell — text as typed (a newline is Enter), or one tmux key
   * name alone (`C-c`) — waits `durationS`, and returns the screen.
   */
  async sendKeys(keys: string, durationS: number): Promise<string> {
    await this.startShell();
    const named = KEY_NAME.test(keys.trim());
    const send = named ? `tmux send-keys -t ${SESSION} "$PROBE_KEYS"` : `tmux send-keys -t ${SESSION} -l -- "$PROBE_KEYS"`;
    const sent = await this.exec(send, { timeoutMs: 10_000, env: { PROBE_KEYS: named ? keys.trim() : keys } });
    if (sent.exitCode !== 0) throw new ProbeError(`tmux send-keys failed in the terminal sandbox: ${sent.output.trim().slice(0, 300)}`);
    await sleep(durationS * 1000);
    return this.screen();
  }

  /**
   * Replays a reference step: types the command and Enter, then waits until the shell is
   * idle again (its foreground command is the shell), at most `timeoutMs`; the screen.
   */
  async typeCommand(command: string, timeoutMs: number): Promise<string> {
    await this.sendKeys(`${command}\n`, 0.3);
    const until = performance.now() + timeoutMs;
    while (performance.now() < until) {
      const r = await this.exec(`tmux display-message -p -t ${SESSION} '#{pane_current_command}'`, { timeoutMs: 10_000 });
      if (r.exitCode !== 0 || /^(ba|da|z|)sh$/.test(r.output.trim())) break;
      await sleep(200);
    }
    return this.screen();
  }

  /** The visible screen, trailing blank lines dropped. */
  async screen(): Promise<string> {
    const r = await this.exec(`tmux capture-pane -p -t ${SESSION}`, { timeoutMs: 10_000 });
    if (r.exitCode !== 0) return `[the shell is gone: ${r.output.trim().slice(0, 200)}]`;
    return r.output.replace(/\s+$/, '');
  }

  /**
   * Kills every process of the sandbox user (the shell and whatever it started), again and
   * again until /proc shows none (a process forking as it dies is caught by the next round).
   * Whether none is left.
   */
  async killAll(): Promise<boolean> {
    if (await this.killLoop()) return true;
    // Processes that filled the container's cap (a fork bomb in the tmux shell) leave the
    // engine no room to start the loop at all (runc's init needs several): it gets headroom
    // while it runs, and the cap is put back whatever happened.
    await this.container.update({ PidsLimit: LIMITS.processes + KILL_HEADROOM });
    try {
      return await this.killLoop();
    } finally {
      await this.container.update({ PidsLimit: LIMITS.processes });
    }
  }

  private async killLoop(): Promise<boolean> {
    const r = await this.exec(KILL_EVERY_AGENT_PROCESS, { timeoutMs: 60_000, bare: true, clean: { PATH: HARNESS_PATH } });
    this.shellStarted = false;
    return r.exitCode === 0 && r.output.includes('none left');
  }

  /** Runs the task's tests against the container as the episode left it. */
  async verify(task: TerminalTask): Promise<Grade> {
    const ungraded = (reason: string, tampering: Tampering[] = [], output = ''): Grade => ({
      reward: null,
      resolved: false,
      reason,
      output,
      tampering,
    });
    if (!(await this.killAll())) return ungraded('a process of the agent outlived every kill, so the tests were not run');
    // A place the agent filled to its cap: the tests would run on a full disk (writable.ts).
    const filled = await this.fullPlaces(this.layout.agentTrees);
    if (filled.length) return ungraded(`the agent filled its disk cap: ${filled.join(', ')} left no room`);
    const harness = { PATH: HARNESS_PATH };
    const fresh = await this.exec(`rm -rf /tests/* /tests/.[!.]* && ${FRESH_REWARD_FILES}`, {
      timeoutMs: 30_000,
      root: true,
      clean: harness,
    });
    if (fresh.exitCode !== 0) throw new ProbeError(`cannot prepare /logs/verifier for grading: ${fresh.output.trim().slice(0, 300)}`);
    // /tests is root's: the sandbox user cannot have planted anything there. (The engine copies nothing into a read-only root: tar does.)
    const copied = await this.exec('tar -xf - -C /tests --no-same-owner', {
      timeoutMs: 300_000,
      root: true,
      clean: harness,
      input: () => rootOwnedTarOf(task.testsDir),
    });
    if (copied.exitCode !== 0)
      throw new ProbeError(`cannot copy task ${task.id}'s tests into /tests: ${copied.output.trim().slice(0, 300)}`);
    const prepare = prepareGrading(this.workdir, imagePathVariables(this.imageEnv), this.layout.agentTrees);
    const prepared = await this.exec(prepare.script, { timeoutMs: 120_000, clean: prepare.env });
    const ready = readPreparation(prepared.output);
    // The agent can make this fail (a full /tmp): its episode is not graded, the run goes on.
    if (!ready)
      return ungraded(`the grading could not be prepared: ${prepared.output.trim().split('\n').slice(-3).join(' ').slice(0, 300)}`);
    if (ready.unremoved.length)
      return ungraded(
        `planted start-up files could not be removed, so the tests were not run: ${ready.unremoved.join(', ')}`,
        ready.tampering,
      );
    const ran = await this.exec('bash /tests/test.sh', {
      timeoutMs: task.verifierTimeoutSec * 1000,
      clean: graderEnvironment(this.imageEnv, ready),
    });
    // What the tests left running (the agent's program among them) must not rewrite the reward now.
    if (!(await this.killAll()))
      return ungraded('a process started by the tests outlived every kill, so the reward was not read', ready.tampering);
    const output = [...environmentNotes(this.imageEnv, ready), ...ran.output.trim().split('\n').slice(-30)].join('\n');
    const failedWrite = failedRewardWrite(ran.output);
    if (failedWrite) return ungraded(`test.sh could not write its reward: ${failedWrite}`, ready.tampering, output);
    const full = await this.fullPlaces(this.layout.fillable);
    if (full.length) return ungraded(`the disk cap was met while the tests ran: ${full.join(', ')} left no room`, ready.tampering, output);
    const read = await this.exec(READ_REWARD, { timeoutMs: 10_000, clean: harness });
    const reward = parseReward(read.output);
    const why =
      reward === null
        ? ran.timedOut
          ? `the tests ran past the verifier's timeout_sec (${task.verifierTimeoutSec} s) and wrote no reward`
          : `the tests wrote no reward file (test.sh exited ${ran.exitCode})`
        : reward >= 1
          ? null
          : `reward ${reward}`;
    return { reward, resolved: reward !== null && reward >= 1, reason: why, output, tampering: ready.tampering };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    live.delete(this);
    await this.container.remove({ force: true }).catch(() => {});
    rmSync(this.etcDir, { recursive: true, force: true });
  }
}

/** What Docker writes into a container's /etc/hosts with no network: loopback names only. */
const HOSTS = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\ttask\n';

/** A fresh host directory with the hosts file a container mounts (root's, 0644: the sandbox user cannot write it). */
function writableHosts(): string {
  const dir = mkdtempSync(join(tmpdir(), 'probe-etc-'));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'hosts'), HOSTS, { mode: 0o644 });
  return dir;
}
