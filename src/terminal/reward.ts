/**
 * The reward file of a Terminal-Bench episode is the grader's, not the tests'.
 *
 * Harbor's tests write `/logs/verifier/reward.txt` (a number) or `reward.json` (metrics). They
 * run as the agent's uid, and so does whatever they run of the agent's: a file they create is
 * theirs to chmod (a read-only reward.txt makes test.sh's own `echo 0 >` fail) or to replace.
 * So root makes both files before the tests, empty, mode 0666, in a root-owned sticky
 * directory: the tests' uid can write them (in place, as `echo … >` and `open(…, "w")` do) and
 * create other files beside them, but not chmod them (only the owner may), nor remove, rename
 * or replace them (the sticky bit: only the owner of the file or of the directory may). They
 * are read after every process of that uid is gone, as the one that is not empty (reward.txt
 * first, as Harbor reads them).
 *
 * A write of the reward that fails is an error, never a pass: test.sh saying so in its output
 * (bash's `…/reward.txt: No space left on device`, Python's `[Errno 28] …: '…/reward.json'`)
 * leaves the episode ungraded, whatever the file holds.
 */

export const VERIFIER_DIR = '/logs/verifier';
const FILES = ['reward.txt', 'reward.json'] as const;

/** Root's command before the tests: a fresh /logs/verifier holding the two empty reward files. */
export const FRESH_REWARD_FILES = [
  `rm -rf ${VERIFIER_DIR} /logs/agent`,
  `mkdir -m 1777 ${VERIFIER_DIR}`,
  'mkdir -m 0777 /logs/agent',
  ...FILES.map((f) => `: > ${VERIFIER_DIR}/${f}`),
  `chmod 0666 ${FILES.map((f) => `${VERIFIER_DIR}/${f}`).join(' ')}`,
].join(' && ');

/** Prints the kind and the head of the first reward file that is not empty; nothing when both are. */
export const READ_REWARD = FILES.map(
  (f) =>
    `if [ -s ${VERIFIER_DIR}/${f} ]; then echo ${f.slice('reward.'.length)}; head -c ${f === 'reward.txt' ? 4096 : 65536} ${VERIFIER_DIR}/${f}; exit 0; fi`,
).join('\n');

/** An error writing one of the reward files, as bash, Python, coreutils print it. */
const FAILED_WRITE =
  /^(?=.*\/logs\/verifier\/reward\.(?:txt|json)\b)(?=.*(?:Permission denied|Read-only file system|No space left on device|Disk quota exceeded|File too large|Text file busy|Is a directory|Input\/output error)).*$/m;

/** The line of test.sh's output that says its reward was not written, if one does. */
export function failedRewardWrite(output: string): string | null {
  const line = FAILED_WRITE.exec(output)?.[0];
  return line === undefined ? null : line.trim().slice(0, 300);
}

/**
 * reward.txt holds a number; reward.json a number or an object of metrics: its `reward`, else
 * the least of its values (a multi-reward task is solved when every dimension is).
 */
export function parseReward(read: string): number | null {
  const [kind, ...rest] = read.split('\n');
  const body = rest.join('\n').trim();
  if (kind === 'txt') {
    const value = Number(body);
    return body !== '' && Number.isFinite(value) ? value : null;
  }
  if (kind === 'json') {
    try {
      const parsed = JSON.parse(body) as unknown;
      if (typeof parsed === 'number') return parsed;
      if (parsed && typeof parsed === 'object') {
        const metrics = parsed as Record<string, unknown>;
        const values = 'reward' in metrics ? [metrics.reward] : Object.values(metrics);
        if (values.length === 0 || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) return null;
        return Math.min(...(values as number[]));
      }
    } catch {
      return null;
    }
  }
  return null;
}
