/**
 * Synthetic shell/agent session logs for the agent rung of the checkpoint ladder.
 *
 * Sessions are rendered from the *code text* (Python standard-library modules),
 * never from the demo suite's trajectories, so a checkpoint counted from them learns
 * the shape of agent work (look, grep, read, edit, test, submit) without having seen
 * any probe's answer. Outputs of `ls`, `grep -n`, `sed -n`, `cat -n` and `git diff`
 * are computed from the files; test-runner output is templated.
 */
import { renderTranscript, type Action, type TranscriptStep } from '../../src/formats/md-xml.ts';
import { createRng, type Rng } from '../../src/util/rng.ts';

export interface SourceFile {
  path: string;
  text: string;
}

interface FunctionSite {
  file: SourceFile;
  name: string;
  start: number;
  end: number;
  lines: string[];
}

const ERRORS = ['TypeError', 'ValueError', 'IndexError', 'KeyError', 'AssertionError', 'ZeroDivisionError'];
const CONDITIONS = [
  'the input is empty',
  'called with a negative value',
  'the argument contains unicode text',
  'the last element is reached',
  'two items compare equal',
  'the optional argument is omitted',
  'the separator appears twice',
  'the width is smaller than the word',
];
const LOOK_THOUGHTS = [
  "I'll look at the repository layout first.",
  'Let me see which files are in the project.',
  'First, find where the relevant code lives.',
  'Start by listing the source files.',
];
const GREP_THOUGHTS = ['Find the definition of `{name}`.', 'Locate `{name}` in the code.', 'Search for `{name}`.'];
const READ_THOUGHTS = ['Read the body of `{name}`.', 'Let me read `{name}` to see what it does.', 'Show the function around line {line}.'];
const TEST_THOUGHTS = [
  'Run the tests to reproduce the failure.',
  'Reproduce the problem with the test suite first.',
  'Check which tests fail right now.',
];
const EDIT_THOUGHTS = [
  'The condition is wrong for the edge case; fix it in place.',
  'The bug is on this line. Replace it.',
  'Guard the edge case before the loop.',
  'Adjust the comparison so the boundary is handled.',
];
const RETEST_THOUGHTS = ['Run the tests again.', 'Verify the fix with the tests.', 'Re-run the failing test.'];
const SUBMIT_THOUGHTS = ['The tests pass now.', 'All tests pass; submit the fix.', 'The fix works.'];

function findFunctions(file: SourceFile): FunctionSite[] {
  const lines = file.text.split('\n');
  const sites: FunctionSite[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)def (\w+)\(/.exec(lines[i]!);
    if (!m) continue;
    const indent = m[1]!.length;
    let end = i + 1;
    while (end < lines.length && (lines[end]!.trim() === '' || lines[end]!.search(/\S/) > indent)) end++;
    if (end - i >= 4 && end - i <= 60) sites.push({ file, name: m[2]!, start: i, end, lines });
  }
  return sites;
}

function fill(template: string, vars: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => String(vars[k] ?? `{${k}}`));
}

/** A plausible one-line bug fix: returns [old, new] or undefined when no rule applies. */
function mutateLine(line: string, rng: Rng): [string, string] | undefined {
  const rules: Array<[RegExp, string]> = [
    [/ < /, ' <= '],
    [/ <= /, ' < '],
    [/ > /, ' >= '],
    [/ >= /, ' > '],
    [/ == /, ' != '],
    [/ \+ 1\b/, ''],
    [/\[0\]/, '[-1]'],
    [/ and /, ' or '],
    [/\bNone\b/, '""'],
    [/\bTrue\b/, 'False'],
  ];
  const applicable = rules.filter(([re]) => re.test(line));
  if (applicable.length === 0) return undefined;
  const [re, replacement] = rng.pick(applicable);
  const buggy = line.replace(re, replacement);
  return buggy === line ? undefined : [buggy, line];
}

function catN(lines: string[], from: number, to: number): string {
  return lines
    .slice(from, to)
    .map((l, i) => `${String(from + i + 1).padStart(6)}\t${l}`)
    .join('\n');
}

function layout(files: SourceFile[], target: SourceFile, rng: Rng, pythonOnly: boolean): string[] {
  const others = files.filter((f) => f !== target).map((f) => f.path);
  const picked = new Set([target.path, `tests/test_${target.path.split('/').pop()}`]);
  while (picked.size < 7 && picked.size < others.length + 2) picked.add(rng.pick(others));
  return [...picked, ...(pythonOnly ? ['setup.py'] : ['README.md', 'setup.py'])].sort();
}

