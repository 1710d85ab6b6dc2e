/** The embedded ladder: reproducible byte for byte, small, shaped as documented, ranked as constructed. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { buildRung, EXPECTED_ORDER, LADDER, loadLadderTexts } from '../scripts/checkpoints/ladder.ts';
import { REAL_RUNGS } from '../scripts/checkpoints/real-rungs.ts';
import { demoProbeLines } from '../scripts/make-demo-probes.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { EMBEDDED_CHECKPOINTS, readLadder, REPO_ROOT } from '../src/embedded.ts';
import { rankByBpb, scoreBpb } from '../src/probes/bpb.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { CKPT, DEMO_PROBES } from './helpers/paths.ts';
import { rankingAccuracy, scoreMcq } from '../src/probes/mcq.ts';
import { scorePassk } from '../src/probes/passk.ts';
import { restoreProbeState } from '../src/probes/restore.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { freshSandboxes } from '../src/sandbox/pool.ts';
import { loadTasks } from '../src/verify/load-task.ts';

function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix))
    .flatMap((name) => {
      const rel = prefix ? `${prefix}/${name}` : name;
      return statSync(join(dir, rel)).isDirectory() ? filesUnder(dir, rel) : [rel];
    })
    .sort();
}

describe('embedded checkpoint ladder', () => {
  const texts = loadLadderTexts(join(REPO_ROOT, 'ladder-text'));

  it.each(LADDER.map((r) => [r.name, r] as const))('%s is reproduced byte for byte by the generator', (name, spec) => {
    const dir = join(EMBEDDED_CHECKPOINTS, name);
    const built = buildRung(spec, texts);
    expect(filesUnder(dir)).toEqual([...built.keys()].sort());
    for (const [rel, data] of built) {
      const expected = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
      expect(readFileSync(join(dir, rel)).equals(expected), `${name}/${rel} differs from the generator's output`).toBe(true);
    }
    const total = filesUnder(dir).reduce((a, rel) => a + statSync(join(dir, rel)).size, 0);
    expect(total).toBeLessThanOrEqual(2 * 1024 * 1024);
  });

  it('the manifest matches the generator', () => {
    const ladder = readLadder();
    // The hand-built rungs, the real ones, then the control last.
    expect(ladder.rungs.map((r) => r.name)).toEqual([
      ...LADDER.filter((r) => !r.contaminated).map((r) => r.name),
      ...REAL_RUNGS.map((r) => r.name),
      'contaminated-agent',
    ]);
    expect(ladder.rungs.filter((r) => r.control).map((r) => r.name)).toEqual(['contaminated-agent']);
    expect(ladder.expected_order).toEqual(EXPECTED_ORDER);
    expect(ladder.known_order).toEqual(['llama-bpe8k-s1500', 'llama-bpe8k-s250', 'llama-bpe8k-s40']);
  });

  it("the agent text never contains the demo probes' gold actions or tasks", () => {
    const agent = texts.agent.join('\n');
    for (const item of loadProbeItems(DEMO_PROBES)) {
      expect(agent.includes(item.gold)).toBe(false);
      expect(agent.includes(item.task)).toBe(false);
    }
  });

  it('the shipped demo probes are what the fixture script writes', () => {
    expect(readFileSync(DEMO_PROBES, 'utf8')).toBe(`${demoProbeLines().join('\n')}\n`);
  });

  it('the attention checkpoint has the inputs and outputs of an Optimum Llama/Qwen2 export', async () => {
    const session = await ort.InferenceSession.create(join(CKPT.attention, 'onnx', 'model.onnx'), { logSeverityLevel: 3 });
    const config = JSON.parse(readFileSync(join(CKPT.attention, 'config.json'), 'utf8')) as { num_hidden_layers: number };
    const layers = Array.from({ length: config.num_hidden_layers }, (_, i) => i);
    expect(session.inputNames).toEqual([
      'input_ids',
      'attention_mask',
      'position_ids',
      ...layers.flatMap((i) => [`past_key_values.${i}.key`, `past_key_values.${i}.value`]),
    ]);
    expect(session.outputNames).toEqual(['logits', ...layers.flatMap((i) => [`present.${i}.key`, `present.${i}.value`])]);
    await session.release();
  });

  it('ranks as constructed on the shipped probes', async () => {
    const items = loadProbeItems(DEMO_PROBES);
    const results = [];
    for (const rung of LADDER.filter((r) => !r.contaminated)) {
      const backend = await OnnxBackend.open(join(EMBEDDED_CHECKPOINTS, rung.name));
      results.push(await scoreBpb(rung.name, backend, items));
      await backend.close();
    }
    const ranking = rankByBpb(results);
    // Groups in order: every member of an earlier group ranks above every member of a later one.
    let position = 0;
    for (const group of EXPECTED_ORDER) {
      expect(new Set(ranking.slice(position, position + group.length))).toEqual(new Set(group));
      position += group.length;
    }
  });
});

describe('the contaminated control', () => {
  const demo = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl'));

  it('ranks first on the MCQ accuracy rankings read (acc_norm) among all checkpoints', async () => {
    const accs = new Map<string, number>();
    for (const rung of LADDER) {
      const backend = await OnnxBackend.open(join(EMBEDDED_CHECKPOINTS, rung.name));
      accs.set(rung.name, rankingAccuracy(await scoreMcq(rung.name, backend, demo, 'likelihood', 0)));
      await backend.close();
    }
    const best = [...accs.entries()].sort((a, b) => b[1] - a[1]);
    expect(best[0]![0]).toBe('contaminated-agent');
    expect(best[0]![1]).toBeGreaterThan(best[1]![1]);
  });

  it.skipIf(skipWithoutBwrap)('solves items in pass@K: the apply-and-verify loop works end to end', async () => {
    const tasks = new Map((await loadTasks(join(REPO_ROOT, 'verifiers'))).map((t) => [t.instance_id, t]));
    const backend = await OnnxBackend.open(join(EMBEDDED_CHECKPOINTS, 'contaminated-agent'));
    const items = demo.filter((i) => ['shop__pricing-1@mini', 'api__pagination-5@mini:asap', 'cart-js__total-8@mini'].includes(i.id));
    const result = await scorePassk('contaminated-agent', backend, items, {
      n: 2,
      ks: [1, 2],
      temperature: 0.7,
      topP: 0.95,
      maxTokens: 1024,
      seed: 0,
      taskOf: (item) => tasks.get(item.task)!,
      restore: restoreProbeState,
      leaseFor: (task) => freshSandboxes((t) => openSandbox('local', t), task),
      gradersFor: (task) => freshSandboxes((t) => openSandbox('local', t), task),
    });
    await backend.close();
    expect(result.items.filter((i) => i.c > 0).length).toBeGreaterThan(0);
    expect(result.pass_at['1']).toBeGreaterThan(0);
  });
});
