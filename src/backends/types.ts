/** The one completion interface every probe talks to (design.md). */
import type { BosUse } from './bos.ts';

/** What a request is for, named in messages about its answer (a probe item, an episode's step); not part of what is asked, so not of the cache key. */
export interface RequestLabel {
  label?: string;
}

export interface ScoreRequest extends RequestLabel {
  context: string;
  continuations: string[];
}

export interface ScoreResult {
  /** Natural-log probability of each continuation token. */
  tokenLogprobs: number[];
  /** Token ids scored (after the context/continuation boundary rule). */
  tokens: number[];
  /** UTF-8 bytes of the scored continuation (including whitespace moved from the context). */
  bytes: number;
  /** Every continuation token was the argmax at its position. */
  greedy: boolean;
  /** The context was cut on the left to fit the checkpoint's window. */
  truncated: boolean;
  /** Per continuation token, the most likely token and its log-prob, where the backend computes them (ONNX). */
  argmax?: Array<{ token: number; logprob: number }>;
}

export interface SampleRequest extends RequestLabel {
  prompt: string;
  n: number;
  /** 0 means greedy. */
  temperature: number;
  topP: number;
  topK?: number;
  maxTokens: number;
  /** Generation ends before the first occurrence of any of these; the text excludes it. */
  stop: string[];
  seed: number;
}

export interface Sample {
  text: string;
  tokens: number[];
  /** Sum of the sampled tokens' log-probabilities under the sampling distribution's logits (before temperature). */
  logprob: number;
  /** `error`: the server generated it but could not return it (`error` says why); its text is empty and it counts as a failure. */
  finishReason: 'stop' | 'length' | 'eos' | 'error';
  /** The stop string that ended generation, when `finishReason` is `stop`. */
  stop?: string;
  /** Why the server returned no sample, when `finishReason` is `error`. */
  error?: string;
  truncated: boolean;
  /** Per sampled token, where the backend reports them. */
  tokenLogprobs?: number[];
  /** Per sampled token, the most likely token there and its log-prob, where asked (`SampleWatch.argmax`: probe serve's top_logprobs). */
  argmax?: Array<{ token: number; logprob: number }>;
}

export interface CompletionBackend {
  /** Stable; goes into cache keys and reports. */
  readonly id: string;
  /** What computes the answers, in words, for the run record (probe in process and from which graph, or a server of which kind). */
  readonly engine?: string;
  encode(text: string): number[];
  score(requests: ScoreRequest[]): Promise<ScoreResult[][]>;
  sample(requests: SampleRequest[]): Promise<Sample[][]>;
  /**
   * Requests worth having in flight at once (a server: its replicas' slots together); absent: 1.
   * Scoring loops submit up to this many items at a time; the backend still bounds what it runs.
   */
  readonly concurrency?: number;
  /**
   * The sampling distribution a request is drawn from, as this backend runs it: the stages in
   * order and every parameter that shapes it, defaults included (results record it, so two
   * engines' samples can be told to come from the same distribution or not).
   */
  samplerSettings?(request: Pick<SampleRequest, 'temperature' | 'topP' | 'topK'>): Promise<Record<string, unknown> | undefined>;
  /** Whether a BOS token goes first, as resolved for this checkpoint (a server may need a request to say). */
  bos?(): Promise<BosUse | undefined>;
  /**
   * What this backend knows its answers must be beyond their shape (a server's: the
   * checkpoint's vocabulary and spelling, http/answer-checks.ts): the first problem with
   * `answer`, or undefined. The result cache serves and stores only answers that pass, so an
   * entry written before a check existed is computed again rather than trusted.
   */
  scoreAnswerProblem?(request: ScoreRequest, answer: ScoreResult[]): string | undefined;
  sampleAnswerProblem?(request: SampleRequest, answer: Sample[]): string | undefined;
  close(): Promise<void>;
}