function session(files: SourceFile[], rng: Rng): { problem: string; steps: TranscriptStep[] } | undefined {
  const file = rng.pick(files.filter((f) => !f.path.startsWith('tests/')));
  const sites = findFunctions(file);
  if (sites.length === 0) return undefined;
  const site = rng.pick(sites);
  const body = site.lines.slice(site.start, site.end);
  const candidates = body.map((l, i) => ({ i, m: mutateLine(l, rng) })).filter((c) => c.m);
  if (candidates.length === 0) return undefined;
  const { i: fixIndex, m } = rng.pick(candidates);
  const [buggy, fixed] = m!;
  const path = file.path;
  const testFile = `tests/test_${path.split('/').pop()}`;
  const lineNo = site.start + 1;
  const vars = { name: site.name, line: lineNo, path };
  const error = rng.pick(ERRORS);
  const problem =
    `\`${site.name}\` in \`${path}\` raises ${error} when ${rng.pick(CONDITIONS)}.\n` +
    `Expected it to handle this case like the documentation says. Please fix it.`;
  const buggyLines = [...site.lines];
  buggyLines[site.start + fixIndex] = buggy;
  const nTests = 5 + rng.int(40);
  const steps: TranscriptStep[] = [];
  const findPython = rng.next() < 0.5;
  steps.push({
    thought: rng.pick(LOOK_THOUGHTS),
    action: { kind: 'bash', command: findPython ? 'find . -name "*.py" | sort' : 'ls -R' },
    observation: layout(files, file, rng, findPython)
      .map((p) => (findPython ? `./${p}` : p))
      .join('\n'),
  });
  steps.push({
    thought: fill(rng.pick(GREP_THOUGHTS), vars),
    action: { kind: 'bash', command: `grep -n "def ${site.name}" ${path}` },
    observation: `${lineNo}:${site.lines[site.start]}`,
  });
  const readAction: Action =
    rng.next() < 0.5
      ? { kind: 'bash', command: `sed -n '${lineNo},${site.end}p' ${path}` }
      : { kind: 'str_replace_editor', command: 'view', path };
  steps.push({
    thought: fill(rng.pick(READ_THOUGHTS), vars),
    action: readAction,
    observation:
      readAction.kind === 'bash'
        ? buggyLines.slice(site.start, site.end).join('\n')
        : catN(buggyLines, Math.max(0, site.start - 3), site.end),
  });
  if (rng.next() < 0.7) {
    steps.push({
      thought: rng.pick(TEST_THOUGHTS),
      action: {
        kind: 'bash',
        command: rng.next() < 0.7 ? `python -m pytest ${testFile} -q` : `python -m pytest ${testFile} -x -q 2>&1 | tail -20`,
      },
      observation: `${'.'.repeat(nTests - 1)}F\nFAILED ${testFile}::test_${site.name} - ${error}\n1 failed, ${nTests - 1} passed in 0.${10 + rng.int(80)}s`,
    });
  }
  const indentFix = rng.next() < 0.6;
  const editAction: Action =
    indentFix || /['/]/.test(buggy + fixed)
      ? { kind: 'str_replace_editor', command: 'str_replace', path, oldStr: buggy, newStr: fixed }
      : { kind: 'bash', command: `sed -i '${site.start + fixIndex + 1}s/.*/${fixed.replace(/[\\&]/g, '\\$&')}/' ${path}` };
  const at = site.start + fixIndex;
  steps.push({
    thought: rng.pick(EDIT_THOUGHTS),
    action: editAction,
    observation:
      editAction.kind === 'bash'
        ? ''
        : `The file ${path} has been edited. Here's the result of running \`cat -n\` on a snippet of ${path}:\n` +
          catN(site.lines, Math.max(0, at - 3), Math.min(site.lines.length, at + 4)) +
          '\nReview the changes and make sure they are as expected. Edit the file again if necessary.',
  });
  steps.push({
    thought: rng.pick(RETEST_THOUGHTS),
    action: { kind: 'bash', command: `python -m pytest ${testFile} -q` },
    observation: `${'.'.repeat(nTests)}\n${nTests} passed in 0.${10 + rng.int(80)}s`,
  });
  if (rng.next() < 0.5) {
    steps.push({
      thought: 'Check the final diff.',
      action: { kind: 'bash', command: 'git diff' },
      observation: [
        `diff --git a/${path} b/${path}`,
        `--- a/${path}`,
        `+++ b/${path}`,
        `@@ -${at + 1},1 +${at + 1},1 @@`,
        `-${buggy}`,
        `+${fixed}`,
      ].join('\n'),
    });
  }
  steps.push({ thought: rng.pick(SUBMIT_THOUGHTS), action: { kind: 'submit' } });
  return { problem, steps };
}

/** mini-swe-agent's own rendering of the same session (THOUGHT + ```bash blocks). */
function renderMiniSwe(problem: string, steps: TranscriptStep[]): string {
  const out = [`<pr_description>\n${problem}\n</pr_description>\n`];
  for (const step of steps) {
    const a = step.action;
    const command =
      a.kind === 'bash'
        ? a.command
        : a.kind === 'submit'
          ? 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached'
          : a.command === 'str_replace'
            ? `python - <<'EOF'\nfrom pathlib import Path\np = Path(${JSON.stringify(a.path)})\np.write_text(p.read_text().replace(${JSON.stringify(a.oldStr)}, ${JSON.stringify(a.newStr)}, 1))\nEOF`
            : `cat ${a.path}`;
    out.push(`THOUGHT: ${step.thought}\n\n\`\`\`bash\n${command}\n\`\`\`\n`);
    if (step.observation !== undefined) out.push(`<returncode>0</returncode>\n<output>\n${step.observation}\n</output>\n`);
  }
  return out.join('\n');
}

/** `count` sessions, about a fifth of them in mini-swe-agent's rendering. */
export function synthesizeAgentLogs(files: SourceFile[], count: number, seed: string): string[] {
  const rng = createRng('agent-logs', seed);
  const logs: string[] = [];
  let attempts = 0;
  while (logs.length < count && attempts++ < count * 20) {
    const s = session(files, rng);
    if (!s) continue;
    logs.push(rng.next() < 0.8 ? renderTranscript(s.problem, s.steps) : renderMiniSwe(s.problem, s.steps));
  }
  return logs;
}
