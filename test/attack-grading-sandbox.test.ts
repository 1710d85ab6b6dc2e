/**
 * Issue 36: a state is graded in a sandbox the candidate never ran in, and nothing written
 * in one grading reaches the next. The image here is one a task set might well ship: a
 * directory owned by another user and writable by anyone, on the image's PYTHONPATH (a
 * non-root `pip install --target`, a shared cache). Root without capabilities cannot take
 * that write away, so before this issue a candidate's command — or the candidate's code, run
 * by the tests — left a sitecustomize there, and the next test run in that container loaded
 * it. Every case gets reward 0 here; on the code before it, each was graded as resolved.
 */
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_IMAGE } from '../src/sandbox/docker.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { SandboxPool } from '../src/sandbox/pool.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { gradeSandbox, verifyState } from '../src/verify/verifier.ts';
import { commitImage, skipWithoutDocker } from './helpers/docker.ts';
import { PY } from './helpers/verifier-attacks.ts';

const LEAKY_IMAGE = 'probe-test-leaky-site:latest';
const SITE = '/opt/shared-site';
const GRADED = [...PY.FAIL_TO_PASS, ...PY.PASS_TO_PASS];
/** Prints a pass for every graded test and ends the test run with success: at start-up, in a pytest process only. */
const FORGE = [
  'import os, sys',
  'if "pytest" in " ".join(sys.argv) or any(a.startswith("tests") for a in sys.argv):',
  `    for t in ${JSON.stringify(GRADED)}:`,
  '        print("PASSED " + t)',
  '    sys.stdout.flush()',
  '    os._exit(0)',
].join('\n');
const plantCommand = `cat > ${SITE}/sitecustomize.py <<'PROBE_EOF'\n${FORGE}\nPROBE_EOF`;

/** The shop task with its repository in the leaky image. */
const task: LoadedTask = { ...PY, image: LEAKY_IMAGE };

/** The base image with a directory anyone may write, owned by another user, first on the image's PYTHONPATH. */
async function buildLeakyImage(): Promise<void> {
  await commitImage(
    BASE_IMAGE,
    LEAKY_IMAGE.split(':')[0]!,
    async (container) => {
      const exec = await container.exec({
        Cmd: ['bash', '-c', `mkdir -p ${SITE} && chown 4321:4321 ${SITE} && chmod 0777 ${SITE}`],
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = await exec.start({});
      stream.resume();
      await new Promise((resolve) => stream.on('end', resolve));
      expect((await exec.inspect()).ExitCode).toBe(0);
    },
    [`ENV PYTHONPATH=${SITE}`],
  );
}

describe.skipIf(skipWithoutDocker)(
  'grading in a sandbox the candidate never ran in (docker, an image with a place anyone can write)',
  () => {
    let pool: SandboxPool;
    beforeAll(async () => {
      await buildLeakyImage();
      pool = new SandboxPool((t) => openSandbox('docker', t), task, 1);
    }, 300_000);
    afterAll(async () => {
      await pool?.close();
      await new Docker()
        .getImage(LEAKY_IMAGE)
        .remove({ force: true })
        .catch(() => {});
    });

    it('the forged start-up file does pass the tests where it is loaded: the attack is real', async () => {
      // The same file in the task's own tree, on PYTHONPATH, is what the image's directory would hold.
      const withPlant = { ...task, image: undefined, test_cmd: `PYTHONPATH=plant ${task.test_cmd}` } as LoadedTask;
      const plain = new SandboxPool((t) => openSandbox('docker', t), withPlant, 1);
      try {
        const ran = await plain.lease(async (sb) => {
          await sb.exec(`mkdir -p plant && ${plantCommand.replaceAll(SITE, 'plant')}`, { timeoutMs: 30_000 });
          return sb.exec(withPlant.test_cmd, { timeoutMs: 120_000 });
        });
        expect(ran.output).toContain(`PASSED ${PY.FAIL_TO_PASS[0]}`);
        expect(ran.exitCode).toBe(0);
      } finally {
        await plain.close();
      }
    });

    it("the image's place anyone can write is read-only to the sandbox user", async () => {
      const r = await pool.lease((sb) => sb.exec(`touch ${SITE}/x; echo "exit $?"`, { timeoutMs: 30_000 }));
      expect(r.output).toMatch(/Read-only file system/);
      expect(r.output).toContain('exit 1');
    });

    it("a candidate's command that writes a start-up file outside the tree is not graded as resolved", async () => {
      const verdict = await pool.lease(async (sb) => {
        await sb.restore({ base_commit: task.base_commit, patch: '' });
        await sb.exec(plantCommand, { timeoutMs: 30_000 });
        return gradeSandbox(sb, pool.graders, task);
      });
      expect(verdict.status).toBe('ok');
      expect(verdict.resolved, verdict.log).toBe(false);
    });

    it("what the candidate's code writes outside the tree while the tests run does not reach the next grading", async () => {
      // An edit of a tracked source file (graded: it is the code under test) that plants the forged start-up file when imported.
      const planting = [
        'diff --git a/cart/__init__.py b/cart/__init__.py',
        '--- a/cart/__init__.py',
        '+++ b/cart/__init__.py',
        '@@ -0,0 +1,5 @@',
        '+try:',
        `+    open(${JSON.stringify(`${SITE}/sitecustomize.py`)}, "w").write(${JSON.stringify(FORGE)})`,
        '+except OSError:',
        '+    pass',
        '+',
        '',
      ].join('\n');
      const state = { base_commit: task.base_commit, patch: planting };
      const first = await verifyState(pool.graders, task, state);
      expect(first.status, first.reason).toBe('ok');
      expect(first.resolved).toBe(false);
      // The same grader again (the pool holds one): a clean state must fail as it does at the base.
      const second = await verifyState(pool.graders, task, { base_commit: task.base_commit, patch: '' });
      expect(second.status).toBe('ok');
      expect(second.resolved, second.log).toBe(false);
    });
  },
);
