/** Published trajectory datasets: real rows read into trajectories, and `probe build` over a dataset file. */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteFile } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import type { Row } from '../src/datasets/rows.ts';
import { trajectoryRows, type TrajectoryRow, type TrajectoryRowCounts } from '../src/trajectories/datasets/trajectory-rows.ts';
import { buildProbeSet, type TrajectoryBuild } from '../src/pipeline/build.ts';
import type { ProbeItem } from '../src/schema/probe-item.ts';
import { TrajectoryBuildSchema } from '../src/schema/build-progress.ts';
import { UnitLog } from '../src/store/unit-log.ts';
import { loadTasks } from '../src/verify/load-task.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { FIXTURE_TASKS, fixtureTask } from './helpers/tasks.ts';
import { taskForRow } from '../src/trajectories/datasets/row-task.ts';

const DATASETS = join(import.meta.dirname, 'fixtures', 'trajectory-datasets');
const fixtureRow = (name: string): Row => JSON.parse(readFileSync(join(DATASETS, `${name}.jsonl`), 'utf8')) as Row;

async function rowsOf(file: string, includeUnresolved = false): Promise<{ rows: TrajectoryRow[]; counts: TrajectoryRowCounts }> {
  const counts: TrajectoryRowCounts = { rows: 0, unresolved: 0 };
  const rows: TrajectoryRow[] = [];
  for await (const row of trajectoryRows(file, { includeUnresolved }, counts)) rows.push(row);
  return { rows, counts };
}

