/**
 * Issue 26, classes 7, 8 and 10: ids and documents that once gave wrong numbers or crashed.
 * Repeated ids (two questions with one `query_id` shared one memoised episode), ids that
 * collide as file names (`a/b` and `a_b` wrote one transcript, `..` wrote above its
 * directory), and deeply nested JSON (a stack overflow that ended the whole build).
 * Each case runs the real `probe` bin on real files.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointKey } from '../src/swe/store.ts';
import { UnparsableAction } from '../src/formats/action-format.ts';
import { asapFormat } from '../src/formats/asap-transcripts.ts';
import { formatOf } from '../src/formats/registry.ts';
import { idFileName } from '../src/util/file-name.ts';
import { EMBEDDED_RESEARCH_SET, REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { CKPT, tempDir } from './helpers/paths.ts';

const LICENSES = EMBEDDED_RESEARCH_SET;
const shippedQueries = readFileSync(join(LICENSES, 'queries.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Record<string, unknown>);

/** A research set: the shipped corpus, and the shipped questions under the ids given. */
function researchSet(ids: string[]): string {
  const dir = tempDir();
  copyFileSync(join(LICENSES, 'corpus.jsonl'), join(dir, 'corpus.jsonl'));
  writeFileSync(join(dir, 'queries.jsonl'), `${ids.map((id, i) => JSON.stringify({ ...shippedQueries[i], query_id: id })).join('\n')}\n`);
  return dir;
}

const deepValue = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

interface BuildSummary {
  items: number;
  counts: Record<string, number>;
  trajectories: Array<{ trajectory: string; status: string; rejected: string | null }>;
}

function build(trajectories: string, out: string): { code: number | null; stderr: string; summary: BuildSummary } {
  const run = runProbe(
    ['build', '--trajectories', trajectories, '--tasks', join(REPO_ROOT, 'verifiers'), '--out', out, '--context', 'native', '--json'],
    {},
    300_000,
  );
  let summary: BuildSummary;
  try {
    summary = JSON.parse(run.stdout) as BuildSummary;
  } catch {
    throw new Error(`probe build printed no summary (exit ${run.code}): ${run.stderr.slice(-2000)}`);
  }
  return { code: run.code, stderr: run.stderr, summary };
}

const byName = (s: BuildSummary) => Object.fromEntries(s.trajectories.map((t) => [t.trajectory.split('/').pop()!, t]));

describe('class 7: a repeated id is refused at load, naming where it first appeared', () => {
  it('two research questions with one query_id', () => {
    const set = researchSet(['licenses-01', 'licenses-01']);
    expectOneLineError(
      runProbe(['asap', '--env', 'research', '--research-set', set, '--ckpt', CKPT.agent, '--runs', '1', '--max-steps', '1', '--no-cache']),
      new RegExp(`queries\\.jsonl:2: field "query_id": "licenses-01" is used twice: first at ${set}/queries\\.jsonl:1$`),
    );
  });

  it('a question id given as a number and as a string is one id', () => {
    const set = researchSet(['7', '8']);
    const file = join(set, 'queries.jsonl');
    writeFileSync(file, readFileSync(file, 'utf8').replace('"query_id":"7"', '"query_id":8'));
    expectOneLineError(
      runProbe(['asap', '--env', 'research', '--research-set', set, '--ckpt', CKPT.agent, '--runs', '1', '--max-steps', '1', '--no-cache']),
      /queries\.jsonl:2: field "query_id": "8" is used twice: first at .*queries\.jsonl:1$/,
    );
  });

  it('two SWE task rows with one instance_id, in one file and across the files of a task directory', () => {
    const row = readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'swebench', 'pydicom__pydicom-1458.jsonl'), 'utf8').trim();
    const dir = tempDir();
    writeFileSync(join(dir, 'twice.jsonl'), `${row}\n${row}\n`);
    const trajectories = join(dir, 'trajectories');
    mkdirSync(trajectories);
    writeFileSync(join(trajectories, 'pydicom__pydicom-1458.x.traj'), '{}');
    const args = (tasks: string) => ['build', '--trajectories', trajectories, '--tasks', tasks, '--out', join(dir, 'p.jsonl')];
    expectOneLineError(
      runProbe(args(join(dir, 'twice.jsonl'))),
      /twice\.jsonl:2: field "instance_id": "pydicom__pydicom-1458" is used twice: first at .*twice\.jsonl:1$/,
    );
    const tasks = join(dir, 'tasks');
    mkdirSync(tasks);
    writeFileSync(join(tasks, 'a.jsonl'), `${row}\n`);
    writeFileSync(join(tasks, 'b.json'), `[${row}]\n`);
    expectOneLineError(
      runProbe(args(tasks)),
      /tasks\/b\.json: field "instance_id": row 1: "pydicom__pydicom-1458" is used twice: first at .*tasks\/a\.jsonl:1$/,
    );
  });

  describe.skipIf(skipWithoutBwrap)('probe build', () => {
    it('refuses the second of two trajectories whose probe items take one id, and the probe set it writes loads', () => {
      const dir = tempDir();
      const trajectories = join(dir, 'trajectories');
      mkdirSync(trajectories);
      // Both are labelled `mini`: the label is the file name after the instance id, less its extension.
      const source = join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json');
      copyFileSync(source, join(trajectories, 'shop__pricing-1.mini.json'));
      copyFileSync(source, join(trajectories, 'shop__pricing-1.mini.traj.json'));
      const out = join(dir, 'probes.jsonl');
      const { summary } = build(trajectories, out);
      expect(summary.counts).toEqual({ accepted: 1, rejected: 0, flaky: 0, 'bad-input': 1 });
      expect(byName(summary)['shop__pricing-1.mini.traj.json']!.rejected).toMatch(
        /shop__pricing-1\.mini\.traj\.json: field "id": its probe item id "shop__pricing-1@mini" is already the id of an item from .*shop__pricing-1\.mini\.json$/,
      );
      expect(loadProbeItems(out).map((i) => i.id)).toEqual(['shop__pricing-1@mini']);
    }, 300_000);
  });
});

