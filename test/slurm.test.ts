/**
 * probe's Slurm client (src/slurm/) against a real one-node cluster: jobs submitted with
 * sbatch, their states read back with squeue and scontrol (no accounting database), one
 * cancelled with scancel; the user's sbatch options passed through, a bad one a one-line
 * error. The readers of squeue's and scontrol's answers are also tested on odd lines
 * without a cluster.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.ts';
import { runSlurm, SlurmCommandError } from '../src/slurm/command.ts';
import { cancelJob, jobStates, SlurmSubmitError, shellQuote, submitJob } from '../src/slurm/jobs.ts';
import { isFinalState, parseScontrolJob, parseSqueue } from '../src/slurm/state.ts';
import { ControllerPatience } from '../src/slurm/patience.ts';
import { skipWithoutSlurm, waitForEnd, waitForJob } from './helpers/slurm.ts';

describe('reading Slurm answers', () => {
  it('shellQuote gives a shell back every word as it was', () => {
    const words = ['plain', "it's", 'a b', '"q"', '$HOME', '`id`', '\\', '', 'line\nbreak', '*', '%j', '-x'];
    const out = spawnSync('sh', ['-c', `printf '%s\\0' ${words.map(shellQuote).join(' ')}`], { encoding: 'utf8' });
    expect(out.stdout.split('\0').slice(0, -1)).toEqual(words);
  });

  it("squeue's lines: the asked jobs' states and reasons, other jobs ignored, an odd line one error naming squeue", () => {
    const ids = new Set(['7', '8']);
    const states = parseSqueue('7|PENDING|Resources\n8|RUNNING|None\n9|RUNNING|None\n\n', ids);
    expect(Object.fromEntries(states)).toEqual({
      '7': { known: true, state: 'PENDING', reason: 'Resources' },
      '8': { known: true, state: 'RUNNING' },
    });
    // A reason with a `|` of its own stays whole: it is the last field.
    expect(parseSqueue('7|PENDING|odd|reason', ids).get('7')).toEqual({ known: true, state: 'PENDING', reason: 'odd|reason' });
    for (const odd of ['7 RUNNING', '7|running now|x', '|RUNNING|x', '7|\u001b[31mRUNNING|x']) {
      expect(() => parseSqueue(odd, ids)).toThrow(SlurmCommandError);
      expect(() => parseSqueue(odd, ids)).toThrow(/^squeue: unexpected line "[^\n]*"/);
    }
  });

  it("scontrol's line: state, reason and exit code; values with spaces and a look-alike field do not fool it", () => {
    const line =
      'JobId=12 JobName=probe UserId=u(1) Account=a JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 Comment=x JobState=COMPLETED ExitCode=0:0';
    expect(parseScontrolJob(`${line}\n`, '12')).toEqual({
      known: true,
      state: 'FAILED',
      reason: 'NonZeroExitCode',
      exitCode: 3,
      signal: 0,
    });
    expect(parseScontrolJob('JobId=12 JobState=CANCELLED Reason=None ExitCode=0:15', '12')).toEqual({
      known: true,
      state: 'CANCELLED',
      exitCode: 0,
      signal: 15,
    });
    // A job that has not ended has no exit code yet, though scontrol prints 0:0.
    expect(parseScontrolJob('JobId=12 JobState=SUSPENDED Reason=None ExitCode=0:0', '12')).toEqual({ known: true, state: 'SUSPENDED' });
    expect(() => parseScontrolJob('JobId=13 JobState=FAILED', '12')).toThrow(/^scontrol: no line for JobId=12/);
    expect(() => parseScontrolJob('JobId=12 JobName=x', '12')).toThrow(/^scontrol: no JobState in the line for job 12/);
  });
});

describe('a controller that is briefly away', () => {
  it('a Slurm command failing is asked again while failures last at most the limit, then ends the run; other errors are not swallowed', async () => {
    const said: string[] = [];
    const patience = new ControllerPatience(50);
    const away = () => Promise.reject(new SlurmCommandError('squeue', 'slurm_load_jobs error: Socket timed out on send/recv operation'));
    expect(await patience.attempt(away, (l) => said.push(l))).toBeUndefined();
    expect(said[0]).toMatch(
      /^slurm: squeue: slurm_load_jobs error: Socket timed out on send\/recv operation — asking again at the next look/,
    );
    // An answer resets the clock: a later failure is tolerated anew.
    expect(
      await patience.attempt(
        async () => 7,
        () => {},
      ),
    ).toBe(7);
    await new Promise((r) => setTimeout(r, 80));
    expect(await patience.attempt(away, (l) => said.push(l))).toBeUndefined();
    await new Promise((r) => setTimeout(r, 80));
    await expect(patience.attempt(away, () => {})).rejects.toThrow(/^slurm: no answer for 0 s, the last: squeue: slurm_load_jobs error/);
    await expect(
      patience.attempt(
        () => Promise.reject(new Error('a bug')),
        () => {},
      ),
    ).rejects.toThrow('a bug');
  });
});

describe.skipIf(skipWithoutSlurm)('a real Slurm cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'probe-slurm-'));
  const submitted: string[] = [];
  afterAll(async () => {
    await Promise.all(submitted.map((id) => cancelJob(id).catch(() => {})));
    rmSync(dir, { recursive: true, force: true });
  });
  const submit = async (request: Omit<Parameters<typeof submitJob>[0], 'cwd' | 'outputFile'> & { outputFile?: string }) => {
    const id = await submitJob({ cwd: dir, outputFile: `${request.name}.out`, ...request });
    submitted.push(id);
    return id;
  };

  it('a job that exits 0 ends COMPLETED with exit code 0, read from scontrol once squeue no longer lists it', async () => {
    const id = await submit({ name: 'writes', argv: ['sh', '-c', 'echo done > result.txt; echo to-output'] });
    expect(id).toMatch(/^\d+$/);
    expect(await waitForEnd(id)).toEqual({ known: true, state: 'COMPLETED', exitCode: 0, signal: 0 });
    expect((await runSlurm('squeue', ['-h', '-j', id])).stdout.trim()).toBe('');
    expect(readFileSync(join(dir, 'result.txt'), 'utf8')).toBe('done\n');
    expect(readFileSync(join(dir, 'writes.out'), 'utf8')).toBe('to-output\n');
  });

  it('a job that exits 3 ends FAILED with exit code 3', async () => {
    const id = await submit({ name: 'exits-3', argv: ['sh', '-c', 'exit 3'] });
    expect(await waitForEnd(id)).toEqual({ known: true, state: 'FAILED', reason: 'NonZeroExitCode', exitCode: 3, signal: 0 });
  });

  it('a running job cancelled with cancelJob ends CANCELLED; cancelling it again is no error', async () => {
    const id = await submit({ name: 'sleeps', argv: ['sleep', '300'] });
    await waitForJob(id, (s) => s.known && s.state === 'RUNNING', 30_000);
    await cancelJob(id);
    expect(await waitForEnd(id, 30_000)).toMatchObject({ known: true, state: 'CANCELLED' });
    await cancelJob(id);
  });

  it('a job past its --time ends TIMEOUT, one of the ends a watch submits again (the controller enforces the limit, probe only reads it)', async () => {
    const id = await submit({ name: 'overruns', argv: ['sleep', '600'], sbatchArgs: ['--time=1'] });
    // Slurm's smallest limit is a minute; the controller sees it passed within its 30 s check, then signals the job.
    const end = await waitForEnd(id, 240_000);
    expect(end).toMatchObject({ known: true, state: 'TIMEOUT' });
    expect(isFinalState((end as { state: string }).state)).toBe(true);
  }, 250_000);

  it('a job pre-empted by a higher-priority one ends PREEMPTED, not requeued under its id (--no-requeue), and its user options still reach sbatch', async () => {
    // start-slurm.sh's partitions: urgent pre-empts scavenger (debug, where the other tests run, never).
    const victim = await submit({ name: 'preempted', argv: ['sleep', '600'], sbatchArgs: ['--partition=scavenger'] });
    await waitForJob(victim, (s) => s.known && s.state === 'RUNNING', 60_000);
    const urgent = await submit({ name: 'urgent', argv: ['true'], sbatchArgs: ['--partition=urgent', '--exclusive'] });
    expect(await waitForEnd(victim, 120_000)).toMatchObject({ known: true, state: 'PREEMPTED' });
    expect(await waitForEnd(urgent, 120_000)).toMatchObject({ known: true, state: 'COMPLETED', exitCode: 0 });
  }, 250_000);

  it.skipIf(cpus().length < 2)('1-CPU jobs run side by side', async () => {
    const ids = [await submit({ name: 'side-a', argv: ['sleep', '60'] }), await submit({ name: 'side-b', argv: ['sleep', '60'] })];
    const deadline = Date.now() + 30_000;
    let states = await jobStates(ids);
    while (![...states.values()].every((s) => s.known && s.state === 'RUNNING') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      states = await jobStates(ids);
    }
    expect([...states.values()]).toEqual([
      { known: true, state: 'RUNNING' },
      { known: true, state: 'RUNNING' },
    ]);
    await Promise.all(ids.map(cancelJob));
  });

  it("the user's sbatch options reach the job; probe's own name, output and directory win", async () => {
    const id = await submit({
      name: 'passes',
      argv: ['true'],
      sbatchArgs: ['--time=5', '--comment=from-the-user', '--job-name=theirs', '--output=/nonexistent/x'],
    });
    const show = (await runSlurm('scontrol', ['show', 'job', '-o', id])).stdout;
    expect(show).toContain(' TimeLimit=00:05:00 ');
    expect(show).toContain(' Comment=from-the-user ');
    expect(show).toContain(' JobName=passes ');
    expect(show).toContain(` StdOut=${join(dir, 'passes.out')}`);
    expect(show).toContain(` WorkDir=${dir} `);
    // --no-requeue: a pre-empted job ends instead of queueing again under its id.
    expect(show).toContain(' Requeue=0 ');
    expect(await waitForEnd(id)).toMatchObject({ state: 'COMPLETED', exitCode: 0 });
  });

  it("an option sbatch refuses is a SlurmSubmitError (exit 2) of one line with sbatch's words", async () => {
    for (const [option, words] of [
      ['--partition=nope', /invalid partition specified: nope/],
      ['--bogus', /unrecognized option '--bogus'/],
      ['--time=abc', /Invalid --time specification/],
    ] as const) {
      const error = await submit({ name: 'refused', argv: ['true'], sbatchArgs: [option] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SlurmSubmitError);
      expect((error as SlurmSubmitError).exitCode).toBe(2);
      expect((error as Error).message).not.toContain('\n');
      expect((error as Error).message).toMatch(new RegExp(`^sbatch: refused the job with your options ${option}: `));
      expect((error as Error).message).toMatch(words);
    }
  });

  it('options that change what submitting means are refused before anything is submitted', async () => {
    for (const option of ['--array=1-3', '--wait', '-W', '--wrap=true', '--test-only', '--clusters=other', '-M']) {
      await expect(submit({ name: 'refused', argv: ['true'], sbatchArgs: [option] })).rejects.toThrow(InputError);
    }
    await expect(submit({ name: 'refused', argv: ['-x'] })).rejects.toThrow(/must start with a program/);
  });

  it('argv with spaces, quotes and shell characters reaches the job intact; env is added to its environment', async () => {
    const words = ["it's", 'a  b', '"q"', '$HOME', '`id`', '\\', '', 'line\nbreak', '*', '%j'];
    const id = await submit({
      name: 'quoting',
      argv: ['sh', '-c', 'printf "%s\\0" "$@" "$PROBE_SLURM_TEST"', 'sh', ...words],
      env: { PROBE_SLURM_TEST: 'x  y' },
    });
    expect(await waitForEnd(id)).toMatchObject({ state: 'COMPLETED', exitCode: 0 });
    expect(readFileSync(join(dir, 'quoting.out'), 'utf8').split('\0').slice(0, -1)).toEqual([...words, 'x  y']);
  });

  it('an output file whose name holds % and \\ is written under that very name (sbatch would expand %j)', async () => {
    const id = await submit({ name: 'percent', argv: ['echo', 'hi'], outputFile: 'out-%j-\\x.txt' });
    expect(await waitForEnd(id)).toMatchObject({ state: 'COMPLETED' });
    expect(existsSync(join(dir, 'out-%j-\\x.txt'))).toBe(true);
  });

  it('ids the controller does not know are { known: false }; an id that is no number is refused', async () => {
    const id = await submit({ name: 'known', argv: ['true'] });
    await waitForEnd(id);
    const states = await jobStates(['999999990', id, '999999991']);
    expect(states.get('999999990')).toEqual({ known: false });
    expect(states.get('999999991')).toEqual({ known: false });
    expect(states.get(id)).toMatchObject({ known: true, state: 'COMPLETED' });
    expect((await jobStates(['999999990'])).get('999999990')).toEqual({ known: false });
    await expect(jobStates(['1,2'])).rejects.toThrow(InputError);
    await expect(cancelJob('--all')).rejects.toThrow(InputError);
  });
});