function jsonl(rows: Row[]): string {
  const file = join(tempDir(), 'dataset.jsonl');
  writeFileSync(file, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return file;
}

describe('real dataset rows as trajectories', () => {
  it('nebius/SWE-agent-trajectories: SWE-agent history rows, the command block of each model turn as its action', async () => {
    const file = join(DATASETS, 'nebius-swe-agent.jsonl');
    const {
      rows: [row],
    } = await rowsOf(file);
    expect(row!.instanceId).toBe('tomerfiliba__plumbum-366_17');
    expect(row!.name).toBe('nebius-swe-agent.jsonl#0');
    const t = row!.trajectory();
    expect(t.format).toBe('swe-agent');
    expect(t.source).toBe(`${file}#0`);
    expect(t.problemStatement).toMatch(/^SyntaxError in plumbum\/cli\/image\.py\nimage\.py contains the line/);
    expect(t.steps.map((s) => s.action.kind)).toEqual(['bash', 'search', 'view', 'edit', 'bash', 'submit']);
    expect(t.steps[3]!.action).toMatchObject({
      text: 'edit 5:5\nimport plumbum.cli as cli\nend_of_edit\n',
      tool: 'swe-agent',
      args: { start: 5, end: 5, replacement: 'import plumbum.cli as cli' },
    });
    expect(t.steps[3]!.thought).toMatch(/Let's edit the file to fix this issue\.$/);
    expect(t.steps[1]!.observation).toMatch(/^Found 1 matches for "image\.py" in \/plumbum\/plumbum:/);
    expect(t.preamble[0]!.content).toMatch(/^SETTING: You are an autonomous programmer/); // nebius keeps it in system_prompt
    expect(t.submission).toContain('-import . as cli\n+import plumbum.cli as cli\n');
    // Some exports store the list as a JSON string: the same trajectory.
    const published = fixtureRow('nebius-swe-agent');
    const {
      rows: [stringified],
    } = await rowsOf(jsonl([{ ...published, trajectory: JSON.stringify(published.trajectory) }]));
    expect(stringified!.trajectory().steps).toEqual(t.steps);
  });

  it('SWE-Gym OpenHands trajectories: tool calls as OpenHands actions, each observed by its tool reply', async () => {
    const {
      rows: [row],
    } = await rowsOf(join(DATASETS, 'swe-gym-openhands.jsonl'));
    expect(row!.instanceId).toBe('python__mypy-15976_0');
    const t = row!.trajectory();
    expect(t.format).toBe('openhands');
    expect(t.steps).toHaveLength(21);
    const edit = t.steps[17]!;
    expect(edit.action).toMatchObject({
      kind: 'edit',
      tool: 'str_replace_editor',
      args: {
        command: 'str_replace',
        path: '/workspace/python__mypy__1.6/mypy/plugins/attrs.py',
        old_str: '    if slots:\n        _add_slots(ctx, attributes)',
      },
    });
    // The action text is the arguments as the model wrote them.
    expect(edit.action.text).toMatch(/^\{"command": "str_replace", "path": "\/workspace\/python__mypy__1\.6\/mypy\/plugins\/attrs\.py"/);
    expect(edit.observation).toMatch(/^OBSERVATION:\nThe file \/workspace\/python__mypy__1\.6\/mypy\/plugins\/attrs\.py has been edited/);
    expect(t.steps[5]!.action).toMatchObject({
      kind: 'bash',
      args: { command: 'python3 /workspace/python__mypy__1.6/reproduce_error.py' },
    });
    // One turn, two calls: the turn's words are the first call's thought only.
    expect(t.steps[7]!.thought).toMatch(/^The mypy type checker has reported the expected errors/);
    expect(t.steps[8]!.thought).toBe('');
    expect(t.steps[8]!.action.args).toMatchObject({ path: '/workspace/python__mypy__1.6/mypy/plugins/dataclasses.py' });
    expect(t.steps[20]!.action.kind).toBe('submit');
    expect(t.problemStatement).toMatch(/^<uploaded_files>\n\/workspace\/python__mypy__1\.6\n/);
  });

  it('SWE-smith trajectories: <function=…> calls read as R2E-Gym function calls, labelled by traj_id', async () => {
    const {
      rows: [row],
    } = await rowsOf(join(DATASETS, 'swe-smith.jsonl'));
    expect(row!.instanceId).toBe('arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur');
    expect(row!.name).toBe('arrow-py__arrow.1d70d009.lm_rewrite__nuzjfyur.l13ggwmx');
    expect(row!.label).toBe('l13ggwmx');
    const t = row!.trajectory();
    expect(t.format).toBe('r2e-gym');
    expect(t.label).toBe('l13ggwmx');
    expect(t.steps).toHaveLength(15);
    expect(t.steps[8]!.action).toMatchObject({
      kind: 'edit',
      tool: 'str_replace_editor',
      args: { command: 'str_replace', path: '/testbed/arrow/arrow.py' },
    });
    expect(t.steps[8]!.action.args.new_str).toMatch(
      /if not formatstr:\n {12}return self\.__str__\(\)\n {8}return self\.format\(formatstr\)$/,
    );
    expect(t.steps[0]!.action.args.command).toBe('find /testbed -type f -name "*.py" | grep -v "__pycache__" | sort');
    expect(t.steps[0]!.observation).toMatch(/^OBSERVATION:\n\/testbed\/arrow\/__init__\.py/);
    expect(t.submission).toBe(fixtureRow('swe-smith').patch);
  });

  it('R2E-Gym / DeepSWE runs (documented schema, no public sample found): trajectory_steps rows, task from ds, resolved from reward', async () => {
    // The fields of R2E-Gym's `Trajectory` model (src/r2egym/agenthub/trajectory/trajectory.py); values made up.
    const step = (action: string, observation: string) => ({
      step_idx: 0,
      thought: 'Looking.',
      action,
      observation,
      done: false,
      info: {},
    });
    const run = (reward: number) => ({
      trajectory_steps: [
        step(
          '<function=execute_bash>\n<parameter=cmd>grep -n "def division" tests/missing_colon.py</parameter>\n</function>',
          '4:def division(a: float, b: float) -> float',
        ),
      ],
      problem_statement: 'SyntaxError',
      docker_image: 'namanjain12/test-repo:5dced6c',
      ds: { instance_id: 'swe-agent__test-repo-1' },
      exit_reason: 'agent',
      output_patch: '',
      reward,
    });
    const { rows, counts } = await rowsOf(jsonl([run(1), run(0)]));
    expect(counts).toEqual({ rows: 2, unresolved: 1 });
    expect(rows).toHaveLength(1);
    expect(rows[0]!.instanceId).toBe('swe-agent__test-repo-1');
    expect(rows[0]!.trajectory().steps[0]!.action).toMatchObject({
      kind: 'bash',
      args: { command: 'grep -n "def division" tests/missing_colon.py' },
    });
  });

  it('SWE-smith tool and ticks rows (their documented shapes; no real sample was found): tool calls, and ``` blocks as SWE-agent parses them', async () => {
    const task = [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: '<pr_description>\nx should be 2\n</pr_description>' },
    ];
    const call = (id: string, name: string, args: object) => ({
      id,
      type: 'function',
      function: { name, arguments: JSON.stringify(args) },
    });
    const tool = {
      instance_id: 'pkg__x.1.a',
      resolved: true,
      traj_id: 'pkg__x.1.a.run1',
      messages: [
        ...task,
        { role: 'assistant', content: 'Look first.', tool_calls: [call('c1', 'bash', { command: 'grep -n "x =" /testbed/a.py' })] },
        { role: 'tool', content: [{ type: 'text', text: 'OBSERVATION:\n1:x = 1' }], tool_call_ids: ['c1'] },
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'Fix it.' }],
          tool_calls: [
            call('c2', 'str_replace_editor', { command: 'str_replace', path: '/testbed/a.py', old_str: 'x = 1', new_str: 'x = 2' }),
          ],
        },
        { role: 'tool', content: 'OBSERVATION:\nThe file /testbed/a.py has been edited.', tool_call_ids: ['c2'] },
        { role: 'assistant', content: '', tool_calls: [call('c3', 'submit', {})] },
      ],
    };
    const ticks = {
      instance_id: 'pkg__x.1.a',
      resolved: true,
      messages: [
        ...task,
        { role: 'assistant', content: 'Look first.\n\n```\ngrep -n "x =" /testbed/a.py\n```' },
        { role: 'user', content: 'OBSERVATION:\n1:x = 1' },
        {
          role: 'assistant',
          content: "Fix it.\n\n```\nstr_replace_editor str_replace /testbed/a.py   --old_str 'x = 1' --new_str 'x = 2'\n```",
        },
        { role: 'user', content: 'OBSERVATION:\nThe file /testbed/a.py has been edited.' },
        { role: 'assistant', content: 'Thinking without a command.' },
        { role: 'user', content: 'Your output was not formatted correctly.' },
        { role: 'assistant', content: '```\nsubmit\n```' },
      ],
    };
    const unknownTool = { ...tool, messages: [...task, { role: 'assistant', content: '', tool_calls: [call('c9', 'browse', {})] }] };
    const { rows } = await rowsOf(jsonl([tool, ticks, unknownTool]));
    const [fromTools, fromTicks] = [rows[0]!.trajectory(), rows[1]!.trajectory()];
    expect(fromTools.format).toBe('openhands');
    expect(fromTools.steps.map((s) => [s.action.kind, s.thought, s.observation])).toEqual([
      ['bash', 'Look first.', 'OBSERVATION:\n1:x = 1'],
      ['edit', 'Fix it.', 'OBSERVATION:\nThe file /testbed/a.py has been edited.'],
      ['submit', '', null],
    ]);
    expect(fromTools.steps[1]!.action).toMatchObject({
      text: '{"command":"str_replace","path":"/testbed/a.py","old_str":"x = 1","new_str":"x = 2"}',
      args: { old_str: 'x = 1', new_str: 'x = 2' },
    });
    expect(rows[0]!.label).toBe('run1');
    expect(fromTicks.format).toBe('swe-agent');
    expect(fromTicks.steps.map((s) => s.action.kind)).toEqual(['bash', 'edit', 'other', 'submit']);
    expect(fromTicks.steps[1]!.action).toMatchObject({
      tool: 'str_replace_editor',
      args: { command: 'str_replace', path: '/testbed/a.py', old_str: 'x = 1', new_str: 'x = 2' },
    });
    expect(fromTicks.steps[2]!.action).toMatchObject({ tool: 'none', text: '' });
    expect(() => rows[2]!.trajectory()).toThrow(/#2: field "messages\.2\.tool_calls\.0\.function\.name": unsupported tool "browse"/);
  });

  it('R2EGym-SFT rows carry no task id: the task is the one whose problem statement the prompt holds', async () => {
    // R2EGym-SFT-Trajectories keeps only `messages` (its layout: the SWE-smith xml row above); this row is made up in that shape.
    const task = await fixtureTask('missing-colon');
    const sft = (issue: string) => ({
      messages: [
        { role: 'system', content: 'You are a programming agent who is provided a github issue and repository bash environment.' },
        {
          role: 'user',
          content: `Consider the following github issue:\n<github_issue>\n${issue}\n</github_issue>\n\nCan you help me implement the necessary changes?`,
        },
        {
          role: 'assistant',
          content:
            'Fix the colon.\n<function=execute_bash>\n<parameter=cmd>sed -i "4s/$/:/" tests/missing_colon.py</parameter>\n</function>',
        },
        { role: 'user', content: 'Execution output of [execute_bash]:\n[EXIT CODE]: 0' },
      ],
    });
    const { rows } = await rowsOf(jsonl([sft(task.problem_statement.replace(/ /g, '\r\n')), sft('Another issue.')]));
    const tasks = new Map([[task.instance_id, task]]);
    expect(rows.map((r) => r.instanceId)).toEqual([null, null]);
    expect(taskForRow(rows[0]!, tasks)?.instance_id).toBe('swe-agent__test-repo-1');
    expect(taskForRow(rows[1]!, tasks)).toBeUndefined();
    expect(rows[0]!.trajectory().steps[0]!.action.args.command).toBe('sed -i "4s/$/:/" tests/missing_colon.py');
  });

  it('unresolved rows are skipped and counted, or taken when asked', async () => {
    const resolved = fixtureRow('swe-smith');
    const failed = { ...fixtureRow('nebius-swe-agent'), target: false };
    const file = jsonl([failed, resolved, { ...resolved, resolved: false }]);
    const kept = await rowsOf(file);
    expect(kept.counts).toEqual({ rows: 3, unresolved: 2 });
    expect(kept.rows.map((r) => r.index)).toEqual([1]);
    expect((await rowsOf(file, true)).rows.map((r) => r.index)).toEqual([0, 1, 2]);
  });

  it('a malformed row is an input error naming the file, the row and the field', async () => {
    const nebius = fixtureRow('nebius-swe-agent');
    const badTurn = structuredClone(nebius) as { trajectory: Array<{ text: unknown }> };
    badTurn.trajectory[4]!.text = 42;
    const smith = fixtureRow('swe-smith');
    const file = jsonl([
      nebius,
      badTurn,
      { ...smith, messages: '[{"role": "user"' },
      { ...smith, resolved: 'yes' },
      { ...smith, messages: [{ role: 'user', content: { text: 1 } }] },
    ]);
    const { rows } = await rowsOf(file);
    expect(rows[0]!.trajectory().steps).toHaveLength(6);
    expect(() => rows[1]!.trajectory()).toThrow(`${file}#1: field "trajectory.4.text": expected a string, got 42`);
    expect(() => rows[2]!.trajectory()).toThrow(`${file}#2: field "messages": expected a list (or a JSON string of one)`);
    expect(rows[3]!.problem?.message).toBe(`${file}#3: field "resolved": expected true or false, got "yes"`);
    expect(() => rows[4]!.trajectory()).toThrow(`${file}#4: field "messages.0.content": expected text`);
  });
});

