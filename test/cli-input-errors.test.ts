/**
 * Every input and environment error, through the real bin: exit 2, one line on stderr that
 * names the file, field, flag, path or port, and no stack trace. Each case is one that
 * red-teaming found printing a stack trace or accepted silently (issue 12, point 7).
 */
import { mkdirSync, readFileSync, statSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { EnvironmentError, InputError, ProbeError } from '../src/errors.ts';
import { reportError } from '../src/cli/exit.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { CKPT, DEMO_PROBES, tempDir } from './helpers/paths.ts';

const DEMO = join(REPO_ROOT, 'probes', 'demo.jsonl');
const TASKS = join(REPO_ROOT, 'verifiers');
const scoring = ['--ckpt', CKPT.prose, '--probes', DEMO_PROBES, '--limit', '1', '--no-cache', '--json'];

/** Whether this machine refuses a directory under /sys even to root (a read-only kernel file system). */
const sysRefuses = (() => {
  try {
    mkdirSync('/sys/probe-write-test');
    return false;
  } catch {
    return true;
  }
})();

let dir: string;
let aFile: string;

beforeAll(() => {
  dir = tempDir('probe-input-errors-');
  aFile = join(dir, 'a-file');
  writeFileSync(aFile, 'not a directory\n');
});

describe('output paths are checked before any work', () => {
  it.each([
    ['bpb', scoring],
    ['mcq', scoring],
    ['passk', ['--ckpt', CKPT.prose, '--probes', DEMO, '--limit', '1', '-n', '1', '--no-cache', '--json']],
    ['asap', ['--ckpt', CKPT.prose, '--instances', 'shop__pricing-1', '--runs', '1', '--no-cache', '--json']],
  ])('%s --out that is a file', (verb, args) => {
    const run = runProbe([verb, ...args, '--out', aFile]);
    expectOneLineError(run, new RegExp(`^probe: ${aFile}: cannot create the --out directory: it is a file$`));
    expect(readFileSync(aFile, 'utf8')).toBe('not a directory\n');
  });

  it('bpb --out beneath a file names the file in the way', () => {
    expectOneLineError(runProbe(['bpb', ...scoring, '--out', join(aFile, 'run')]), new RegExp(`${aFile} is a file, not a directory`));
  });

  it.skipIf(!sysRefuses)('bpb --out where the system refuses to create it (EPERM under /sys)', () => {
    expectOneLineError(
      runProbe(['bpb', ...scoring, '--out', '/sys/probe-run']),
      /^probe: \/sys\/probe-run: cannot create the --out directory: .*\((EPERM|EACCES|EROFS)\)$/,
    );
  });

  it("bpb --out under /proc/x returns (Node's recursive mkdir loops forever there)", () => {
    expectOneLineError(
      runProbe(['bpb', ...scoring, '--out', '/proc/probe-run/x']),
      /^probe: \/proc\/probe-run\/x: cannot create the --out directory/,
    );
  });

  it('build --out that is a directory fails before the first replay, not after the build', () => {
    const out = join(dir, 'probes-dir');
    mkdirSync(out);
    const run = runProbe(['build', '--trajectories', join(REPO_ROOT, 'trajectories'), '--tasks', TASKS, '--out', out, '--no-distractors']);
    expectOneLineError(run, new RegExp(`^probe: ${out}: --out must name a file, and this is a directory$`));
    expect(existsSync(`${out}.progress.jsonl`)).toBe(false); // no trajectory was replayed
  });

  it.skipIf(!sysRefuses)('build --out in a directory that cannot be written', () => {
    expectOneLineError(
      runProbe(['build', '--trajectories', join(REPO_ROOT, 'trajectories'), '--tasks', TASKS, '--out', '/sys/probes.jsonl']),
      /^probe: \/sys\/probes\.jsonl: cannot write in the directory of --out \(\/sys\): .*\((EACCES|EPERM|EROFS)\)$/,
    );
  });

  it('report --html that cannot be written is refused before the report is built', () => {
    const run = runProbe(['report', join(dir, 'no-such-run'), '--html', join(aFile, 'report.html')]);
    expectOneLineError(run, new RegExp(`^probe: ${join(aFile, 'report.html')}: cannot create the directory of --html: ${aFile} is a file`));
  });
});

describe('servers and ports', () => {
  let busy: Server;
  let busyPort: number;
  beforeAll(async () => {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    busyPort = (busy.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())));

  it('serve on a port in use names the address and the reason', () => {
    const run = runProbe(['serve', '--ckpt', CKPT.prose, '--port', String(busyPort)]);
    expectOneLineError(
      run,
      new RegExp(`^probe: --host 127\\.0\\.0\\.1 --port ${busyPort}: cannot listen: .*\\(EADDRINUSE\\); choose another --port`),
    );
  });

  it.each([['70000'], ['-1'], ['http']])('serve --port %s is a usage error naming the flag', (port) => {
    expectOneLineError(
      runProbe(['serve', '--ckpt', CKPT.prose, '--port', port]),
      /option '--port <port>' argument .* is invalid\. expected a TCP port from 0 to 65535/,
    );
  });

  it('serve --batch-window -1', () => {
    expectOneLineError(
      runProbe(['serve', '--ckpt', CKPT.prose, '--batch-window', '-1']),
      /option '--batch-window <ms>' argument '-1' is invalid\. expected a whole number ≥ 0/,
    );
  });

  it('build --distractor-ckpt with a server URL is refused before any work, naming the flag', () => {
    const out = join(dir, 'distractor-url.jsonl');
    const run = runProbe([
      'build',
      '--trajectories',
      join(REPO_ROOT, 'trajectories'),
      '--tasks',
      TASKS,
      '--out',
      out,
      '--distractor-ckpt',
      'http://127.0.0.1:9/v1',
    ]);
    expectOneLineError(
      run,
      /^probe: http:\/\/127\.0\.0\.1:9\/v1: --distractor-ckpt takes a checkpoint directory run in process \(Hugging Face or ONNX\), not a server URL/,
    );
    expect(existsSync(`${out}.progress.jsonl`)).toBe(false);
  });
});

describe('sampling values and seeds', () => {
  it.each([
    ['mcq', ['--seed', 'abc'], /'--seed <n>' argument 'abc' is invalid\. expected a whole number/],
    ['mcq', ['--seed', '1.5'], /'--seed <n>' argument '1\.5' is invalid/],
    ['passk', ['--temperature', '-1'], /'--temperature <t>' argument '-1' is invalid\. expected a number ≥ 0/],
    ['passk', ['--top-p', '5'], /'--top-p <p>' argument '5' is invalid\. expected a number from 0 to 1/],
    ['passk', ['--seed', 'x'], /'--seed <n>' argument 'x' is invalid/],
    ['asap', ['--top-p', '1.5'], /'--top-p <p>' argument '1\.5' is invalid/],
    ['asap', ['--temperature', 'hot'], /'--temperature <t>' argument 'hot' is invalid/],
    ['screen', ['--asap-runs', '-2'], /'--asap-runs <n>' argument '-2' is invalid/],
    ['bpb', ['--http-retries', 'many'], /'--http-retries <n>' argument 'many' is invalid/],
  ])('%s %s', (verb, args, names) => {
    expectOneLineError(runProbe([verb, ...args]), names);
  });

  it('a valid negative seed is still a seed', () => {
    // demo.jsonl, not the fixtures: MCQ refuses a set whose items have too few distractors, and
    // its third item is the first with the 3 it asks with.
    const mcqScoring = ['--ckpt', CKPT.prose, '--probes', DEMO, '--limit', '3', '--no-cache', '--json'];
    const run = runProbe(['mcq', ...mcqScoring, '--seed', '-3', '--style', 'letter']);
    expect(run.code, run.stderr).toBe(0);
  });
});

describe('inputs that would make a run of nothing, or of wrong numbers', () => {
  it('a probe item of an action format probe does not know is refused at load, naming file, line and field', () => {
    const file = join(dir, 'unknown-format.jsonl');
    const [first, second] = readFileSync(DEMO_PROBES, 'utf8').trim().split('\n');
    writeFileSync(file, `${first}\n${JSON.stringify({ ...JSON.parse(second!), format: 'native:aider' })}\n`);
    expectOneLineError(
      runProbe(['bpb', '--ckpt', CKPT.prose, '--probes', file, '--no-cache', '--json']),
      new RegExp(`^probe: ${file}:2: field "format": unknown action format "native:aider" \\(known: "md\\+xml", `),
    );
  });

  it('asap --tasks: a directory without task records', () => {
    const empty = join(dir, 'no-tasks');
    mkdirSync(empty);
    expectOneLineError(
      runProbe(['asap', '--ckpt', CKPT.prose, '--tasks', empty, '--no-cache', '--json']),
      new RegExp(`^probe: ${empty}: no task records`),
    );
  });

  it('asap --tasks: an empty JSONL file', () => {
    const empty = join(dir, 'tasks.jsonl');
    writeFileSync(empty, '\n');
    const out = join(dir, 'asap-empty');
    expectOneLineError(
      runProbe(['asap', '--ckpt', CKPT.prose, '--tasks', empty, '--no-cache', '--out', out, '--json']),
      new RegExp(`^probe: ${empty}: holds no task records$`),
    );
    expect(existsSync(join(out, 'results.json'))).toBe(false);
  });

  it('build: a trajectory directory with no files', () => {
    const empty = join(dir, 'no-trajectories');
    mkdirSync(empty);
    expectOneLineError(
      runProbe(['build', '--trajectories', empty, '--tasks', TASKS, '--out', join(dir, 'none.jsonl')]),
      new RegExp(`^probe: ${empty}: holds no trajectory files$`),
    );
  });

  const prompt = () => {
    const file = join(dir, 'prompt.txt');
    writeFileSync(file, 'Issue: $ISSUE$\n$CHOICES$\nAnswer: (');
    return file;
  };

  it('aptbench: an empty items file', () => {
    const items = join(dir, 'apt-empty.jsonl');
    writeFileSync(items, '');
    expectOneLineError(
      runProbe(['aptbench', '--items', items, '--prompt', prompt(), '--ckpt', CKPT.prose, '--no-cache', '--json']),
      new RegExp(`^probe: ${items}: holds no items$`),
    );
  });

  it('aptbench: an answer that is not an option letter (answer: 7)', () => {
    const items = join(dir, 'apt-seven.jsonl');
    writeFileSync(
      items,
      `${JSON.stringify({ uuid: 'u1', issue_statement: 'x', choices: '(A) a\n(B) b', answer: 'A' })}\n${JSON.stringify({ uuid: 'u2', issue_statement: 'y', choices: '(A) a\n(B) b', answer: 7 })}\n`,
    );
    expectOneLineError(
      runProbe(['aptbench', '--items', items, '--prompt', prompt(), '--ckpt', CKPT.prose, '--no-cache', '--json']),
      new RegExp(`^probe: ${items}:2: field "answer": expected a string, got 7$`),
    );
  });

  it('a trajectory message whose content is not text', () => {
    const source = JSON.parse(readFileSync(join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json'), 'utf8')) as {
      messages: Array<{ role: string; content: unknown }>;
    };
    const k = source.messages.findIndex((m) => m.role === 'assistant');
    source.messages[k]!.content = 42;
    const file = join(dir, 'shop__pricing-1.bad.traj.json');
    writeFileSync(file, JSON.stringify(source));
    const run = runProbe(['replay', file, '--task', join(TASKS, 'shop__pricing-1', 'task.json'), '--json']);
    expectOneLineError(
      run,
      new RegExp(`^probe: ${file}: field "messages\\.${k}\\.content": expected text \\(a string or a list of content parts\\), got 42$`),
    );
  });

  it('report: a results.json whose bpb is not a number is refused, naming file and field, not ranked first', () => {
    const runDir = join(dir, 'forged-run');
    mkdirSync(runDir);
    writeFileSync(join(runDir, 'run.json'), JSON.stringify({ verb: 'bpb' }));
    writeFileSync(
      join(runDir, 'results.json'),
      JSON.stringify({
        results: [
          { checkpoint: 'good', bpb: 2.5, items: [] },
          { checkpoint: 'forged', bpb: 'x', items: [] },
        ],
        ranking: ['good'],
      }),
    );
    const run = runProbe(['report', runDir, '--json']);
    expectOneLineError(
      run,
      new RegExp(`^probe: ${join(runDir, 'results.json')}: field "results\\.1\\.bpb": .*expected number.*\\(found "x"\\)`),
    );
    expect(run.stdout).toBe('');
  });
});

describe('a machine the jail cannot run on', () => {
  // No bwrap on PATH (and no apt-get: nothing is installed): what a bare machine looks like to probe.
  const bare = { PATH: tempDir() };

  it('probe setup --check lists what is there and what is missing, exit 2 naming the fix', () => {
    expect(runProbe(['setup', '--check']).code).toBe(0);
    const run = runProbe(['setup', '--check'], bare);
    expectOneLineError(run, /bubblewrap \(bwrap\) is not installed.*apt-get install .*bubblewrap/);
    expect(run.stdout).toMatch(/^missing {2}bubblewrap jail — /m);
  });

  it('a verb that needs the local sandbox refuses in one line, exit 2, before any work', () => {
    const run = runProbe(
      ['replay', join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json'), '--task', join(TASKS, 'shop__pricing-1', 'task.json')],
      bare,
    );
    expectOneLineError(run, /bubblewrap \(bwrap\) is not installed: run `npx probe setup`.*--sandbox docker/);
  });
});

describe('what the user sees for each kind of error (src/cli/exit.ts)', () => {
  const seen = (error: unknown, debug = false) => {
    let text = '';
    const code = reportError(
      error,
      (t) => {
        text += t;
      },
      debug,
    );
    return { code, text };
  };

  it('a ProbeError is one line; its exit code says whose move it is', () => {
    expect(seen(new InputError({ file: 'a.jsonl', line: 3, field: 'gold' }, 'missing'))).toEqual({
      code: 2,
      text: 'probe: a.jsonl:3: field "gold": missing\n',
    });
    expect(seen(new EnvironmentError('/x: cannot write'))).toEqual({ code: 2, text: 'probe: /x: cannot write\n' });
    expect(seen(new ProbeError('the server returned no samples'))).toEqual({ code: 1, text: 'probe: the server returned no samples\n' });
  });

  it('a file-system or port error that escaped is one line naming its path, exit 2', () => {
    let fsError: unknown;
    try {
      statSync(join(aFile, 'x'));
    } catch (error) {
      fsError = error;
    }
    expect(seen(fsError)).toEqual({ code: 2, text: `probe: ${join(aFile, 'x')}: cannot stat: not a directory (ENOTDIR)\n` });
    const inUse = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:8000'), {
      code: 'EADDRINUSE',
      syscall: 'listen',
      address: '127.0.0.1',
      port: 8000,
    });
    expect(seen(inUse)).toEqual({
      code: 2,
      text: 'probe: 127.0.0.1:8000: cannot listen: address already in use 127.0.0.1:8000 (EADDRINUSE)\n',
    });
  });

  it('a bug keeps its stack trace and says it is one; PROBE_DEBUG=1 adds the stack to any error', () => {
    const bug = seen(new TypeError('cannot read properties of undefined'));
    expect(bug.code).toBe(1);
    expect(bug.text).toMatch(/^probe: TypeError: cannot read properties of undefined\n\s+at /);
    expect(bug.text).toMatch(/this is a bug in probe/);
    const debug = seen(new InputError({ file: 'f' }, 'bad', { cause: new Error('root cause') }), true);
    expect(debug.text).toMatch(/^probe: f: bad\nInputError: f: bad\n\s+at [\s\S]*Caused by: Error: root cause/);
  });

  it('PROBE_DEBUG=1 through the bin: the same first line, then the stack', () => {
    const run = runProbe(['bpb', ...scoring, '--out', aFile], { PROBE_DEBUG: '1' });
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(`probe: ${aFile}: cannot create the --out directory: it is a file`);
    expect(run.stderr).toMatch(/^\s+at /m);
  });

  it('no write-check file is left in an --out directory', () => {
    const out = join(dir, 'clean-out');
    const run = runProbe(['bpb', ...scoring, '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(out).filter((f) => f.startsWith('.probe-write-check'))).toEqual([]);
  });
});

describe('defaults that work', () => {
  it('passk without --probes samples the shipped set built from the demo trajectories (the scoring fixtures have no state to restore)', () => {
    const out = join(dir, 'passk-default');
    const run = runProbe(['passk', '--ckpt', CKPT.prose, '--limit', '4', '-n', '2', '--max-tokens', '8', '--no-cache', '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/pass@k on 4 probe items, n = 2/);
    const manifest = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as { probe_set: { source: string } };
    expect(manifest.probe_set.source).toBe(join(REPO_ROOT, 'probes', 'demo.jsonl'));
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as { results: Array<{ items: unknown[] }> };
    expect(results.results[0]!.items).toHaveLength(4);
  });
});
