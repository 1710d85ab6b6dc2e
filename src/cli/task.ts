/**
 * `probe task`: a task record for your own trajectories, from a task source directory —
 * `repo/` (the repository at the commit the agent started from: a git repository, or a plain
 * tree), `tests-added/` (the tests that decide the task, hidden from the agent) — and the
 * record's fields as flags (or `meta.json`). The record is read back as every verb reads it,
 * and the tests are run once at the base state, so that a record whose FAIL_TO_PASS already
 * passes, or never runs, is found now rather than as a trajectory "rejected" later.
 *
 * `probe task check` (task-check.ts) is the oracle run over Terminal-Bench task sets; it has
 * its own exitOverride, as commander does not pass the parent's down and a usage error must
 * reach main (exit 2).
 */
import { existsSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { InputError } from '../errors.ts';
import { LOG_PARSERS } from '../schema/task.ts';
import { SANDBOX_KINDS, type SandboxKind } from '../settings/sandbox-kinds.ts';
import { loadTaskFile } from '../verify/load-task.ts';
import { readMeta, writeTaskRecord } from '../verify/task-files.ts';
import { checkAtBase } from '../verify/base-state.ts';
import { timeoutSeconds } from './args.ts';
import { taskCheckCommand } from './task-check.ts';
import { readTextFile } from '../util/safe-tree.ts';

interface TaskFlags {
  id?: string;
  problem?: string;
  problemFile?: string;
  testCmd?: string;
  logParser?: string;
  fail?: string[];
  pass?: string[];
  workdir?: string;
  testTimeout?: number;
  check: boolean;
  sandbox: SandboxKind;
}

/** The fields the flags give (a flag not given leaves meta.json's value). */
function fieldsOf(dir: string, flags: TaskFlags): Record<string, unknown> {
  const meta = readMeta(dir);
  const fields: Record<string, unknown> = {};
  const id = flags.id ?? (meta.instance_id === undefined ? basename(resolve(dir)) : undefined);
  if (id !== undefined) fields.instance_id = id;
  if (flags.problemFile !== undefined) {
    if (!existsSync(flags.problemFile)) throw new InputError({ file: flags.problemFile }, 'is missing (--problem-file)');
    fields.problem_statement = readTextFile(flags.problemFile, { what: '--problem-file' });
  } else if (flags.problem !== undefined) fields.problem_statement = flags.problem;
  if (flags.testCmd !== undefined) fields.test_cmd = flags.testCmd;
  if (flags.logParser !== undefined) fields.log_parser = flags.logParser;
  else if (meta.log_parser === undefined) fields.log_parser = 'pytest';
  if (flags.fail !== undefined) fields.FAIL_TO_PASS = flags.fail;
  if (flags.pass !== undefined) fields.PASS_TO_PASS = flags.pass;
  if (flags.workdir !== undefined) fields.workdir = flags.workdir;
  if (flags.testTimeout !== undefined) fields.test_timeout_s = flags.testTimeout;
  // A suite that only says pass or fail is itself the test (log_parser exit-code): it needs no names.
  if ((fields.log_parser ?? meta.log_parser) === 'exit-code' && fields.FAIL_TO_PASS === undefined && meta.FAIL_TO_PASS === undefined)
    fields.FAIL_TO_PASS = [];
  const missing = Object.entries(REQUIRED)
    .filter(([field]) => fields[field] === undefined && meta[field] === undefined)
    .map(([, flag]) => flag);
  if (missing.length > 0)
    throw new InputError({ file: dir }, `a task record needs ${missing.join(', ')} (flags, or the same fields in meta.json)`);
  return fields;
}

/** The fields a record cannot do without, by the flag that gives each. */
const REQUIRED: Record<string, string> = {
  problem_statement: '--problem or --problem-file',
  test_cmd: '--test-cmd',
  FAIL_TO_PASS: '--fail',
};

export function taskCommand(): Command {
  return new Command('task')
    .description(
      'Write a task record (DIR/task.json) for your own trajectories, from DIR/repo/ (the repository where the agent started: a git repository or a plain tree) and DIR/tests-added/ (the tests that decide the task, added only when grading), then run the tests once at the base state.',
    )
    .argument('<dir>', 'task source directory: repo/, optionally tests-added/ and meta.json (fields the flags leave out)')
    .option(
      '--id <instance_id>',
      "the task's id; a trajectory file named <id>.<label>.<ext> is matched to it (default: the directory's name)",
    )
    .option('--problem <text>', 'the issue the agent was given (ASAP episodes show it)')
    .option('--problem-file <file>', 'the issue, read from a file')
    .option('--test-cmd <cmd>', 'runs the tests from the repository root, inside the sandbox')
    .addOption(new Option('--log-parser <name>', 'how the test log is read (default: pytest)').choices([...LOG_PARSERS]))
    .option('--fail <test...>', 'FAIL_TO_PASS: tests that fail at the base and pass once fixed, as the log names them')
    .option('--pass <test...>', 'PASS_TO_PASS: tests that pass at the base and must keep passing')
    .option('--workdir <dir>', 'where the repository sits in the sandbox (default /testbed)')
    .option('--test-timeout <s>', 'seconds one test run may take (default 300)', timeoutSeconds)
    .addOption(new Option('--sandbox <kind>', 'where the base-state check runs').choices([...SANDBOX_KINDS]).default('local'))
    .option('--no-check', 'write the record without running the tests at the base state')
    .addHelpText(
      'after',
      [
        '',
        'Example (a repository, a test added for grading, a mini-swe-agent trajectory):',
        '  probe task my-task --id my-task --problem-file issue.md \\',
        '    --test-cmd "python3 -m pytest -rA tests/test_fix.py" --fail tests/test_fix.py::test_fix',
        '  probe replay agent-run.traj.json --task my-task/task.json',
        '  probe build --trajectories runs-dir --tasks my-task --out probes/mine.jsonl',
        '',
        'probe task check --terminal DIR… is the oracle run over Terminal-Bench task sets (probe task check --help);',
        'a task source directory named check is given as ./check.',
      ].join('\n'),
    )
    .addCommand(taskCheckCommand().exitOverride())
    .action(async (dirArg: string, flags: TaskFlags) => {
      const dir = resolve(dirArg);
      if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InputError({ file: dirArg }, 'is not a directory');
      const file = writeTaskRecord(dir, fieldsOf(dir, flags));
      const [task] = await loadTaskFile(file); // the schema's word on every field, before any test runs
      const checked = flags.check ? `${await checkAtBase(file, flags.sandbox)}\n` : ''; // a failed check is the only line printed
      process.stderr.write(
        `${file}: task ${task!.instance_id}, base_commit ${task!.base_commit.slice(0, 12)}, ${task!.FAIL_TO_PASS.length} FAIL_TO_PASS, ${task!.PASS_TO_PASS.length} PASS_TO_PASS\n${checked}`,
      );
      process.stderr.write(
        `next: probe replay TRAJECTORY --task ${join(dirArg, 'task.json')}   (T*; name trajectory files ${task!.instance_id}.<label>.<ext> for probe build --tasks ${dirArg})\n`,
      );
    });
}
