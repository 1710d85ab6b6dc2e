/**
 * SWE-bench rows as published: the real row of pydicom__pydicom-1458 (SWE-agent's copy, and
 * the same row in Hugging Face's JSONL and Parquet form) loads unchanged, the harness's facts
 * fill in what it lacks, and in an image with the harness's layout the gold patch fixes the
 * FAIL_TO_PASS tests, the base does not, and SWE-agent's trajectory is rejected.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { replayTrajectory } from '../src/replay/replay.ts';
import { DockerSandbox } from '../src/sandbox/docker.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { harnessImageName } from '../src/swebench/image-name.ts';
import { repoSpec } from '../src/swebench/specs.ts';
import { testDirectives } from '../src/swebench/test-command.ts';
import { loadTaskFile, loadTasks } from '../src/verify/load-task.ts';
import { verifyState } from '../src/verify/verifier.ts';
import { SandboxPool } from '../src/sandbox/pool.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { tempDir } from './helpers/paths.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { swebenchTestImage } from './helpers/swebench-image.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'swebench');
const ROW = join(FIXTURES, 'pydicom__pydicom-1458');
const [FROM_JSON] = await loadTaskFile(`${ROW}.json`);
const task = FROM_JSON!;
const sameTask = ({ file: _file, ...rest }: LoadedTask) => rest;

/** A row of the fixture, changed as a test needs, as a one-line JSONL file. */
function rowFile(change: (row: Record<string, unknown>) => Record<string, unknown>): string {
  const { file: _f, ...row } = task;
  const file = join(tempDir(), 'row.jsonl');
  writeFileSync(file, `${JSON.stringify(change({ ...row }))}\n`);
  return file;
}
const without = (row: Record<string, unknown>, ...keys: string[]) =>
  Object.fromEntries(Object.entries(row).filter(([k]) => !keys.includes(k)));
/** The fields the harness derives for a published row, dropped again. */
const published = (row: Record<string, unknown>) => without(row, 'test_cmd', 'log_parser', 'image', 'workdir', 'test_timeout_s');

