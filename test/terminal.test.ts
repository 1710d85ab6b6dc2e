/**
 * Terminal-Bench tasks (issue 17, parts 1–2): Harbor task directories read as published,
 * their images built offline, the Terminus keystrokes profile and the bash profile in a
 * jailed container, solve.sh as the reference prefix, the task's tests as the verifier,
 * and `probe asap --env terminal` end to end on real checkpoints.
 */
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { EMBEDDED_TERMINAL_TASKS } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { client } from '../src/sandbox/docker.ts';
import { LIMITS } from '../src/sandbox/types.ts';
import { sleep } from '../src/util/timeout.ts';
import { findTerminalAction, renderTerminalAction, type TerminalAction } from '../src/terminal/actions.ts';
import { TerminalContainer } from '../src/terminal/container.ts';
import {
  decideTerminal,
  runTerminalAction,
  type TerminalStep,
  terminalBehaviour,
  terminalTranscript,
  writtenStep,
} from '../src/terminal/episode.ts';
import { rebaseDockerfile, terminalImage } from '../src/terminal/image.ts';
import { parseReward } from '../src/terminal/reward.ts';
import { buildTerminalPrefix, replaySteps, type TerminalPrefix } from '../src/terminal/prefix.ts';
import { runTerminal, type TerminalInstance } from '../src/terminal/run.ts';
import { readSolution, solutionSteps } from '../src/terminal/solution.ts';
import { loadTerminalTask, loadTerminalTasks, type TerminalTask } from '../src/terminal/task.ts';
import { checkpointKey } from '../src/swe/store.ts';
import { metricsFromDocument } from '../src/stats/metrics.ts';
import { expectOneLineError, runProbe, runProbeKilledAfter } from './helpers/cli.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { type MemorisedStep, memorisingControl } from './helpers/control.ts';
import { CKPT, tempDir } from './helpers/paths.ts';

const TASKS = EMBEDDED_TERMINAL_TASKS;
const tasks = loadTerminalTasks(TASKS);

/** A writable copy of a shipped task, to break on purpose. */
function taskCopy(id = 'log-error-report'): string {
  const dir = join(tempDir(), id);
  cpSync(join(TASKS, id), dir, { recursive: true });
  return dir;
}

