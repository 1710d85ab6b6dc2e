/**
 * Prefix-conditioned pass@K: from the context at T*, sample n continuations, parse each
 * as an action in the item's format, run it in a jailed sandbox restored to the T* state,
 * and let the task's verifier decide. Unbiased pass@k over items; parse failures count as
 * failures and are reported separately.
 */
import { samplerRecord } from '../backends/sampler-record.ts';
import type { CompletionBackend, Sample, SampleRequest } from '../backends/types.ts';
import { sampleOne } from '../backends/single.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { TrajectoryAction } from '../schema/trajectory.ts';
import type { GraderLease, SandboxLease } from '../sandbox/pool.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { meanPassAtK } from '../stats/pass-at-k.ts';
import { type ActionFormat, sampledActionText, UnparsableAction } from '../formats/action-format.ts';
import { itemFormat } from '../formats/registry.ts';
import { runAction } from '../sandbox/run-action.ts';
import { gradeSandbox, unresolvedCauses, verifyState, type Tampering, type Verdict } from '../verify/verifier.ts';
import { InputError, ProbeError } from '../errors.ts';
import { memoized, type ItemHooks } from './memo.ts';
import { ACTION_MAX_TOKENS, SAMPLING } from '../protocol.ts';

export interface PasskSample {
  text: string;
  parsed: boolean;
  resolved: boolean;
  reason: string;
  /** Changes the verifier dropped because they may alter how the tests run (graded samples only). */
  tampering?: Tampering[];
  /** The server generated this sample but could not return it (`reason` says why). */
  notReturned?: true;
}
export interface PasskItem {
  id: string;
  task: string;
  n: number;
  c: number;
  parse_failures: number;
  /** Samples the server generated but could not return (llama.cpp on bytes that are not UTF-8): failures, counted in n (absent in older runs). */
  not_returned?: number;
  samples: PasskSample[];
}
export interface PasskResult {
  checkpoint: string;
  backend: string;
  n: number;
  pass_at: Record<string, number>;
  parse_failure_rate: number;
  /** Share of samples the server could not return (each a failure; absent in older runs). */
  not_returned_rate?: number;
  /** The distribution the samples were drawn from, as the backend ran it (absent in older runs). */
  sampler?: Record<string, unknown>;
  items: PasskItem[];
}

export interface PasskOptions {
  n: number;
  ks: number[];
  temperature: number;
  topP: number;
  maxTokens: number;
  seed: number;
  taskOf: (item: ProbeItem) => LoadedTask;
  /** Sandboxes of a task (jailed: these commands are model-generated). */
  leaseFor: (task: LoadedTask) => SandboxLease;
  /** Sandboxes that grade a task's states: no sample's command runs in them. */
  gradersFor: (task: LoadedTask) => GraderLease;
  /** Actions per rollout (1: the decisive action alone). */
  steps?: number;
  /** Restores the state before T* (patch, or replay of the earlier actions). */
  restore: (sb: Sandbox, item: ProbeItem, task: LoadedTask) => Promise<void>;
}

/** `probe passk`'s defaults: 16 samples per item of one action each, sampled as the protocol samples (protocol.ts). */
export const PASSK_DEFAULTS = {
  n: 16,
  ...SAMPLING,
  maxTokens: ACTION_MAX_TOKENS,
  seed: 0,
  steps: 1,
} as const satisfies Partial<PasskOptions>;

/** A sample's record of its verdict: the outcome, and what was dropped as tampering (new field, absent in older runs). */
function judged(verdict: Verdict, reason: string): Pick<PasskSample, 'resolved' | 'reason' | 'tampering'> {
  return { resolved: verdict.resolved, reason, tampering: verdict.tampering };
}

/**
 * A sample the server could not return: a failure that says why. Counting it as one keeps
 * n what was asked for; dropping it would leave the rest of the item's samples to stand for
 * it, and whether a sample can be returned is not independent of what it says.
 */
function notReturned(sample: Sample): PasskSample {
  return { text: '', parsed: false, resolved: false, reason: `not returned: ${sample.error}`, notReturned: true };
}

const UNCHANGED = 'changes no file at the T* state (which fails: it is the state before the decisive step)';

/** The sandbox tree's cumulative patch, or why it cannot be read. */
async function treeOf(sb: Sandbox): Promise<{ patch: string } | { error: string }> {
  try {
    return { patch: await sb.diff() };
  } catch (error) {
    if (error instanceof ProbeError) return { error: error.message };
    throw error;
  }
}