describe('SWE-bench rows as published', () => {
  it('the same row from JSON (lists), JSONL and Parquet (JSON-encoded lists) is the same task, every column kept', async () => {
    const [fromJsonl] = await loadTaskFile(`${ROW}.jsonl`);
    const [fromParquet] = await loadTasks(`${ROW}.parquet`);
    expect(sameTask(fromJsonl!)).toEqual(sameTask(task));
    expect(sameTask(fromParquet!)).toEqual(sameTask(task));
    expect(task.FAIL_TO_PASS).toEqual([
      'pydicom/tests/test_numpy_pixel_data.py::TestNumpy_GetPixelData::test_missing_required_elem_pixel_data_monochrome',
      'pydicom/tests/test_numpy_pixel_data.py::TestNumpy_GetPixelData::test_missing_conditionally_required_elem_pixel_data_color',
    ]);
    expect(task.PASS_TO_PASS).toHaveLength(159);
    expect(task).toMatchObject({
      repo: 'pydicom/pydicom',
      version: '2.2',
      environment_setup_commit: '0fa18d2a2179c92efc22200ed6b3689e66cecf92',
      hints_text: '',
      created_at: '2021-08-04T15:22:07Z',
      task_id: 'pydicom__pydicom-1458',
    });
  });

  it("what the row lacks comes from the harness: activate testbed, pytest -rA on the test patch's files, the harness's image", () => {
    expect(task.test_cmd).toBe(
      'source /opt/miniconda3/bin/activate\nconda activate testbed\npytest -rA pydicom/tests/test_numpy_pixel_data.py',
    );
    expect(task.log_parser).toBe('pytest');
    expect(task.workdir).toBe('/testbed');
    expect(task.image).toBe('swebench/sweb.eval.x86_64.pydicom_1776_pydicom-1458:latest');
  });

  it('image names as the harness builds them: namespaced with __ → _1776_, or local', async () => {
    expect(harnessImageName('Django__Django-11099')).toBe('swebench/sweb.eval.x86_64.django_1776_django-11099:latest');
    expect(harnessImageName('django__django-11099', null)).toBe('sweb.eval.x86_64.django__django-11099:latest');
    const [local] = await loadTaskFile(`${ROW}.json`, { imageNamespace: null });
    expect(local!.image).toBe('sweb.eval.x86_64.pydicom__pydicom-1458:latest');
    const [own] = await loadTaskFile(
      rowFile((r) => ({ ...published(r), image_name: 'jyangballin/swesmith.x86_64.pydicom_1776_pydicom.8da0b9b2' })),
    );
    expect(own!.image).toBe('jyangballin/swesmith.x86_64.pydicom_1776_pydicom.8da0b9b2');
  });

  it("django's tests are named by module, the rest by file; eval commands come before the tests", async () => {
    const patch =
      'diff --git a/tests/admin_views/tests.py b/tests/admin_views/tests.py\n--- a/tests/admin_views/tests.py\n+++ b/tests/admin_views/tests.py\ndiff --git a/tests/admin_views/fixtures/x.json b/tests/admin_views/fixtures/x.json\n';
    expect(testDirectives('django-modules', patch)).toEqual(['admin_views.tests']);
    expect(testDirectives('paths', patch)).toEqual(['tests/admin_views/tests.py']);
    const [django] = await loadTaskFile(
      rowFile((r) => ({ ...published(r), repo: 'django/django', version: '3.0', instance_id: 'django__django-11099', test_patch: patch })),
    );
    expect(django!.test_cmd.split('\n')).toEqual([
      'source /opt/miniconda3/bin/activate',
      'conda activate testbed',
      ...repoSpec('django/django')!.versions['3.0']!.eval_commands!,
      './tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views.tests',
    ]);
    expect(django!.log_parser).toBe('unittest');
  });

  it("a row's own test_cmd and log_parser win; a SWE-bench 5 harness parser name is translated", async () => {
    const [own] = await loadTaskFile(rowFile((r) => ({ ...published(r), test_cmd: 'python -m unittest -v', log_parser: 'unittest' })));
    expect(own).toMatchObject({ test_cmd: 'python -m unittest -v', log_parser: 'unittest' });
    const [v5] = await loadTaskFile(rowFile((r) => ({ ...published(r), log_parser: 'parse_log_pytest_options' })));
    expect(v5!.log_parser).toBe('pytest');
  });

  it('every gap of a row in one error naming file, line, fields and what to set', async () => {
    const gym = rowFile((r) => ({ ...published(r), repo: 'getmoto/moto', version: '4.1', base_commit: undefined }));
    const error = await loadTaskFile(gym).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    const message = (error as Error).message;
    expect(message).toMatch(new RegExp(`^${gym}:1: 3 problems in task pydicom__pydicom-1458: field "test_cmd": `));
    expect(message).not.toContain('\n');
    expect(message).toContain('field "test_cmd": missing, and SWE-bench\'s harness has no facts for repository "getmoto/moto"');
    expect(message).toContain('field "log_parser": missing');
    expect(message).toContain('field "base_commit": missing');
    expect(message).toContain('set "test_cmd" and "log_parser"');
    const sympy = rowFile((r) => ({ ...published(r), repo: 'sympy/sympy', version: '1.1' }));
    // sympy's own runner: its log parser, and its command with the test patch's files.
    const [sympyTask] = await loadTaskFile(sympy);
    expect(sympyTask!.log_parser).toBe('sympy');
    expect(sympyTask!.test_cmd).toMatch(/bin\/test -C --verbose pydicom\/tests\/test_numpy_pixel_data\.py$/);
    const version = rowFile((r) => ({ ...published(r), version: '9.9' }));
    await expect(loadTaskFile(version)).rejects.toThrow(
      `${version}:1: field "test_cmd": missing, and SWE-bench's harness knows no version "9.9" of pydicom/pydicom (known: 1.0, 1.1,`,
    );
    const smith = rowFile((r) => ({
      ...without(published(r), 'base_commit'),
      repo: 'swesmith/pydicom__pydicom.8da0b9b2',
      image_name: 'jyangballin/swesmith.x86_64.pydicom_1776_pydicom.8da0b9b2',
    }));
    await expect(loadTaskFile(smith)).rejects.toThrow(/field "base_commit": missing: SWE-smith names a task's bug by a branch/);
  });
});

/**
 * pydicom reads larger test files from an installed `pydicom-data` source (an entry point),
 * else downloads them: the one file the FAIL_TO_PASS tests read (SC_rgb.dcm, the bytes
 * pydicom's hashes.json pins) served as such a source, since the sandbox has no network.
 */
const SITE = '/usr/lib/python3/dist-packages';
const STORE_PY = `import os


class Store:
    """pydicom-data's interface: the path of a test file shipped here."""

    def get_path(self, name, dtype=None):
        path = os.path.join(os.path.dirname(__file__), name)
        if not os.path.isfile(path):
            raise ValueError(f"No file found named {name}")
        return path
`;
const OFFLINE_PYDICOM_DATA = [
  { path: `${SITE}/pydicom_data_offline/__init__.py`, content: STORE_PY },
  { path: `${SITE}/pydicom_data_offline/SC_rgb.dcm`, content: readFileSync(join(FIXTURES, 'SC_rgb.dcm')) },
  { path: `${SITE}/pydicom_data-0.0.0.dist-info/METADATA`, content: 'Metadata-Version: 2.1\nName: pydicom-data\nVersion: 0.0.0\n' },
  {
    path: `${SITE}/pydicom_data-0.0.0.dist-info/entry_points.txt`,
    content: '[pydicom.data.external_sources]\npydicom-data = pydicom_data_offline:Store\n',
  },
];

/**
 * The harness's image layout, built here: tagged with the name the task derives, so the
 * Docker sandbox finds it as it would a pulled SWE-bench image.
 */
describe.skipIf(skipWithoutDocker)("a published row in an image with the harness's layout", () => {
  /**
   * pydicom's tests need numpy; python3-requests makes the test data pydicom downloads from
   * GitHub (the harness's containers have a network, the sandbox none) fail at once instead
   * of after 21 s of retries per file: the tests that need it fail at every state alike.
   */
  // Built when a test first needs it: a skipped describe still runs its body, and a build started there without a daemon
  // would reject with nobody waiting.
  let building: ReturnType<typeof swebenchTestImage> | undefined;
  const image = () =>
    (building ??= swebenchTestImage({
      name: task.image!,
      gitTar: join(FIXTURES, 'pydicom-8da0b9b.git.tar'),
      packages: ['python3-numpy', 'python3-requests'],
      files: OFFLINE_PYDICOM_DATA,
    }));
  /** PASS_TO_PASS ids that embed the dataset builder's own paths (/n/fs/…): no log can name them. */
  const foreign = task.PASS_TO_PASS.filter((t) => t.includes('[/n/fs/'));

  it('the gold patch passes both FAIL_TO_PASS tests and breaks no PASS_TO_PASS test; the base fails them', async () => {
    const started = performance.now();
    const { built } = await image();
    const graders = new SandboxPool((t) => DockerSandbox.create(t), task, 1);
    try {
      const gold = await verifyState(graders.graders, task, { base_commit: task.base_commit, patch: task.patch! });
      expect(gold.status, gold.log.slice(-2000)).toBe('ok');
      expect(gold.failToPass).toEqual({ passed: task.FAIL_TO_PASS, failed: [], missing: [] });
      const base = await verifyState(graders.graders, task, { base_commit: task.base_commit, patch: '' });
      expect(base.status).toBe('ok');
      expect(base.resolved).toBe(false);
      expect(base.failToPass).toEqual({ passed: [], failed: task.FAIL_TO_PASS, missing: [] });
      // What the gold patch leaves failing failed at the base too: the 44 ids no log can name, and the tests of files only the network has.
      expect(gold.passToPass.failed).toEqual(base.passToPass.failed);
      expect(gold.passToPass.missing).toEqual(base.passToPass.missing);
      expect(gold.passToPass.missing).toEqual(expect.arrayContaining(foreign));
      expect(gold.passToPass.passed.length).toBeGreaterThan(60);
      console.info(
        `PASS_TO_PASS at gold: ${gold.passToPass.passed.length} passed, ${gold.passToPass.failed.length} failed, ${gold.passToPass.missing.length} not in the log (${foreign.length} never nameable)`,
      );
    } finally {
      await graders.close();
    }
    console.info(
      `gold + base in the harness layout: ${((performance.now() - started) / 1000).toFixed(1)}s (image ${built ? 'built' : 'cached'})`,
    );
  }, 600_000);

  it.skipIf(!hasRealData)(
    "SWE-agent's trajectory is rejected: its patch fails both FAIL_TO_PASS tests",
    async () => {
      const started = performance.now();
      await image();
      const trajectory = importTrajectory(real('swe-agent/pydicom__pydicom-1458.traj'));
      const result = await replayTrajectory(trajectory, task, {
        openSandbox: (t) => DockerSandbox.create(t),
        sandboxName: 'docker',
        concurrency: 2,
        repeats: 1,
      });
      expect(result.rejected).not.toBeNull();
      expect(result.decisiveStep).toBeNull();
      expect(result.base.failToPass.failed).toEqual(task.FAIL_TO_PASS);
      expect(result.final).not.toBeNull();
      expect(result.final!.resolved).toBe(false);
      expect(result.final!.failToPass.failed).toEqual(task.FAIL_TO_PASS);
      // The reason names the cause; the ids no log can name are counted as such, not blamed on the trajectory.
      expect(result.rejected).toMatch(/^final state does not pass: 2 FAIL_TO_PASS still failing: /);
      expect(result.rejected).toMatch(/not in the log \(\d+ PASS_TO_PASS; all \d+ were already not in the base state's log\)/);
      expect(result.rejected).toMatch(/; 22 PASS_TO_PASS failing as at the base \(the environment's, not the candidate's\): /);
      expect(result.rejected).not.toMatch(/broken/);
      expect(result.rejected!.length).toBeLessThan(2500); // 8,802 characters before, every name listed;
      expect(result.missingAtBase?.passToPass).toEqual(expect.arrayContaining(foreign));
      console.info(`SWE-agent replay in the harness layout: ${((performance.now() - started) / 1000).toFixed(1)}s`);
    },
    600_000,
  );
});

describe('the CLI takes the dataset file itself', () => {
  it('build --tasks: a row the harness cannot complete is exit 2, one line naming every field', () => {
    const gym = rowFile((r) => ({ ...published(r), repo: 'getmoto/moto', version: '4.1', base_commit: undefined }));
    expectOneLineError(
      runProbe(['build', '--trajectories', tempDir(), '--tasks', gym, '--out', join(tempDir(), 'p.jsonl')]),
      new RegExp(
        `^probe: ${gym}:1: 3 problems in task pydicom__pydicom-1458: field "test_cmd": .*; field "log_parser": .*; field "base_commit": missing$`,
      ),
    );
  });

  it('build --tasks FILE.parquet loads the published row (and stops at the empty trajectory directory)', () => {
    const empty = tempDir();
    expectOneLineError(
      runProbe(['build', '--trajectories', empty, '--tasks', `${ROW}.parquet`, '--out', join(tempDir(), 'p.jsonl')]),
      new RegExp(`^probe: ${empty}: holds no trajectory files$`),
    );
  });

  it.skipIf(skipWithoutDocker || !hasRealData)(
    'replay --image-namespace none: the image the harness builds locally is the one asked for',
    () => {
      const run = runProbe([
        'replay',
        real('swe-agent/pydicom__pydicom-1458.traj'),
        '--task',
        `${ROW}.jsonl`,
        '--sandbox',
        'docker',
        '--image-namespace',
        'none',
      ]);
      expect(run.code, run.stderr).not.toBe(0);
      expect(run.stderr).toContain('image sweb.eval.x86_64.pydicom__pydicom-1458:latest');
    },
  );
});