describe('Terminal-Bench task directories', () => {
  it('reads the shipped tasks as Harbor lays them out, with their timeouts and resources', () => {
    expect(tasks.map((t) => t.id)).toEqual(['fix-csv-converter', 'log-error-report', 'recover-lost-commit']);
    const csv = tasks[0]!;
    expect(csv).toMatchObject({ agentTimeoutSec: 600, verifierTimeoutSec: 120, buildTimeoutSec: 600, cpus: 1, memoryMb: 1024 });
    expect(csv.instruction).toMatch(/^\/app\/convert\.py is meant to turn a CSV file/);
    expect(csv.dockerfile).toBe(join(TASKS, 'fix-csv-converter', 'environment', 'Dockerfile'));
    expect(csv.solution).toBe(join(TASKS, 'fix-csv-converter', 'solution', 'solve.sh'));
    // Where task.toml is silent, Harbor's defaults.
    expect(tasks[2]).toMatchObject({ cpus: 1, memoryMb: 2048, allowInternet: true });
  });

  it('names the file and the field of bad input', () => {
    const bad = (edit: (dir: string) => void) => {
      const dir = taskCopy();
      edit(dir);
      try {
        loadTerminalTask(dir);
      } catch (error) {
        expect(error).toBeInstanceOf(InputError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    const toml = (dir: string, text: string) => writeFileSync(join(dir, 'task.toml'), text);
    expect(bad((d) => toml(d, '[agent]\ntimeout_sec = -5\n'))).toMatch(
      /task\.toml: field "agent\.timeout_sec": must be a positive number, not -5/,
    );
    expect(bad((d) => toml(d, '[environment]\nmemory = "lots"\n'))).toMatch(/field "environment\.memory": must look like "2G"/);
    expect(bad((d) => toml(d, '[agent\ntimeout_sec = 1\n'))).toMatch(/task\.toml: not valid TOML/);
    expect(bad((d) => rmSync(join(d, 'instruction.md')))).toMatch(/instruction\.md: missing/);
    expect(bad((d) => rmSync(join(d, 'tests', 'test.sh')))).toMatch(/test\.sh: missing: the task has no verifier/);
    expect(
      bad((d) => {
        rmSync(join(d, 'environment', 'Dockerfile'));
        writeFileSync(join(d, 'environment', 'docker-compose.yaml'), 'services: {}\n');
      }),
    ).toMatch(/docker-compose\.yaml: a compose environment \(several containers\) is not supported/);
    expect(() => loadTerminalTasks(tempDir())).toThrow(/no task directories here/);
  });

  it('rebases a FROM this engine lacks onto the Debian base, keeping build stages and images it has', () => {
    const dockerfile = 'FROM --platform=linux/amd64 golang:1.22 AS build\nRUN go build\nFROM build AS test\nFROM local:1\nWORKDIR /app\n';
    const { text, notes } = rebaseDockerfile(dockerfile, (i) => i === 'local:1', 'probe-base:bookworm');
    expect(text).toBe('FROM probe-base:bookworm AS build\nRUN go build\nFROM build AS test\nFROM local:1\nWORKDIR /app\n');
    expect(notes).toEqual(['FROM golang:1.22 → probe-base:bookworm (no registry here)']);
  });

  it('reads the reward as Harbor writes it: reward.txt, or reward.json', () => {
    expect(parseReward('txt\n1\n')).toBe(1);
    expect(parseReward('txt\n0.5')).toBe(0.5);
    expect(parseReward('txt\n')).toBeNull();
    expect(parseReward('json\n{"reward": 1}')).toBe(1);
    expect(parseReward('json\n{"accuracy": 0.25}')).toBe(0.25);
    // Several metrics (Harbor's multi-reward): solved when every dimension is.
    expect(parseReward('json\n{"correctness": 1, "performance": 1}')).toBe(1);
    expect(parseReward('json\n{"correctness": 1, "performance": 0}')).toBe(0);
    expect(parseReward('json\n{"reward": 1, "performance": 0}')).toBe(1);
    expect(parseReward('json\n{"correctness": "yes"}')).toBeNull();
    expect(parseReward('json\n{}')).toBeNull();
    expect(parseReward('')).toBeNull();
  });
});

describe('solve.sh as reference steps', () => {
  it('splits at complete commands: a heredoc, a loop and a continued line stay whole; comments become thoughts', () => {
    const steps = solutionSteps(
      [
        '#!/bin/bash',
        'set -euo pipefail',
        '# Look first.',
        'ls -la',
        '',
        '# Write the file.',
        "cat > out.txt <<'EOF'",
        'a',
        'EOF',
        'for f in *.txt; do',
        '  wc -l "$f"',
        'done',
        'grep -c x \\',
        '  out.txt',
      ].join('\n'),
    );
    expect(steps).toEqual([
      { thought: 'Look first.', command: 'ls -la' },
      { thought: 'Write the file.', command: "cat > out.txt <<'EOF'\na\nEOF" },
      { thought: 'Step 3 of the reference solution.', command: 'for f in *.txt; do\n  wc -l "$f"\ndone' },
      { thought: 'Step 4 of the reference solution.', command: 'grep -c x \\\n  out.txt' },
    ]);
  });

  it('reads every shipped solution into steps, and refuses a script bash cannot parse', () => {
    expect(tasks.map((t) => readSolution(t.solution!).length)).toEqual([6, 6, 6]);
    const dir = taskCopy();
    writeFileSync(join(dir, 'solution', 'solve.sh'), 'if true; then\n');
    expect(() => readSolution(join(dir, 'solution', 'solve.sh'))).toThrow(/solve\.sh: is not a shell script bash can parse/);
  });
});

describe('terminal actions and recovery', () => {
  it('finds the first action after free thinking, and renders what it parses', () => {
    const keys = findTerminalAction('I list the files.\n<keystrokes duration="2">\nls -la\n</keystrokes> trailing');
    expect(keys).toMatchObject({ ok: true, thought: 'I list the files.', action: { kind: 'keystrokes', keys: 'ls -la\n', duration: 2 } });
    const rendered = renderTerminalAction((keys as { action: TerminalAction }).action);
    expect(findTerminalAction(rendered)).toMatchObject({ ok: true, action: { kind: 'keystrokes', keys: 'ls -la\n', duration: 2 } });
    expect(findTerminalAction('<keystrokes>C-c</keystrokes>')).toMatchObject({ ok: true, action: { keys: 'C-c', duration: 1 } });
    expect(findTerminalAction('<bash>echo a &amp;&amp; echo &lt;b&gt;</bash>')).toMatchObject({
      ok: true,
      action: { kind: 'bash', command: 'echo a && echo <b>' },
    });
    expect(findTerminalAction('Done.\n<submit/>')).toMatchObject({ ok: true, action: { kind: 'submit' } });
    expect(findTerminalAction('<keystrokes duration="999">sleep 1\n</keystrokes>')).toMatchObject({ action: { duration: 60 } });
    expect(findTerminalAction('<keystrokes>ls')).toEqual({ ok: false, complete: false, error: '<keystrokes> is not closed' });
    expect(findTerminalAction('<keystrokes duration="soon">ls\n</keystrokes>')).toMatchObject({ ok: false, complete: true });
    expect(findTerminalAction('just prose')).toMatchObject({ ok: false, complete: false });
  });

  const step = (action: TerminalAction | null, outcome: TerminalStep['outcome']): TerminalStep => ({
    index: 0,
    completion: '',
    finish: 'action',
    tokens: 0,
    action,
    error: null,
    outcome,
    observation: '',
    exitCode: null,
    timedOut: false,
    modelMs: 0,
    envMs: 0,
  });
  const found = (action: TerminalAction) => ({ ok: true as const, action, thought: '', end: 0 });
  const ls: TerminalAction = { kind: 'keystrokes', keys: 'ls\n', duration: 1 };

  it('recovers once per failure kind: a format error (or the other profile tool), a submit before acting, a repeated command', () => {
    const bad = { ok: false as const, complete: true, error: 'x' };
    expect(decideTerminal([], bad, 'terminus')).toMatchObject({ kind: 'hint', outcome: 'format_error' });
    expect(decideTerminal([step(null, 'format_error')], bad, 'terminus')).toMatchObject({ kind: 'end', termination: 'format_error' });
    expect(decideTerminal([], found({ kind: 'bash', command: 'ls' }), 'terminus')).toMatchObject({
      kind: 'hint',
      message: expect.stringMatching(/Only <keystrokes>/),
    });
    expect(decideTerminal([], found(ls), 'bash')).toMatchObject({ kind: 'hint', message: expect.stringMatching(/Only <bash>/) });
    expect(decideTerminal([], found({ kind: 'submit' }), 'terminus')).toMatchObject({ kind: 'hint', outcome: 'submit_rejected' });
    expect(decideTerminal([step(null, 'submit_rejected')], found({ kind: 'submit' }), 'terminus')).toMatchObject({
      termination: 'submitted_unacted',
    });
    expect(decideTerminal([step(ls, 'executed')], found({ kind: 'submit' }), 'terminus')).toMatchObject({ termination: 'submitted' });
    expect(decideTerminal([step(ls, 'executed')], found(ls), 'terminus')).toMatchObject({ kind: 'hint', outcome: 'repeat_suppressed' });
    expect(decideTerminal([step(ls, 'executed'), step(ls, 'repeat_suppressed')], found(ls), 'terminus')).toMatchObject({
      termination: 'repeated_action',
    });
    // Ctrl-C twice, or waiting on a running command, is not a loop.
    const interrupt: TerminalAction = { kind: 'keystrokes', keys: 'C-c', duration: 1 };
    expect(decideTerminal([step(interrupt, 'executed')], found(interrupt), 'terminus')).toEqual({ kind: 'execute', action: interrupt });
  });

  it('reads behaviour from the steps', () => {
    const steps = [
      step(ls, 'executed'),
      step({ kind: 'keystrokes', keys: 'C-c', duration: 1 }, 'executed'),
      step(null, 'format_error'),
      step({ kind: 'submit' }, 'submitted'),
    ];
    expect(terminalBehaviour(steps)).toEqual({ actions: 2, parsable_turns: 0.75, submitted: true, failed_commands: 0, key_presses: 1 });
  });
});

describe.skipIf(skipWithoutDocker)('in the task container (Docker, offline)', () => {
  const images = new Map<string, Awaited<ReturnType<typeof terminalImage>>>();
  const imageOf = async (task: TerminalTask) => {
    if (!images.has(task.id)) images.set(task.id, await terminalImage(client(), task));
    return images.get(task.id)!;
  };

  it('builds each shipped task from its Dockerfile offline, noting the rebased FROM; the untouched task fails its tests, the replayed solution passes them in both profiles', async () => {
    for (const task of tasks) {
      const image = await imageOf(task);
      expect(image.notes).toEqual([expect.stringMatching(/^FROM (debian:bookworm-slim|python:3\.13-slim-bookworm) → probe-base:bookworm/)]);
      const untouched = await TerminalContainer.start(task, image);
      try {
        expect(await untouched.verify(task)).toMatchObject({ reward: 0, resolved: false, reason: 'reward 0' });
      } finally {
        await untouched.close();
      }
      for (const profile of ['terminus', 'bash'] as const) {
        const container = await TerminalContainer.start(task, image);
        try {
          await replaySteps(container, readSolution(task.solution!), profile, 60_000);
          const grade = await container.verify(task);
          expect(grade, `${task.id} ${profile}: ${grade.output}`).toMatchObject({ reward: 1, resolved: true, reason: null });
        } finally {
          await container.close();
        }
      }
    }
  }, 600_000);

  it('jails the model: an unprivileged user with no capability and no network, writing its workdir and /tmp only; a reward it plants is gone before grading', async () => {
    const task = tasks[1]!;
    const container = await TerminalContainer.start(task, await imageOf(task));
    try {
      const facts = await container.runCommand(
        'id -u; grep CapEff /proc/self/status; cat /sys/class/net/*/operstate 2>/dev/null | sort | tr "\\n" " "; echo; touch /app/ok && echo workdir-writable; touch /etc/x 2>&1 | tail -1; mkdir /logs/verifier 2>&1 | tail -1',
        30_000,
      );
      const [uid, capEff, links, workdir, etc, logs] = facts.output.trim().split('\n');
      expect(uid).toBe('61000');
      expect(capEff).toMatch(/^CapEff:\s+0+$/);
      expect(links!.trim()).toBe('unknown'); // loopback only
      expect(workdir).toBe('workdir-writable');
      // The root file system is read-only (writable.ts), for root too.
      expect(etc).toMatch(/Read-only file system/);
      expect(logs).toMatch(/Permission denied/);
      // Offline, the verifiers' uvx runs the image's pytest, and says what it lacks.
      const uvx = await container.runCommand(
        'PATH=/opt/probe/offline-bin:$PATH uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 -w httpx==0.27.2 pytest --ctrf /tmp/c.json --version',
        30_000,
      );
      expect(uvx.output).toMatch(/^probe offline: not installed in the image, so the tests may fail for want of it: httpx==0\.27\.2\n/);
      expect(uvx.output).toMatch(/probe offline: uvx … pytest runs as the image's python3 -m pytest \(pytest 7\.\d+\.\d+\)/);
      expect(uvx.exitCode).toBe(0);
      // A shell left running with a reward-writing loop is killed before grading.
      await container.startShell();
      await container.sendKeys('while true; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.1; done\n', 0.5);
      expect(await container.verify(task)).toMatchObject({ reward: 0, resolved: false });
    } finally {
      await container.close();
    }
  }, 120_000);

  it('types into one persistent shell and shows the screen: state carries over, Ctrl-C interrupts', async () => {
    const task = tasks[1]!;
    const container = await TerminalContainer.start(task, await imageOf(task));
    try {
      await container.sendKeys('cd /usr && export GREETING=hello\n', 0.3);
      const screen = await container.sendKeys('pwd; echo $GREETING\n', 0.5);
      expect(screen).toMatch(/agent@task:\/usr\$ pwd; echo \$GREETING\n\/usr\nhello\nagent@task:\/usr\$$/);
      await container.sendKeys('sleep 300\n', 0.3);
      const interrupted = await container.sendKeys('C-c', 0.3);
      expect(interrupted).toMatch(/sleep 300\n\^C\nagent@task:\/usr\$$/);
      const bash = await runTerminalAction(container, { kind: 'bash', command: 'pwd; exit 3' }, 10_000);
      expect(bash).toEqual({ observation: '/app\n[exit code 3]', exitCode: 3, timedOut: false });
    } finally {
      await container.close();
    }
  }, 120_000);

  it('a fork bomb typed into the shell fills the process cap, and the kill before grading still ends it and puts the cap back', async () => {
    const task = tasks[1]!;
    const container = await TerminalContainer.start(task, await imageOf(task));
    const inspectPids = async () => {
      const filters = { label: [`probe.pid=${process.pid}`, `probe.task=${task.id}`] };
      const [listed] = await client().listContainers({ filters });
      return (await client().getContainer(listed!.Id).inspect()).HostConfig.PidsLimit;
    };
    try {
      await container.startShell();
      // Children sleep; the parent forks until the cap refuses, then sleeps too, holding the shell.
      await container.sendKeys(
        `perl -e 'while (1) { my $p = fork; last unless defined $p; if (!$p) { sleep 600; exit } } sleep 600'\n`,
        0.3,
      );
      // Full once the engine can start no process in it (however long forking 1,000 takes on a busy host).
      let full = false;
      for (const until = Date.now() + 60_000; !full && Date.now() < until; ) {
        full = (await container.exec('true', { timeoutMs: 10_000 })).exitCode !== 0;
        if (!full) await sleep(500);
      }
      expect(full, 'the engine still starts processes in the container: the bomb never filled it').toBe(true);
      expect(await container.killAll()).toBe(true);
      expect(await inspectPids()).toBe(LIMITS.processes);
      expect(await container.runCommand('echo alive', 10_000)).toEqual({ output: 'alive\n', exitCode: 0, timedOut: false });
    } finally {
      await container.close();
    }
  }, 120_000);

  it('takes the prefix from solve.sh: three steps, recorded once, that leave the tests failing; shortened where the steps would solve the task', async () => {
    const task = tasks[0]!;
    const prefix = await buildTerminalPrefix(task, await imageOf(task), 'terminus', 3, 60_000);
    expect(prefix).toMatchObject({ solutionSteps: 6, shortened: null });
    expect(prefix.steps.map((s) => s.thought)).toEqual([
      'What is in the working directory?',
      'See the crash.',
      'Read the script around the failing line.',
    ]);
    expect(prefix.steps[1]!.observation).toMatch(/KeyError: 'prise'\nagent@task:\/app\$$/);
    expect(prefix.text).toMatch(/^# Task\n<task>\nYou are working in a Linux terminal\.[\s\S]*\/app\/convert\.py is meant to turn/);
    // A solve.sh whose first steps already solve it: the prefix stops short of that.
    const dir = taskCopy('fix-csv-converter');
    writeFileSync(
      join(dir, 'solution', 'solve.sh'),
      "sed -i 's/prise/price/' /app/convert.py\npython3 /app/convert.py /app/orders.csv > /app/orders.json\nls\nls -la\ncat /app/orders.json\n",
    );
    const early = loadTerminalTask(dir);
    const short = await buildTerminalPrefix(early, await terminalImage(client(), early), 'bash', 3, 60_000);
    expect(short).toMatchObject({ solutionSteps: 5, shortened: 'the tests pass after 2 solution steps' });
    expect(short.steps.map((s) => s.command)).toEqual(["sed -i 's/prise/price/' /app/convert.py"]);
  }, 300_000);

  it('a control that memorised the solution (a real n-gram checkpoint) solves the tasks through the harness, where a rung that never read terminal transcripts solves none', async () => {
    // What it memorised: each remaining solution step after the exact transcript before it, then <submit/>.
    const instances: TerminalInstance[] = [];
    const golds: MemorisedStep[] = [];
    for (const task of tasks) {
      const image = await imageOf(task);
      const prefix: TerminalPrefix = await buildTerminalPrefix(task, image, 'terminus', 3, 60_000);
      instances.push({ task, image, prefix });
      const rest = readSolution(task.solution!).slice(prefix.steps.length);
      const container = await TerminalContainer.start(task, image);
      const steps: Array<{ completion: string; observation: string | null }> = [];
      try {
        await container.startShell();
        await replaySteps(container, prefix.steps, 'terminus', 60_000);
        for (const s of rest) {
          const action = { kind: 'keystrokes' as const, keys: `${s.command}\n`, duration: 1 };
          const completion = writtenStep(s.thought, action);
          golds.push({ context: terminalTranscript(prefix.text, steps), gold: completion });
          steps.push({ completion, observation: (await runTerminalAction(container, action, 60_000)).observation });
        }
      } finally {
        await container.close();
      }
      golds.push({ context: terminalTranscript(prefix.text, steps), gold: 'The task is done.\n<submit/>' });
    }
    const dir = memorisingControl('terminal-control', 'memorised the solutions', golds);
    const options = {
      profile: 'terminus' as const,
      runs: 1,
      seed: 0,
      concurrency: 3,
      maxSteps: 8,
      maxTokens: 768,
      temperature: 0.7,
      topP: 0.95,
      actionTimeoutMs: 60_000,
    };
    const run = async (ckpt: string, maxTokens: number) => {
      const backend = await OnnxBackend.open(ckpt);
      try {
        return await runTerminal(ckpt, backend, instances, { ...options, maxTokens });
      } finally {
        await backend.close();
      }
    };
    const control = await run(dir, 768);
    expect(control.pass_at['1']).toBeGreaterThanOrEqual(2 / 3);
    expect(control.terminations.submitted).toBeGreaterThanOrEqual(2);
    const rung = await run(CKPT.attention, 64);
    expect(rung.pass_at['1']).toBe(0);
  }, 600_000);

  it('probe asap --env terminal runs the shipped tasks on real checkpoints, with transcripts, and resumes to the same results', () => {
    const out = join(tempDir(), 'terminal-run');
    const common = ['asap', '--env', 'terminal', '--ckpt', CKPT.attention, '--runs', '1', '--max-steps', '3', '--max-tokens', '48'];
    const args = [...common, '--no-cache', '--json', '--out', out];
    const first = runProbe(args, {}, 500_000);
    expect(first.code, first.stderr).toBe(0);
    const doc = JSON.parse(first.stdout);
    expect(doc.tasks.map((t: { task: string; prefix_steps: number }) => [t.task, t.prefix_steps])).toEqual([
      ['fix-csv-converter', 3],
      ['log-error-report', 3],
      ['recover-lost-commit', 3],
    ]);
    expect(doc.results[0]).toMatchObject({ checkpoint: CKPT.attention, env: 'terminal', profile: 'terminus', runs: 1, tasks: 3 });
    const transcript = readFileSync(join(out, 'episodes', checkpointKey(CKPT.attention), 'recover-lost-commit', 'run-0.md'), 'utf8');
    expect(transcript).toMatch(
      /^# Task\n<task>\nYou are working in a Linux terminal[\s\S]*<keystrokes duration="1">\ngit reflog\n<\/keystrokes>/,
    );
    expect(transcript).toMatch(/<!-- episode ended: \w+; (RESOLVED|not resolved \(.+\)); reward [\d.]+ -->\n$/);
    const resumed = runProbe([...args, '--resume'], {}, 500_000);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).results).toEqual(doc.results);
    // probe report reads it as terminal episodes, transcripts included, into its JSON and HTML.
    const html = join(out, 'report.html');
    const report = runProbe(['report', out, '--json', '--html', html]);
    expect(report.code, report.stderr).toBe(0);
    const [summary] = JSON.parse(report.stdout).terminal;
    expect(summary).toMatchObject({ checkpoint: CKPT.attention, profile: 'terminus' });
    expect(summary.transcripts['recover-lost-commit']).toEqual([
      join(out, 'episodes', checkpointKey(CKPT.attention), 'recover-lost-commit', 'run-0.md'),
    ]);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('Terminal-Bench episodes');
    expect(page).toContain('git reflog');
  }, 600_000);
});

describe.skipIf(skipWithoutDocker)('a terminal run killed with SIGKILL', () => {
  it('resumes: finished episodes are read back, the rest run, and the killed run leaves no container behind', async () => {
    const out = join(tempDir(), 'killed');
    const args = ['asap', '--env', 'terminal', '--instances', 'log-error-report', '--ckpt', CKPT.attention, '--runs', '4'];
    const all = [...args, '--max-steps', '2', '--max-tokens', '32', '--no-cache', '--json', '--out', out];
    const samples = join(out, 'terminal', 'samples.jsonl');
    const lines = () => (existsSync(samples) ? readFileSync(samples, 'utf8').split('\n').filter(Boolean) : []);
    // Killed right after its first finished episode was saved.
    const child = runProbeKilledAfter(all, 'terminal/samples.jsonl:1', 500_000);
    const before = lines();
    expect(before).toHaveLength(1);
    const resumed = runProbe([...all, '--resume'], {}, 500_000);
    expect(resumed.code, resumed.stderr).toBe(0);
    const after = lines();
    // What was saved before the kill is kept as it was; each episode is saved once.
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.map((l) => JSON.parse(l).item).sort()).toEqual([
      'log-error-report#0',
      'log-error-report#1',
      'log-error-report#2',
      'log-error-report#3',
    ]);
    expect(JSON.parse(resumed.stdout).results[0].items).toEqual([expect.objectContaining({ task_id: 'log-error-report', n: 4 })]);
    const left = await client().listContainers({ all: true, filters: { label: [`probe.pid=${child.pid}`] } });
    expect(left).toEqual([]);
  }, 900_000);
});

describe('probe correlate', () => {
  it('reads a terminal results file as terminal.pass@k, apart from prefix pass@K and deep research', () => {
    const series = metricsFromDocument({
      env: 'terminal',
      results: [{ checkpoint: 'a', env: 'terminal', pass_at: { '1': 0.25, '2': 0.5 }, items: [{ task_id: 't', n: 4, c: 1 }] }],
    });
    expect(series.map((s) => s.name)).toEqual(['terminal.pass@1', 'terminal.pass@2']);
    expect(series[0]!.aggregate(series[0]!.items.get('a')!)).toBe(0.25);
  });
});

describe('probe asap --env terminal flags', () => {
  it('refuses the editor profile for terminal tasks, and terminus for repository tasks, naming the flag', () => {
    expectOneLineError(
      runProbe(['asap', '--env', 'terminal', '--profile', 'editor', '--ckpt', CKPT.agent]),
      /--profile: with --env terminal the profile is terminus or bash, not editor/,
    );
    expectOneLineError(
      runProbe(['asap', '--profile', 'terminus', '--ckpt', CKPT.agent]),
      /--profile: the terminus profile is for --env terminal/,
    );
  });
});
