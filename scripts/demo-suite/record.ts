/**
 * Writes one demo task (repository, hidden tests, task record) and *records* its
 * trajectory: every step runs for real in the local sandbox, so observations are what
 * the commands printed; the run is then written in the scaffold's own file format.
 */
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { runAction } from '../../src/sandbox/run-action.ts';
import { LocalSandbox } from '../../src/sandbox/local.ts';
import type { LogParserName } from '../../src/schema/task.ts';
import type { TrajectoryAction } from '../../src/schema/trajectory.ts';
import { bashAction, editorAction, submitAction } from '../../src/formats/actions.ts';
import { sweAgentAction } from '../../src/formats/swe-agent.ts';
import { loadTaskFile } from '../../src/verify/load-task.ts';
import { writeTaskRecord } from '../../src/verify/task-files.ts';

export type StepSpec = { thought: string } & (
  | { bash: string }
  | {
      editor: {
        command: 'view' | 'create' | 'str_replace' | 'insert';
        path: string;
        old_str?: string;
        new_str?: string;
        file_text?: string;
        insert_line?: number;
      };
    }
  | { swe: string }
  | { submit: true }
);

export type ScaffoldFormat = 'mini-swe-agent-1' | 'mini-swe-agent-1.1' | 'swe-agent' | 'openhands';

export interface DemoTask {
  id: string;
  problem: string;
  repo: Record<string, string>;
  executable?: string[];
  testsAdded: Record<string, string>;
  FAIL_TO_PASS: string[];
  PASS_TO_PASS: string[];
  test_cmd: string;
  log_parser: LogParserName;
  trajectory: { format: ScaffoldFormat; label: string; steps: StepSpec[] };
}

interface Recorded {
  spec: StepSpec;
  action: TrajectoryAction;
  output: string;
  exitCode: number;
  openFile: string;
}

function writeTree(root: string, files: Record<string, string>, executable: string[] = []): void {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
    if (executable.includes(path)) chmodSync(join(root, path), 0o755);
  }
}

const SUBMIT = {
  'mini-swe-agent-1': 'echo MINI_SWE_AGENT_FINAL_OUTPUT && git add -A && git diff --cached',
  'mini-swe-agent-1.1': 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached',
};

function actionOf(spec: StepSpec, format: ScaffoldFormat): TrajectoryAction {
  if ('bash' in spec) return bashAction(spec.bash, spec.bash);
  if ('editor' in spec) return editorAction(JSON.stringify(spec.editor), spec.editor);
  if ('swe' in spec) return sweAgentAction(spec.swe);
  if (format in SUBMIT) return bashAction(SUBMIT[format as keyof typeof SUBMIT], SUBMIT[format as keyof typeof SUBMIT]);
  return submitAction('submit', { command: 'submit' });
}

async function record(task: DemoTask, taskFile: string): Promise<Recorded[]> {
  const [loaded] = await loadTaskFile(taskFile);
  const sb = await LocalSandbox.create(loaded!);
  const recorded: Recorded[] = [];
  try {
    for (const spec of task.trajectory.steps) {
      const action = actionOf(spec, task.trajectory.format);
      const result = action.tool === 'submit' ? await sb.exec('git add -A && git diff --cached') : await runAction(sb, action);
      const open = await sb.exec(
        `python3 -c "import json; print(json.load(open('/tmp/.probe-editor-state.json')).get('open_file') or 'n/a')" 2>/dev/null || echo n/a`,
      );
      recorded.push({ spec, action, output: result.output, exitCode: result.exitCode, openFile: open.output.trim() });
    }
  } finally {
    await sb.close();
  }
  return recorded;
}

const MINI_SYSTEM = (block: string, sentinel: string) => `You are a helpful assistant that can interact with a computer.

Your response must contain exactly ONE bash code block with ONE command (or commands connected with && or ||).
Include a THOUGHT section before your command where you explain your reasoning process.
Format your response as shown in <format_example>.

<format_example>
THOUGHT: Your reasoning and analysis here.

\`\`\`${block}
your_command_here
\`\`\`
</format_example>

To finish, issue the following command: \`echo ${sentinel}\`
without any other command.`;

const MINI_INSTANCE = (problem: string) => `Please solve this issue: ${problem}

You can execute bash commands and edit files to implement the necessary changes.

## Recommended Workflow
1. Analyze the codebase by finding and reading relevant files
2. Create a script to reproduce the issue
3. Edit the source code to resolve the issue
4. Verify your fix works by running your script again
5. Test edge cases to ensure your fix is robust`;

