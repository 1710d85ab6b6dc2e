/** Prefix-conditioned pass@K: the apply-and-verify loop on every item format, and the estimator wiring. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { judgeSample, scorePassk } from '../src/probes/passk.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { restoreProbeState } from '../src/probes/restore.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { freshSandboxes } from '../src/sandbox/pool.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { meanPassAtK } from '../src/stats/pass-at-k.ts';
import { loadTasks } from '../src/verify/load-task.ts';
import { CKPT } from './helpers/paths.ts';
import { formatOf, parseActionText } from '../src/formats/registry.ts';

const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl'));
const tasks = new Map((await loadTasks(join(REPO_ROOT, 'verifiers'))).map((t) => [t.instance_id, t]));
const options = {
  leaseFor: (task: LoadedTask) => freshSandboxes((t) => openSandbox('local', t), task),
  gradersFor: (task: LoadedTask) => freshSandboxes((t) => openSandbox('local', t), task),
  restore: restoreProbeState,
};

describe('stop strings per format', () => {
  it('cut a sampled action where the gold ends, and put the stop back where it belongs', () => {
    for (const item of items) {
      const { stops, keepStop } = formatOf(item.format);
      const at = Math.min(...stops.map((s) => item.gold.indexOf(s)).filter((i) => i >= 0));
      if (!Number.isFinite(at)) continue; // actions that run to the end of the sample (SWE-agent, OpenHands)
      const stop = stops.find((s) => item.gold.indexOf(s) === at)!;
      expect(keepStop ? item.gold.slice(0, at) + stop : item.gold.slice(0, at), item.id).toBe(item.gold);
    }
  });

  it('treat an ASAP log rendered natively (native:asap) as the md+xml it is', () => {
    const gold = items.find((i) => i.format === 'md+xml')!.gold;
    const ending = ({ stops, keepStop }: { stops: readonly string[]; keepStop: boolean }) => ({ stops, keepStop });
    expect(ending(formatOf('native:asap'))).toEqual(ending(formatOf('md+xml')));
    expect(parseActionText(gold, 'native:asap')).toEqual(parseActionText(gold, 'md+xml'));
  });
});

describe.skipIf(skipWithoutBwrap)('apply and verify a sampled action', () => {
  const formats = [...new Set(items.map((i) => i.format))];
  it.each(formats)('%s: the gold text passes, a distractor does not, garbage is a parse failure', async (format) => {
    const item = items.find((i) => i.format === format)!;
    const task = tasks.get(item.task)!;
    const cache = new Map();
    expect(await judgeSample(item.gold, item, task, options, cache)).toMatchObject({ parsed: true, resolved: true });
    const wrong = await judgeSample(item.distractors[0]!, item, task, options, new Map());
    expect(wrong.resolved).toBe(false);
    const garbage = await judgeSample('<bas', item, task, options, new Map());
    expect(garbage.resolved).toBe(false);
    if (format !== 'native:swe-agent') expect(garbage.parsed).toBe(false); // a SWE-agent line is always some command
  });
});

describe.skipIf(skipWithoutBwrap)('a sample that leaves the T* state as it was', () => {
  it('fails without a test run (that state fails by the definition of T*); one that edits is graded', async () => {
    const item = items.find((i) => i.format === 'native:mini-swe-agent-1')!;
    const task = tasks.get(item.task)!;
    const looking = await judgeSample('```bash\nls -la && cat README.md || true\n```', item, task, options, new Map());
    expect(looking).toMatchObject({ parsed: true, resolved: false, reason: expect.stringMatching(/^changes no file at the T\* state/) });
    const wrong = await judgeSample(item.distractors[0]!, item, task, options, new Map());
    expect(wrong.resolved).toBe(false);
    expect(wrong.reason).not.toMatch(/^changes no file/);
  });
});

describe.skipIf(skipWithoutBwrap)('scorePassk with a real checkpoint', () => {
  it('counts c, parse failures and unbiased pass@k per item, reproducibly', async () => {
    const backend = await OnnxBackend.open(CKPT.attention);
    const subset = items.filter((i) => i.task === 'cart-js__total-8');
    const run = () =>
      scorePassk('attn', backend, subset, {
        n: 4,
        ks: [1, 2, 4, 8],
        temperature: 0.7,
        topP: 0.95,
        maxTokens: 96,
        seed: 11,
        taskOf: (item) => tasks.get(item.task)!,
        ...options,
      });
    const result = await run();
    expect(Object.keys(result.pass_at)).toEqual(['1', '2', '4']);
    for (const item of result.items) {
      expect(item.n).toBe(4);
      expect(item.c).toBe(item.samples.filter((s) => s.resolved).length);
      expect(item.parse_failures).toBe(item.samples.filter((s) => !s.parsed).length);
    }
    expect(result.pass_at['2']).toBe(meanPassAtK(result.items, 2));
    expect(result.parse_failure_rate).toBe(result.items.reduce((a, i) => a + i.parse_failures, 0) / 8);
    expect((await run()).items.map((i) => i.samples.map((s) => s.text))).toEqual(result.items.map((i) => i.samples.map((s) => s.text)));
    await backend.close();
  });
});

describe.skipIf(skipWithoutBwrap)('pass@K with --steps rollouts', () => {
  it('runs S actions, showing each output to the model, then verifies', async () => {
    const backend = await OnnxBackend.open(join(REPO_ROOT, 'checkpoints', 'contaminated-agent'));
    const item = items.find((i) => i.id === 'cart-js__total-8@mini')!;
    const result = await scorePassk('contaminated', backend, [item], {
      n: 1,
      ks: [1],
      steps: 2,
      temperature: 0.7,
      topP: 0.95,
      maxTokens: 1024,
      seed: 0,
      taskOf: (i) => tasks.get(i.task)!,
      ...options,
    });
    expect(result.items[0]!.c).toBe(1);
    expect(result.items[0]!.samples[0]!.reason).toMatch(/resolved after [12] step/);
    const swe = items.find((i) => i.format === 'native:swe-agent')!;
    await expect(
      scorePassk('contaminated', backend, [swe], {
        n: 1,
        ks: [1],
        steps: 2,
        temperature: 0.7,
        topP: 0.95,
        maxTokens: 64,
        seed: 0,
        taskOf: (i) => tasks.get(i.task)!,
        ...options,
      }),
    ).rejects.toThrow(/--steps > 1 is supported for md\+xml and mini-swe-agent items/);
    await backend.close();
  });
});
