/**
 * Whether this process has been told to stop. Handlers that keep the process alive after
 * SIGINT/SIGTERM (closing Docker containers, cancelling server requests) note it here, so
 * work cut short by the shutdown is never saved as a result: a sandbox killed mid-test
 * would otherwise read as "not resolved" and be skipped on resume.
 */
let signal: NodeJS.Signals | undefined;

export function noteInterrupt(received: NodeJS.Signals): void {
  signal ??= received;
}

export function interruptedBy(): NodeJS.Signals | undefined {
  return signal;
}
