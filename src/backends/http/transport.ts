/**
 * Talking to inference servers: one `Endpoint` per replica URL (a concurrency limit, a
 * per-request timeout, retries with exponential backoff on 429, 5xx and dropped
 * connections, `Retry-After` honoured), and an `EndpointPool` over the replicas of one
 * checkpoint (least-loaded dispatch; a replica that keeps failing is taken out for a
 * cool-down and tried again later). Every request can be cancelled with an AbortSignal.
 */
import { ProbeError } from '../../errors.ts';
import { Semaphore } from '../../util/semaphore.ts';

/** The server answered with an error status that retrying will not fix (4xx other than 429). */
export class HttpStatusError extends ProbeError {
  constructor(
    readonly url: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${url} answered HTTP ${status}: ${body.slice(0, 500)}`);
  }
}

/**
 * The server could not turn what the model generated into an answer, and says so the same
 * way on every attempt: llama.cpp answers HTTP 500 "The model produced output that does not
 * match the expected … format" when a sampled byte sequence is not valid UTF-8. Retrying
 * with the same seed gives the same 500, so it is raised at once (not retried, and the
 * replica is not taken out of the pool); the backend asks for the samples one at a time.
 */
export class ServerOutputError extends HttpStatusError {}

/** Whether an error answer is one of those (`ServerOutputError`). */
function isModelOutputRefusal(status: number, body: string): boolean {
  return status === 500 && /produced output that does not match the expected/i.test(body);
}

/** A replica could not be reached, or kept failing, after every retry. */
export class EndpointFailure extends ProbeError {}

export interface EndpointOptions {
  /** Requests in flight at once to this replica. */
  concurrency: number;
  timeoutMs: number;
  /** Attempts after the first on 429, 5xx, timeouts and connection errors. */
  retries: number;
  /** First backoff; doubled per attempt, with jitter. */
  backoffMs: number;
}

export const DEFAULT_ENDPOINT_OPTIONS: EndpointOptions = { concurrency: 8, timeoutMs: 600_000, retries: 4, backoffMs: 250 };

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

export class Endpoint {
  private readonly slots: Semaphore;

  constructor(
    readonly baseUrl: string,
    readonly options: EndpointOptions = DEFAULT_ENDPOINT_OPTIONS,
  ) {
    this.slots = new Semaphore(options.concurrency);
  }

  /** Requests in flight or waiting for a slot: what least-loaded dispatch compares. */
  get load(): number {
    return this.slots.load;
  }

  /** POSTs (or GETs, without a body) JSON and returns the parsed answer, retrying what can be retried. */
  async json<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}${path}`;
    await this.slots.acquire();
    try {
      let lastError: unknown;
      for (let attempt = 0; attempt <= this.options.retries; attempt++) {
        if (attempt > 0) await sleep(this.backoff(attempt, lastError), signal);
        try {
          const response = await fetch(url, {
            method: body === undefined ? 'GET' : 'POST',
            headers: body === undefined ? {} : { 'content-type': 'application/json' },
            body: body === undefined ? undefined : JSON.stringify(body),
            signal: signal
              ? AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)])
              : AbortSignal.timeout(this.options.timeoutMs),
          });
          const text = await response.text();
          if (response.ok) {
            try {
              return JSON.parse(text) as T;
            } catch {
              // A body cut short by a dropped connection: retry like the drop itself.
              lastError = new EndpointFailure(`${url} answered ${text.length} bytes that are not JSON`);
              continue;
            }
          }
          if (isModelOutputRefusal(response.status, text)) throw new ServerOutputError(url, response.status, text);
          const error = new HttpStatusError(url, response.status, text);
          if (!RETRYABLE_STATUS.has(response.status)) throw error;
          lastError = Object.assign(error, { retryAfterMs: retryAfter(response.headers.get('retry-after')) });
        } catch (error) {
          if (signal?.aborted) throw signal.reason;
          if (error instanceof ServerOutputError) throw error;
          if (error instanceof HttpStatusError && !RETRYABLE_STATUS.has(error.status)) throw error;
          lastError = error;
        }
      }
      throw new EndpointFailure(`${url} failed after ${this.options.retries + 1} attempts: ${describe(lastError)}`, { cause: lastError });
    } finally {
      this.slots.release();
    }
  }

  private backoff(attempt: number, lastError: unknown): number {
    const hinted = (lastError as { retryAfterMs?: number } | undefined)?.retryAfterMs;
    if (hinted !== undefined) return hinted;
    const base = this.options.backoffMs * 2 ** (attempt - 1);
    return base / 2 + (Math.random() * base) / 2;
  }
}

function retryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) ? Math.min(60_000, seconds * 1000) : undefined;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

export interface PoolOptions {
  /** How long a failed replica sits out before it is tried again. */
  cooldownMs: number;
}

/**
 * Replicas serving one checkpoint. Each request goes to the least-loaded healthy replica
 * (the least recently used among equals);
 * a replica whose request fails after its own retries is taken out for `cooldownMs` and
 * the request moves to another. When every replica is out, the request waits for the
 * first to come back; it fails only when each replica has failed it once.
 */
export class EndpointPool {
  private readonly downUntil = new Map<Endpoint, number>();
  /** When each replica was last given a request: ties in load go to the least recently used. */
  private readonly lastUsed = new Map<Endpoint, number>();
  private dispatched = 0;

  constructor(
    readonly endpoints: Endpoint[],
    private readonly options: PoolOptions = { cooldownMs: 30_000 },
  ) {
    if (endpoints.length === 0) throw new ProbeError('an endpoint pool needs at least one URL');
  }

  get urls(): string[] {
    return this.endpoints.map((e) => e.baseUrl);
  }

  /** Requests all replicas take at once. */
  get capacity(): number {
    return this.endpoints.reduce((a, e) => a + e.options.concurrency, 0);
  }

  /** Healthy replicas, least loaded first. */
  private healthy(now: number, exclude: Set<Endpoint>): Endpoint[] {
    return this.endpoints
      .filter((e) => !exclude.has(e) && (this.downUntil.get(e) ?? 0) <= now)
      .sort((a, b) => a.load - b.load || (this.lastUsed.get(a) ?? -1) - (this.lastUsed.get(b) ?? -1));
  }

  async json<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    return (await this.answer<T>(path, body, signal)).answer;
  }

  /** `json`, with the replica that answered: what a message about the answer names. */
  async answer<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<{ answer: T; url: string }> {
    const tried = new Set<Endpoint>();
    let lastError: unknown;
    while (tried.size < this.endpoints.length) {
      let candidates = this.healthy(Date.now(), tried);
      if (candidates.length === 0) {
        // Every untried replica is cooling down: wait for the first to come back.
        const back = Math.min(...this.endpoints.filter((e) => !tried.has(e)).map((e) => this.downUntil.get(e) ?? 0));
        await sleep(Math.max(0, back - Date.now()), signal);
        candidates = this.healthy(Date.now(), tried);
        if (candidates.length === 0) continue;
      }
      const endpoint = candidates[0]!;
      tried.add(endpoint);
      this.lastUsed.set(endpoint, this.dispatched++);
      try {
        const result = await endpoint.json<T>(path, body, signal);
        this.downUntil.delete(endpoint);
        return { answer: result, url: endpoint.baseUrl };
      } catch (error) {
        if (!(error instanceof EndpointFailure)) throw error;
        lastError = error;
        this.downUntil.set(endpoint, Date.now() + this.options.cooldownMs);
      }
    }
    throw lastError instanceof Error ? lastError : new EndpointFailure(String(lastError));
  }
}