describe('class 8: ids that differ are files that differ', () => {
  it('a/b, a_b, .. and %2E. each get their own transcript, inside their checkpoint directory', () => {
    const ids = ['a/b', 'a_b', '..', '%2E.'];
    const set = researchSet(ids);
    const out = join(tempDir(), 'run');
    const run = runProbe(
      [
        'asap',
        '--env',
        'research',
        '--research-set',
        set,
        '--ckpt',
        CKPT.agent,
        '--runs',
        '1',
        '--max-steps',
        '1',
        '--max-tokens',
        '16',
        '--no-cache',
        '--json',
        '--out',
        out,
      ],
      {},
      300_000,
    );
    expect(run.code, run.stderr).toBe(0);
    const episodes = join(out, 'episodes');
    const checkpointDir = join(episodes, checkpointKey(CKPT.agent));
    // Plain characters are kept as they are (run directories written before keep their names); the rest is %XX.
    const names = ['a%2Fb', 'a_b', '%2E.', '%252E.'];
    expect(readdirSync(checkpointDir).sort()).toEqual([...names].sort());
    names.forEach((name, i) => {
      const transcript = readFileSync(join(checkpointDir, name, 'run-0.md'), 'utf8');
      expect(transcript, name).toContain(`Question: ${shippedQueries[i]!.query as string}`);
    });
    expect(readdirSync(episodes)).toEqual([checkpointKey(CKPT.agent)]);
    expect(existsSync(join(out, 'run-0.md'))).toBe(false);
  }, 300_000);
});

describe('class 8: the id → file name encoding is injective', () => {
  it('lone surrogates (JSON.parse keeps them), U+FFFD, escapes and long ids each get their own name', () => {
    const ids = JSON.parse(
      '["a\\ud800", "a\\udfff", "a\\ufffd", "a%EF%BF%BD", "a%%D800", ".", "..", "%2E", "", "%", "a/b", "a_b"]',
    ) as string[];
    const long = (tail: string) => `${'x'.repeat(300)}${tail}`;
    ids.push(long('\ud800'), long('\ufffd'), long(''), `${'y'.repeat(164)}\ud800zz`, `${'y'.repeat(164)}\ufffdzz`);
    // Random ids over an alphabet of the characters the encoding treats specially.
    const alphabet = ['a', '.', '%', '~', '/', '_', '\ud800', '\udc00', '\ufffd', 'é', '\u0000'];
    let seed = 7;
    for (let n = 0; n < 3000; n++) {
      let id = '';
      for (let len = 1 + (n % 9); len > 0; len--) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        id += alphabet[seed % alphabet.length];
      }
      ids.push(id);
    }
    const unique = [...new Set(ids)];
    const names = unique.map(idFileName);
    expect(new Set(names).size).toBe(unique.length);
    for (const name of names) {
      expect(name).not.toMatch(/\//);
      expect(['', '.', '..']).not.toContain(name);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(200);
    }
  });
});

describe('class 8: checkpoints whose names flatten to one directory', () => {
  it('a/b and a_b in one run are refused, naming both', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'a'));
    symlinkSync(CKPT.agent, join(dir, 'a', 'b'));
    symlinkSync(CKPT.agent, join(dir, 'a_b'));
    const run = runProbe(['bpb', '--ckpt', join(dir, 'a', 'b'), '--ckpt', join(dir, 'a_b'), '--limit', '1', '--no-cache']);
    expectOneLineError(run, /a_b: field "--ckpt": this checkpoint and .*a\/b would share the run directory's files/);
  });
});