/** Parses one sampled action, applies it at the item's T* state and verifies (cached per distinct action). */
export async function judgeSample(
  text: string,
  item: ProbeItem,
  task: LoadedTask,
  options: Pick<PasskOptions, 'leaseFor' | 'gradersFor' | 'restore'>,
  /** Verdicts of this item's actions so far, by parsed action: a repeated sample is graded once (also while its first copy is still running). */
  cache: Map<string, Promise<PasskSample>>,
): Promise<PasskSample> {
  let action: TrajectoryAction;
  try {
    action = itemFormat(item).parse(text);
  } catch (error) {
    if (!(error instanceof UnparsableAction)) throw error;
    return { text, parsed: false, resolved: false, reason: `unparsable: ${error.message}` };
  }
  if (action.tool === 'submit' || action.tool === 'none') return { text, parsed: true, resolved: false, reason: 'changes nothing' };
  const key = JSON.stringify({ tool: action.tool, args: action.args });
  const known = cache.get(key);
  if (known) return { ...(await known), text };
  const grading = (async (): Promise<PasskSample> => {
    const ran = await options.leaseFor(task)(async (sb) => {
      await options.restore(sb, item, task);
      const before = await treeOf(sb);
      await runAction(sb, action, 60_000);
      return { before, after: await treeOf(sb) };
    });
    const { before, after } = ran;
    if ('error' in after) return { text, parsed: true, resolved: false, reason: `cannot read the candidate's changes: ${after.error}` };
    // A tree the action left as T*'s state is that state, which fails by the definition of T* (the first step whose
    // cumulative patch passes): grading it again would run the tests for a known answer. Only the tree is graded.
    if ('patch' in before && after.patch === before.patch) return { text, parsed: true, resolved: false, reason: UNCHANGED };
    const verdict = await verifyState(options.gradersFor(task), task, { base_commit: task.base_commit, patch: after.patch });
    return {
      text,
      parsed: true,
      ...judged(verdict, verdict.resolved ? 'resolved' : (verdict.reason ?? unresolvedCauses(verdict, undefined, 3))),
    };
  })();
  cache.set(key, grading);
  return grading;
}

/** One rollout of up to `steps` actions from the T* state, then the verifier. */
async function rollout(
  backend: CompletionBackend,
  item: ProbeItem,
  task: LoadedTask,
  options: PasskOptions,
  index: number,
): Promise<PasskSample> {
  const format = itemFormat(item);
  const turn = format.rollout!;
  const lease = options.leaseFor(task);
  return lease(async (sb) => {
    await options.restore(sb, item, task);
    let prompt = item.context;
    const texts: string[] = [];
    for (let step = 0; step < (options.steps ?? 1); step++) {
      const [sample] = await sampleOne(backend, {
        prompt,
        n: 1,
        temperature: options.temperature,
        topP: options.topP,
        maxTokens: options.maxTokens,
        stop: [...(step === 0 ? format.stops : turn.nextStops)],
        seed: options.seed * 1_000_003 + index * 1009 + step,
        label: `probe item ${item.id} (rollout ${index}, step ${step})`,
      });
      if (sample?.finishReason === 'error') {
        if (step === 0) return notReturned(sample);
        break; // what the earlier steps did is verified
      }
      const stop = sample?.stop;
      const text = (sample?.text ?? '') + (stop && (format.keepStop || step > 0) ? stop.replace(/\n$/, '') : '');
      texts.push(text);
      let action: TrajectoryAction;
      try {
        action = format.parse(text);
      } catch (error) {
        if (!(error instanceof UnparsableAction)) throw error;
        if (step === 0) return { text, parsed: false, resolved: false, reason: `unparsable: ${error.message}` };
        break; // a later unparsable step ends the rollout; what was done is verified
      }
      if (action.tool === 'submit') break;
      const ran = await runAction(sb, action, 60_000);
      prompt += text + turn.observe(ran.output, ran.exitCode);
    }
    const verdict = await gradeSandbox(sb, options.gradersFor(task), task);
    return {
      text: texts.join('\n'),
      parsed: true,
      ...judged(verdict, verdict.resolved ? `resolved after ${texts.length} step(s)` : (verdict.reason ?? 'failing')),
    };
  });
}

/** Items graded at once in a single-step pass@K: one's sandboxes run while the other's samples are drawn or graded. */
const ITEMS_IN_FLIGHT = 2;