function renderMini(task: DemoTask, steps: Recorded[], v2: boolean): unknown {
  const block = v2 ? 'mswea_bash_command' : 'bash';
  const sentinel = v2 ? 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT' : 'MINI_SWE_AGENT_FINAL_OUTPUT';
  const messages: Array<{ role: string; content: string }> = [
    { role: 'system', content: MINI_SYSTEM(block, sentinel) },
    { role: 'user', content: MINI_INSTANCE(task.problem) },
  ];
  for (const s of steps) {
    messages.push({ role: 'assistant', content: `THOUGHT: ${s.spec.thought}\n\n\`\`\`${block}\n${s.action.args.command}\n\`\`\`` });
    const isSubmit = s.action.kind === 'submit';
    messages.push({
      role: 'user',
      content: isSubmit ? s.output : `<returncode>${s.exitCode}</returncode>\n<output>\n${s.output}</output>`,
    });
  }
  const submission = steps.at(-1)?.output ?? '';
  return v2
    ? { info: { exit_status: 'Submitted', submission, mini_version: '2.0.0' }, messages, trajectory_format: 'mini-swe-agent-1.1' }
    : { info: { exit_status: 'Submitted', submission, mini_version: '1.17.5' }, messages, trajectory_format: 'mini-swe-agent-1' };
}

function renderSweAgent(task: DemoTask, steps: Recorded[]): unknown {
  const history: Array<Record<string, string>> = [
    {
      role: 'system',
      content:
        "SETTING: You are an autonomous programmer, and you're working directly in the command line with a special interface.\n\nThe special interface consists of a file editor that shows you 100 lines of a file at a time.",
      agent: 'main',
    },
    {
      role: 'user',
      content: `We're currently solving the following issue within our repository. Here's the issue text:\nISSUE:\n${task.problem}\n\nINSTRUCTIONS:\nNow, you're going to solve this issue on your own. When you're satisfied with all of the changes you've made, you can submit your changes to the code base by simply running the submit command.\n\n(Open file: n/a)\n(Current directory: /testbed)\nbash-$`,
      agent: 'main',
    },
  ];
  const trajectory = steps.map((s) => {
    const action = 'swe' in s.spec ? s.spec.swe : 'bash' in s.spec ? s.spec.bash : 'submit';
    const observation =
      s.action.kind === 'submit'
        ? s.output
        : `${s.output.replace(/\n$/, '')}\n(Open file: ${s.openFile})\n(Current directory: /testbed)\nbash-$`;
    const response = `${s.spec.thought}\n\n\`\`\`\n${action}\n\`\`\``;
    history.push({ role: 'assistant', content: response, thought: s.spec.thought, action: `${action}\n`, agent: 'main' });
    history.push({ role: 'user', content: observation, agent: 'main' });
    return {
      action: `${action}\n`,
      observation,
      response,
      thought: s.spec.thought,
      state: JSON.stringify({ open_file: s.openFile, working_dir: '/testbed' }),
    };
  });
  return { environment: 'probe-demo', trajectory, history, info: { exit_status: 'submitted', submission: steps.at(-1)?.output ?? '' } };
}

function renderOpenHands(task: DemoTask, steps: Recorded[]): unknown {
  const events: unknown[] = [{ id: 0, source: 'user', action: 'message', args: { content: task.problem } }];
  let id = 1;
  for (const s of steps) {
    const actionId = id++;
    const spec = s.spec;
    const [action, args, fn] =
      'bash' in spec
        ? ['run', { command: spec.bash }, 'execute_bash']
        : 'editor' in spec
          ? spec.editor.command === 'view'
            ? ['read', { path: spec.editor.path }, 'str_replace_editor']
            : ['edit', { ...spec.editor }, 'str_replace_editor']
          : ['finish', { final_thought: spec.thought }, 'finish'];
    const callArgs = 'editor' in spec ? spec.editor : 'bash' in spec ? { command: spec.bash } : { message: spec.thought };
    events.push({
      id: actionId,
      source: 'agent',
      action,
      args: { ...(args as object), thought: spec.thought },
      tool_call_metadata: {
        function_name: fn,
        model_response: { choices: [{ message: { tool_calls: [{ function: { name: fn, arguments: JSON.stringify(callArgs) } }] } }] },
      },
    });
    if (action !== 'finish')
      events.push({
        id: id++,
        source: 'agent',
        cause: actionId,
        observation: action,
        content: s.output,
        extras: { exit_code: s.exitCode },
      });
  }
  return events;
}

export async function writeDemoTask(task: DemoTask, root: string): Promise<string> {
  const dir = join(root, 'verifiers', task.id);
  writeTree(join(dir, 'repo'), task.repo, task.executable);
  writeTree(join(dir, 'tests-added'), task.testsAdded);
  writeFileSync(
    join(dir, 'meta.json'),
    `${JSON.stringify(
      {
        instance_id: task.id,
        problem_statement: task.problem,
        FAIL_TO_PASS: task.FAIL_TO_PASS,
        PASS_TO_PASS: task.PASS_TO_PASS,
        test_cmd: task.test_cmd,
        log_parser: task.log_parser,
      },
      null,
      2,
    )}\n`,
  );
  writeTaskRecord(dir);
  const steps = await record(task, join(dir, 'task.json'));
  const { format, label } = task.trajectory;
  const data =
    format === 'swe-agent'
      ? renderSweAgent(task, steps)
      : format === 'openhands'
        ? renderOpenHands(task, steps)
        : renderMini(task, steps, format === 'mini-swe-agent-1.1');
  const ext = format === 'swe-agent' ? 'traj' : format === 'openhands' ? 'json' : 'traj.json';
  const file = join(root, 'trajectories', `${task.id}.${label}.${ext}`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