/** swe-agent/test-repo-i1.traj as nebius publishes SWE-agent runs: its history as `{role, text}` turns in a `trajectory` column. */
function asNebiusRow(traj: { history: Array<{ role: string; content: string }> }, target: boolean): Row {
  return {
    instance_id: 'swe-agent__test-repo-1',
    model_name: 'gpt-4o',
    target,
    trajectory: traj.history.map((m) => ({ role: m.role === 'assistant' ? 'ai' : m.role, text: m.content })),
    exit_status: 'submitted',
    generated_patch: '',
    eval_logs: 'not read by a build',
  };
}

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface Summary {
  items: number;
  trajectories: Array<{ trajectory: string; task: string | null; decisiveStep: number | null; rejected: string | null }>;
  skipped?: { unresolved: number; noTask: number };
}

describe.skipIf(skipWithoutBwrap || !hasRealData)('probe build --trajectories DATASET.parquet', () => {
  it('builds the resolved rows of its tasks as the file form does, counts the rest, reports a malformed row while building the others, and resumes by row', async () => {
    const dir = tempDir();
    const traj = JSON.parse(readFileSync(real('swe-agent/test-repo-i1.traj'), 'utf8')) as {
      history: Array<{ role: string; content: string }>;
    };
    const broken = asNebiusRow(traj, true) as { trajectory: Array<{ role: unknown }> };
    broken.trajectory[3]!.role = null; // the first model turn
    const rows = [fixtureRow('nebius-swe-agent'), asNebiusRow(traj, false), asNebiusRow(traj, true), broken as Row];
    const dataset = join(dir, 'sweagent.parquet');
    // The dataset's own Parquet schema: `trajectory` a list of structs, the rest flat.
    const turnFields = ['cutoff_date', 'mask', 'role', 'system_prompt', 'text'];
    const data = (name: string) =>
      rows.map((r) =>
        name !== 'trajectory'
          ? (r[name] ?? null)
          : (r.trajectory as Row[]).map((turn) => Object.fromEntries(turnFields.map((f) => [f, turn[f] ?? null]))),
      );
    const string = (name: string) => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' });
    const flat = ['instance_id', 'model_name', 'target', 'exit_status', 'generated_patch', 'eval_logs'];
    parquetWriteFile({
      filename: dataset,
      rowGroupSize: 2, // two row groups: read one at a time
      columnData: [...flat, 'trajectory'].map((name) => ({ name, data: data(name) })),
      schema: [
        { name: 'root', num_children: flat.length + 1 },
        ...flat.map((name) => (name === 'target' ? { name, type: 'BOOLEAN', repetition_type: 'OPTIONAL' } : string(name))),
        { name: 'trajectory', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        { name: 'element', repetition_type: 'OPTIONAL', num_children: turnFields.length },
        ...turnFields.map((name) => (name === 'mask' ? { name, type: 'BOOLEAN', repetition_type: 'OPTIONAL' } : string(name))),
      ],
    } as Parameters<typeof parquetWriteFile>[0]);
    const task = join(FIXTURE_TASKS, 'missing-colon', 'task.json');
    const fromDataset = probe([
      'build',
      '--trajectories',
      dataset,
      '--tasks',
      task,
      '--out',
      join(dir, 'dataset.jsonl'),
      '--no-distractors',
      '--repeats',
      '1',
      '--json',
    ]);
    expect(fromDataset.code, fromDataset.stderr).toBe(2); // the malformed row
    const summary = JSON.parse(fromDataset.stdout) as Summary;
    expect(summary.skipped).toEqual({ unresolved: 1, noTask: 1 });
    expect(summary.trajectories).toHaveLength(2);
    expect(summary.trajectories[0]).toMatchObject({ trajectory: 'sweagent.parquet#2', task: 'swe-agent__test-repo-1', rejected: null });
    expect(summary.trajectories[1]).toMatchObject({ trajectory: 'sweagent.parquet#3', decisiveStep: null });
    expect(summary.trajectories[1]!.rejected).toBe(`${dataset}#3: field "trajectory.3.role": expected a string, got null`);

    const files = join(dir, 'trajectories');
    mkdirSync(files);
    copyFileSync(real('swe-agent/test-repo-i1.traj'), join(files, 'swe-agent__test-repo-1.i1.traj'));
    const fromFile = probe([
      'build',
      '--trajectories',
      files,
      '--tasks',
      task,
      '--out',
      join(dir, 'file.jsonl'),
      '--no-distractors',
      '--repeats',
      '1',
      '--json',
    ]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    const fileSummary = JSON.parse(fromFile.stdout) as Summary;
    expect(summary.trajectories[0]!.decisiveStep).toBe(2);
    expect(summary.trajectories[0]!.decisiveStep).toBe(fileSummary.trajectories[0]!.decisiveStep);

    const item = (file: string) =>
      JSON.parse(readFileSync(join(dir, file), 'utf8').trim()) as {
        id: string;
        gold: string;
        decisive_step: number;
        source: { file: string; format: string };
      };
    const [datasetItem, fileItem] = [item('dataset.jsonl'), item('file.jsonl')];
    expect(datasetItem.id).toBe('swe-agent__test-repo-1@sweagent.parquet#2');
    expect(datasetItem.source).toEqual({ file: 'sweagent.parquet#2', format: 'swe-agent' });
    expect(datasetItem.gold).toBe(fileItem.gold);
    expect(datasetItem.gold).toContain('edit 4:4\ndef division(a: float, b: float) -> float:\nend_of_edit');

    // Resume: a row whose build the progress log holds (as a killed build left it) is not replayed again.
    const log = UnitLog.open<TrajectoryBuild>(
      join(dir, 'resume.progress.jsonl'),
      { dataset: dataset },
      { resume: false, what: 'build', units: TrajectoryBuildSchema },
    );
    log.put('sweagent.parquet#2', {
      outcome: summary.trajectories[0]! as TrajectoryBuild['outcome'],
      items: [datasetItem as unknown as ProbeItem],
    });
    const resumed = await buildProbeSet({
      trajectories: dataset,
      tasks: await loadTasks(task),
      contexts: ['native'],
      restore: 'patch',
      distractors: false,
      quiet: true,
      memo: UnitLog.open<TrajectoryBuild>(
        join(dir, 'resume.progress.jsonl'),
        { dataset: dataset },
        { resume: true, what: 'build', units: TrajectoryBuildSchema },
      ),
      replay: { sandboxName: 'local', openSandbox: () => Promise.reject(new Error('a resumed row was replayed')) },
    });
    expect(resumed.items).toEqual([datasetItem]);
    expect(resumed.trajectories.map((t) => t.trajectory)).toEqual(['sweagent.parquet#2', 'sweagent.parquet#3']);
    expect(resumed.inputErrors).toBe(1);
  });
});
