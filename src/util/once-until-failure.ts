/**
 * An asynchronous value asked for once: the first call starts `make`, later calls share its
 * promise while it holds, and a failure is forgotten so the next call tries again (a server
 * that was down is asked anew, not refused for good).
 */
export function onceUntilFailure<T>(make: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= make().catch((error: unknown) => {
      pending = undefined;
      throw error;
    }));
}