describe("class 10: a model's action nested past the stack's reach is an unparsable sample, not a crash", () => {
  const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
  it('OpenHands tool-call arguments, R2E-Gym view_range, an ASAP JSON step and a markdown editor block', () => {
    expect(() => formatOf('native:openhands').parse(`{"command": ${deep}}`)).toThrow(UnparsableAction);
    expect(() => formatOf('native:openhands').parse('"ls"')).toThrow(UnparsableAction);
    expect(() =>
      formatOf('native:r2e-gym').parse(
        `<function=file_editor>\n<parameter=command>view</parameter>\n<parameter=path>/a</parameter>\n<parameter=view_range>${deep}</parameter>\n</function>`,
      ),
    ).toThrow(UnparsableAction);
    expect(asapFormat('json').extract(`x", "action": ${deep}}`)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/deeper than 200/),
    });
    expect(asapFormat('markdown').extract(`Edit.\n\n\`\`\`str_replace_editor\n{"a": ${deep}}\n\`\`\`\n`)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/deeper than 200/),
    });
  });
});

describe.skipIf(skipWithoutBwrap)('class 10: a too-deep JSON document is one bad input, and the others build', () => {
  it('a trajectory file whose message nests 100 000 levels', () => {
    const dir = tempDir();
    const trajectories = join(dir, 'trajectories');
    mkdirSync(trajectories);
    const good = join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json');
    copyFileSync(good, join(trajectories, 'shop__pricing-1.mini.traj.json'));
    const doc = JSON.parse(readFileSync(good, 'utf8')) as { messages: Array<{ content: unknown }> };
    doc.messages[1]!.content = '@DEEP@';
    writeFileSync(join(trajectories, 'shop__pricing-1.deep.traj.json'), JSON.stringify(doc).replace('"@DEEP@"', deepValue(100_000)));
    const { code, stderr, summary } = build(trajectories, join(dir, 'probes.jsonl'));
    expect(stderr).not.toMatch(/Maximum call stack|bug in probe/);
    expect(code).toBe(2); // bad input, reported, with the good trajectory built
    expect(summary.counts).toEqual({ accepted: 1, rejected: 0, flaky: 0, 'bad-input': 1 });
    expect(byName(summary)['shop__pricing-1.deep.traj.json']).toMatchObject({
      status: 'bad-input',
      rejected: `${join(trajectories, 'shop__pricing-1.deep.traj.json')}: nests deeper than 200 levels of arrays and objects; not read`,
    });
    expect(summary.items).toBe(1);
  }, 300_000);

  it('a row of a trajectory dataset whose turns nest 100 000 levels', () => {
    const dir = tempDir();
    const traj = JSON.parse(readFileSync(join(REPO_ROOT, 'trajectories', 'money-js__cents-12.sweagent.traj'), 'utf8')) as {
      history: Array<{ role: string; content: string }>;
    };
    // As nebius/SWE-agent-trajectories publishes SWE-agent runs: the history as `{role, text}` turns.
    const row = {
      instance_id: 'money-js__cents-12',
      model_name: 'gpt-4o',
      target: true,
      trajectory: traj.history.map((m) => ({ role: m.role === 'assistant' ? 'ai' : m.role, text: m.content })),
      exit_status: 'submitted',
      generated_patch: '',
    };
    const deepTurns = row.trajectory.map((turn, i) => (i === 3 ? { ...turn, text: '@DEEP@' } : turn));
    const deepRow = JSON.stringify({ ...row, trajectory: deepTurns }).replace('"@DEEP@"', deepValue(100_000));
    const dataset = join(dir, 'dataset.jsonl');
    writeFileSync(dataset, `${deepRow}\n${JSON.stringify(row)}\n`);
    const { code, stderr, summary } = build(dataset, join(dir, 'probes.jsonl'));
    expect(stderr).not.toMatch(/Maximum call stack|bug in probe/);
    expect(code).toBe(2);
    expect(summary.counts).toEqual({ accepted: 1, rejected: 0, flaky: 0, 'bad-input': 1 });
    expect(summary.trajectories.map((t) => [t.trajectory, t.status])).toEqual([
      ['dataset.jsonl#0', 'bad-input'],
      ['dataset.jsonl#1', 'accepted'],
    ]);
    expect(summary.trajectories[0]!.rejected).toBe(`${dataset}:1: nests deeper than 200 levels of arrays and objects; not read`);
  }, 300_000);
});
