/**
 * One agent step as one completion: sample until the step's action is complete. Where a
 * stop string ended the sample but closed no action (a fence around prose, the `/>` of
 * some other tag), sampling goes on from there within the same token budget; a stop that
 * left a wrong action, a length or an end of text ends the step as it is.
 */
import { deriveSeed } from '../util/rng.ts';
import { sampleOne } from './single.ts';
import type { CompletionBackend, Sample } from './types.ts';

/** What a format found in the text so far: an action ending at `end`, or none (`complete`: the text cannot become one). */
export type FoundAction = { ok: true; end: number } | { ok: false; complete: boolean };

export interface StepSampling {
  temperature: number;
  topP: number;
  /** New tokens for the whole step. */
  maxTokens: number;
  /** The episode's seed; each part of each step derives its own. */
  seed: number;
  /** The episode, as messages about the server's answers name it (its step is added). */
  label?: string;
}

export interface CompletedStep<F> {
  /** The step as written, cut where its action ends (all of it when it has none). */
  text: string;
  found: F;
  finish: 'action' | Sample['finishReason'];
  tokens: number;
  modelMs: number;
  /** Why the server returned nothing for the step's last part (finish `error`). */
  serverError?: string;
}

export async function completeStep<F extends FoundAction>(
  backend: CompletionBackend,
  prompt: string,
  sampling: StepSampling,
  stepIndex: number,
  action: { stops: readonly string[]; find: (text: string) => F; continueAfterStop: boolean },
): Promise<CompletedStep<F>> {
  let text = '';
  let tokens = 0;
  let modelMs = 0;
  for (let part = 0; ; part++) {
    const started = performance.now();
    const [sample] = await sampleOne(backend, {
      prompt: prompt + text,
      n: 1,
      temperature: sampling.temperature,
      topP: sampling.topP,
      maxTokens: sampling.maxTokens - tokens,
      stop: [...action.stops],
      seed: deriveSeed(sampling.seed, stepIndex, part),
      label: `${sampling.label ? `${sampling.label}, ` : ''}step ${stepIndex}${part > 0 ? ` (part ${part})` : ''}`,
    });
    modelMs += performance.now() - started;
    tokens += sample?.tokens.length ?? 0;
    text += (sample?.text ?? '') + (sample?.stop ?? '');
    const found = action.find(text);
    if (found.ok) return { text: text.slice(0, found.end), found, finish: 'action', tokens, modelMs };
    const finish = sample?.finishReason ?? 'eos';
    if (finish === 'error') return { text, found, finish, tokens, modelMs, serverError: sample!.error! };
    if (found.complete || finish !== 'stop' || !action.continueAfterStop || tokens >= sampling.maxTokens) {
      return { text, found, finish, tokens, modelMs };
    }
  }
}