export async function scorePassk(
  checkpoint: string,
  backend: CompletionBackend,
  items: ProbeItem[],
  options: PasskOptions,
  hooks: ItemHooks<PasskItem> = {},
): Promise<PasskResult> {
  const scored: PasskItem[] = [];
  const formats = new Map<string, ActionFormat>(items.map((item) => [item.id, itemFormat(item)]));
  if ((options.steps ?? 1) > 1) {
    for (const item of items) {
      if (!formats.get(item.id)!.rollout)
        throw new InputError(
          { file: item.source.file, field: 'format' },
          `--steps > 1 is supported for md+xml and mini-swe-agent items, not ${item.format} (probe ${item.id})`,
        );
    }
    for (const item of items) {
      scored.push(
        await memoized(hooks.memo, item.id, async () => {
          const task = options.taskOf(item);
          const judged: PasskSample[] = [];
          for (let i = 0; i < options.n; i++) judged.push(await rollout(backend, item, task, options, i));
          return passkItem(item, judged);
        }),
      );
      hooks.onItem?.(item.id);
    }
    return summarize(checkpoint, backend, options, scored);
  }
  // The next unfinished item samples while this one's samples are verified: the model and the sandboxes overlap.
  const sampling = new Map<string, Promise<Sample[]>>();
  const consumed = new Set<string>(); // items whose samples were taken: never sampled again
  const samplesOf = (item: ProbeItem) => {
    let pending = sampling.get(item.id);
    if (!pending) {
      const { stops } = formats.get(item.id)!;
      const request: SampleRequest = {
        prompt: item.context,
        n: options.n,
        temperature: options.temperature,
        topP: options.topP,
        maxTokens: options.maxTokens,
        stop: [...stops],
        seed: options.seed,
        label: `probe item ${item.id}`,
      };
      pending = sampleOne(backend, request);
      pending.catch(() => {}); // awaited (and its error raised) when its item's turn comes
      sampling.set(item.id, pending);
    }
    return pending;
  };
  // Items are graded ITEMS_IN_FLIGHT at a time (their sandboxes run while the model samples the next); results keep the items' order.
  const byIndex: PasskItem[] = new Array(items.length);
  let nextIndex = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && nextIndex < items.length) {
      const index = nextIndex++;
      const item = items[index]!;
      try {
        byIndex[index] = await gradeItem(item, index);
      } catch (error) {
        failed = true; // the other worker takes no further item
        throw error;
      }
      hooks.onItem?.(item.id);
    }
  };
  const gradeItem = (item: ProbeItem, index: number) =>
    memoized(hooks.memo, item.id, async () => {
      const samples = await samplesOf(item);
      sampling.delete(item.id);
      consumed.add(item.id);
      const following = items
        .slice(index + 1)
        .find((next) => hooks.memo?.get(next.id) === undefined && !sampling.has(next.id) && !consumed.has(next.id));
      if (following) void samplesOf(following);
      const task = options.taskOf(item);
      // The samples are graded at once, as many at a time as the task's sandbox pool holds; the order of the results is the samples'.
      const cache = new Map<string, Promise<PasskSample>>();
      const judged = await Promise.all(
        samples.map((s) =>
          s.finishReason === 'error'
            ? notReturned(s)
            : judgeSample(sampledActionText(formats.get(item.id)!, s), item, task, options, cache),
        ),
      );
      return passkItem(item, judged);
    });
  await Promise.all(Array.from({ length: Math.min(ITEMS_IN_FLIGHT, items.length) }, worker));
  return summarize(checkpoint, backend, options, byIndex);
}

function passkItem(item: ProbeItem, judged: PasskSample[]): PasskItem {
  return {
    id: item.id,
    task: item.task,
    n: judged.length,
    c: judged.filter((j) => j.resolved).length,
    parse_failures: judged.filter((j) => !j.parsed && !j.notReturned).length,
    not_returned: judged.filter((j) => j.notReturned).length,
    samples: judged,
  };
}

async function summarize(checkpoint: string, backend: CompletionBackend, options: PasskOptions, scored: PasskItem[]): Promise<PasskResult> {
  const pass_at: Record<string, number> = {};
  for (const k of options.ks.filter((k) => k <= options.n)) pass_at[String(k)] = meanPassAtK(scored, k);
  const total = scored.reduce((a, i) => a + i.n, 0);
  return {
    checkpoint,
    backend: backend.id,
    n: options.n,
    pass_at,
    parse_failure_rate: total ? scored.reduce((a, i) => a + i.parse_failures, 0) / total : 0,
    not_returned_rate: total ? scored.reduce((a, i) => a + (i.not_returned ?? 0), 0) / total : 0,
    ...(await samplerRecord(backend, options)),
    items: scored,
  };
}
