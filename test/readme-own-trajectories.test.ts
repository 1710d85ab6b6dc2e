/**
 * The README's "Your own trajectories" block, run as a new user would run it: the shell block
 * copied out of README.md as it stands, in an empty directory beside `../shared`, with `npx probe`
 * being this checkout's bin. A change to the README that breaks the path breaks this test.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';
import { hasRealData, REAL_DATA } from './helpers/shared-data.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';

/** The first ```sh block under a README heading. */
function readmeBlock(heading: string): string {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n## ${heading}\n`);
  expect(start, `README has a "## ${heading}" section`).toBeGreaterThan(-1);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start));
  expect(block, `a sh block under "## ${heading}"`).not.toBeNull();
  return block![1]!;
}

describe.skipIf(skipWithoutBwrap || !hasRealData)("the README's own-trajectories path", () => {
  it('runs as written on the real mini-swe-agent trajectory: a task record, T* = step 4, one probe item, BPB on it', () => {
    // A working directory as a user has it: `test/` of the checkout beside them, `../shared` one level up.
    const root = tempDir('probe-readme-');
    const cwd = join(root, 'work');
    mkdirSync(cwd);
    symlinkSync(join(REAL_DATA, '..', '..'), join(root, 'shared'));
    symlinkSync(join(REPO_ROOT, 'test'), join(cwd, 'test'));
    const script = `set -euo pipefail\nnpx() { shift; node ${JSON.stringify(PROBE_BIN)} "$@"; }\n${readmeBlock('Your own trajectories')}`;
    const run = spawnSync('bash', ['-c', script], { cwd, encoding: 'utf8', timeout: 300_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/task\.json: task swe-agent__test-repo-1, base_commit [0-9a-f]{12}, 1 FAIL_TO_PASS, 1 PASS_TO_PASS/);
    expect(run.stderr).toMatch(/FAIL_TO_PASS {2}1 failing as they should/);
    expect(run.stderr).toMatch(/PASS_TO_PASS {2}1 of 1 passing/);
    expect(run.stderr).toContain('T* = step 4');
    expect(run.stderr).toContain('1 probe items from 1 of 1 trajectories');
    expect(run.stderr).toMatch(/probe mcq leaves out the 1 item with fewer than 3 distractors; --distractor-ckpt DIR/);
    expect(run.stderr).toMatch(/Decisive-Action BPB on 1 probe items/);
    const task = JSON.parse(readFileSync(join(cwd, 'my-task', 'task.json'), 'utf8')) as Record<string, unknown>;
    // The plain tree commits to the fixture's recorded base commit: the same files, the same commit.
    const fixture = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/tasks/missing-colon/task.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(task.base_commit).toBe(fixture.base_commit);
    expect(task.test_patch).toBe(fixture.test_patch);
    const item = JSON.parse(readFileSync(join(cwd, 'my-probes', 'mine.jsonl'), 'utf8').trim()) as {
      decisive_step: number;
      distractors: unknown[];
    };
    expect(item.decisive_step).toBe(4);
    expect(item.distractors).toEqual([]);

    // What the README says probe mcq does with such a set: one line naming the file and the way to more distractors.
    const mcq = runProbe([
      'mcq',
      '--probes',
      join(cwd, 'my-probes', 'mine.jsonl'),
      '--ckpt',
      join(REPO_ROOT, 'checkpoints', 'ngram-agent'),
    ]);
    expectOneLineError(mcq, /mine\.jsonl: none of its 1 items has the 3 distractors MCQ asks with .*--distractor-ckpt DIR/);
    expect(existsSync(join(cwd, 'my-task', 'repo', '.git'))).toBe(false); // the user's tree is read, never written
  }, 320_000);
});
