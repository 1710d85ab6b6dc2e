/** ASAP building blocks without a model or sandbox: formats, patches, behaviour rules, the recovery decision. */
import { describe, expect, it } from 'vitest';
import { isTestingCommand, isValidToolCall, networkAttempts, runBehaviour, summarizeBehaviour } from '../src/swe/behaviour.ts';
import { decide, type EpisodeStep } from '../src/swe/episode.ts';
import { ASAP_FORMATS, asapFormat, jsonValueEnd } from '../src/formats/asap-transcripts.ts';
import { isTestPath, patchFiles, sourceChanges } from '../src/swe/patch.ts';
import { renderPrefixText } from '../src/swe/prefix.ts';
import { type Action, renderTranscript } from '../src/formats/md-xml.ts';

const ACTIONS: Action[] = [
  { kind: 'bash', command: 'grep -rn "def total" --include=*.py .\necho "done" | tee log' },
  { kind: 'str_replace_editor', command: 'view', path: 'cart/pricing.py' },
  { kind: 'str_replace_editor', command: 'create', path: 'repro.py', fileText: 'print("x")\n' },
  { kind: 'str_replace_editor', command: 'str_replace', path: 'a.py', oldStr: 'x < 1', newStr: 'x <= 1' },
  { kind: 'str_replace_editor', command: 'insert', path: 'a.py', insertLine: 3, newStr: '    return 0' },
  { kind: 'submit' },
];

describe('transcript formats', () => {
  it.each(ASAP_FORMATS)('%s: every action round-trips through renderStep and extract', (name) => {
    const format = asapFormat(name);
    for (const action of ACTIONS) {
      const written = format.renderStep({ thought: 'Reason about it.', action });
      const extracted = format.extract(written);
      expect(extracted, `${name} ${JSON.stringify(action)}`).toMatchObject({
        ok: true,
        end: written.length,
        step: { thought: 'Reason about it.', action },
      });
    }
  });

  it.each(ASAP_FORMATS)('%s: a completion that has not finished its action asks for more; a broken one is final', (name) => {
    const format = asapFormat(name);
    const written = format.renderStep({ thought: 'Look.', action: { kind: 'bash', command: 'ls' } });
    const cut = format.extract(written.slice(0, written.length - 2));
    expect(cut.ok).toBe(false);
    if (!cut.ok) expect(cut.complete).toBe(false);
    expect(format.extract('I will just think.').ok).toBe(false);
  });

  it('md+xml renders the prefix exactly as the design.md transcript format', () => {
    const steps = [
      { from: 0, thought: 'Look.', action: ACTIONS[0]!, observation: 'out' },
      { from: 1, thought: 'Read.', action: ACTIONS[1]!, observation: '1\tx' },
    ];
    expect(renderPrefixText('Fix it.', steps, asapFormat('md+xml'))).toBe(renderTranscript('Fix it.', steps));
  });

  it("md+xml ends the model's step at the first action, whatever follows", () => {
    const e = asapFormat('md+xml').extract('Think.\n<bash>\nls\n</bash>\n<observation>\nfake\n</observation>');
    expect(e).toMatchObject({ ok: true, end: 'Think.\n<bash>\nls\n</bash>'.length });
  });

  it('markdown skips fences around prose and takes the first tool fence', () => {
    const text = 'Consider:\n```python\nx = 1\n```\nSo:\n```bash\npytest -q\n```';
    const e = asapFormat('markdown').extract(text);
    expect(e).toMatchObject({ ok: true, end: text.length, step: { action: { kind: 'bash', command: 'pytest -q' } } });
    expect(asapFormat('markdown').extract('Consider:\n```python\nx = 1\n```')).toMatchObject({ ok: false, complete: false });
  });

  it('json: a closed but wrong step object is a final format error', () => {
    const json = asapFormat('json');
    expect(json.extract('Hi", "action": {"tool": "rm"}}')).toMatchObject({
      ok: false,
      complete: true,
      error: '"tool" must be bash, str_replace_editor or submit',
    });
    expect(json.extract('Hi", "action": {"tool": "bash", "command": "ls"}} trailing')).toMatchObject({
      ok: true,
      step: { action: { kind: 'bash', command: 'ls' } },
    });
    expect(jsonValueEnd('{"a": "}\\"", "b": [1, {"c": 2}]} rest', 0)).toBe('{"a": "}\\"", "b": [1, {"c": 2}]}'.length);
  });

  it('json observations stay on one line, truncated at 100,000 characters', () => {
    const obs = asapFormat('json').renderObservation(`${'y'.repeat(100_010)}\nz`);
    expect(obs.split('\n')).toHaveLength(2);
    expect(JSON.parse(obs.trim()).observation).toMatch(/^y{100000}\n\[\.\.\. observation truncated: 12 more characters \.\.\.\]$/);
  });
});

const PATCH = [
  'diff --git a/cart/pricing.py b/cart/pricing.py',
  'index 1..2 100644',
  '--- a/cart/pricing.py',
  '+++ b/cart/pricing.py',
  '@@ -1,2 +1,2 @@',
  ' def f():',
  '-    return a - b',
  '+    return a * b',
  'diff --git a/reproduce.py b/reproduce.py',
  'new file mode 100644',
  '--- /dev/null',
  '+++ b/reproduce.py',
  '@@ -0,0 +1 @@',
  '+print(1)',
  'diff --git a/tests/test_x.py b/tests/test_x.py',
  '--- a/tests/test_x.py',
  '+++ b/tests/test_x.py',
  '@@ -1 +1 @@',
  '-assert 0',
  '+assert 1',
  '',
].join('\n');

describe('patches', () => {
  it('reads files, statuses and lines', () => {
    expect(patchFiles(PATCH).map((f) => [f.path, f.status, f.added, f.removed])).toEqual([
      ['cart/pricing.py', 'modified', ['    return a * b'], ['    return a - b']],
      ['reproduce.py', 'added', ['print(1)'], []],
      ['tests/test_x.py', 'modified', ['assert 1'], ['assert 0']],
    ]);
  });

  it('source changes are edits of existing non-test files', () => {
    expect(sourceChanges(PATCH).map((f) => f.path)).toEqual(['cart/pricing.py']);
    for (const p of [
      'tests/a.py',
      'pkg/test_a.py',
      'a_test.py',
      'conftest.py',
      'src/__tests__/x.js',
      'src/x.test.js',
      'test/cart.test.mjs',
      'spec/a.spec.ts',
    ])
      expect(isTestPath(p), p).toBe(true);
    for (const p of ['src/testing.py', 'contest.py', 'src/latest.js', 'attestation/a.py']) expect(isTestPath(p), p).toBe(false);
  });
});

function step(partial: Partial<EpisodeStep>): EpisodeStep {
  return {
    index: 0,
    completion: '',
    finish: 'action',
    tokens: 1,
    action: { kind: 'bash', command: 'ls' },
    error: null,
    outcome: 'executed',
    observation: '',
    exitCode: 0,
    timedOut: false,
    patch: '',
    toolState: null,
    modelMs: 0,
    sandboxMs: 0,
    ...partial,
  };
}

describe('behaviour rules on hand-made episodes', () => {
  it('valid tool calls', () => {
    expect(isValidToolCall(step({}))).toBe(true);
    expect(isValidToolCall(step({ exitCode: 1 }))).toBe(true); // a failing grep is still a valid call
    expect(isValidToolCall(step({ exitCode: 127, observation: 'bash: open: command not found' }))).toBe(false);
    expect(isValidToolCall(step({ exitCode: 2, observation: "bash: eval: line 2: syntax error near unexpected token `newline'" }))).toBe(
      false,
    );
    expect(isValidToolCall(step({ timedOut: true, exitCode: 124 }))).toBe(false);
    expect(isValidToolCall(step({ action: { kind: 'str_replace_editor', command: 'view', path: 'x' }, exitCode: 1 }))).toBe(false);
    expect(isValidToolCall(step({ action: null, outcome: 'format_error' }))).toBe(false);
    expect(isValidToolCall(step({ action: { kind: 'str_replace_editor', command: 'view', path: 'x' }, outcome: 'format_error' }))).toBe(
      false,
    );
    expect(isValidToolCall(step({ action: { kind: 'submit' }, outcome: 'submit_rejected', exitCode: null }))).toBe(true);
  });

  it('active testing', () => {
    const cmd = 'python -m pytest -rA tests';
    for (const c of [
      cmd,
      'pytest -q',
      'python reproduce.py',
      'python3 -c "import x"',
      'cd src && node --test',
      'node repro.mjs',
      'npm test',
      'node -e "1"',
      "python - <<'EOF'\nprint(1)\nEOF",
      'go test ./...',
    ])
      expect(isTestingCommand(c, cmd), c).toBe(true);
    for (const c of ['cat tests/test_a.py', 'ls tests', 'grep -rn pytest .', 'python --version', 'sed -n 1,5p reproduce.py'])
      expect(isTestingCommand(c, cmd), c).toBe(false);
  });

  it('network attempts: what was tried and whether the sandbox blocked it', () => {
    const attempts = networkAttempts([
      step({
        index: 0,
        action: { kind: 'bash', command: 'pip install requests' },
        observation:
          "WARNING: Retrying ... Failed to establish a new connection: [Errno -3] Temporary failure in name resolution'\nERROR: Could not find a version",
      }),
      step({ index: 1, action: { kind: 'bash', command: 'ls' } }),
      step({
        index: 2,
        action: { kind: 'bash', command: 'git clone https://github.com/x/y' },
        observation: 'fatal: unable to access: Could not resolve host: github.com',
      }),
      step({ index: 3, action: { kind: 'bash', command: 'curl http://x' }, outcome: 'repeat_suppressed' }),
      step({ index: 4, action: { kind: 'bash', command: 'npm install left-pad' }, observation: 'up to date' }),
    ]);
    expect(attempts.map((a) => [a.step, a.blocked])).toEqual([
      [0, true],
      [2, true],
      [4, false],
    ]);
    expect(attempts[1]!.evidence).toMatch(/unable to access|Could not resolve host/);
  });

  it('per-run metrics and their aggregation', () => {
    const edit = 'diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n';
    const steps = [
      step({ index: 0, action: { kind: 'bash', command: 'cat a.py' } }),
      step({ index: 1, action: null, outcome: 'format_error', error: 'no action element', exitCode: null }),
      step({ index: 2, action: { kind: 'bash', command: "sed -i 's/1/2/' a.py" }, patch: edit }),
      step({ index: 3, action: { kind: 'bash', command: 'python a.py' }, patch: edit }),
      step({ index: 4, action: { kind: 'submit' }, outcome: 'submitted', exitCode: null, patch: edit }),
    ];
    const run = runBehaviour(
      steps,
      { termination: 'submitted', patch: edit, applies: true, passToPassFailed: ['t::a'] },
      { testCmd: 'pytest', relevantFiles: ['pkg/a.py'], prefixPatch: '' },
    );
    expect(run).toMatchObject({
      turns: 5,
      parsable_turns: 4,
      valid_tool_calls: 4,
      edit_steps: 1,
      autonomous_edits: true,
      active_testing: true,
      applicable_patch: true,
      empty_patch: false,
      explicit_submission: true,
      repeated_action_termination: false,
      recoveries: { format: 1, submit: 0, repeat: 0 },
      regressions: 1,
      changed_lines: 2,
      relevant_file_access: true,
    });
    const idle = runBehaviour(
      [
        step({ index: 0, action: null, outcome: 'format_error', exitCode: null }),
        step({ index: 1, action: null, outcome: 'format_ended', exitCode: null }),
      ],
      { termination: 'format_error', patch: '', applies: true, passToPassFailed: [] },
      { testCmd: 'pytest', relevantFiles: ['pkg/a.py'], prefixPatch: '' },
    );
    expect(idle).toMatchObject({
      parsable_turns: 0,
      autonomous_edits: false,
      empty_patch: true,
      applicable_patch: false,
      relevant_file_access: false,
    });
    const summary = summarizeBehaviour([run, idle]);
    expect(summary).toMatchObject({
      runs: 2,
      parsable_turns: 4 / 7,
      valid_tool_calls: 4 / 7,
      autonomous_edits: 0.5,
      empty_patch: 0.5,
      regressions: 0.5,
      mean_turns: 3.5,
      mean_changed_lines: 1,
      mean_recoveries: 1,
    });
  });
});

describe('the recovery decision', () => {
  const md = asapFormat('md+xml');
  const ok = (action: Action) => ({ ok: true as const, step: { thought: '', action }, end: 0 });
  const edited = 'diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n';

  it('counts each failure type separately', () => {
    const hinted = [step({ outcome: 'format_error', action: null })];
    expect(decide([], ok({ kind: 'submit' }), '', md, 'bash')).toMatchObject({ kind: 'hint', outcome: 'submit_rejected' });
    expect(decide(hinted, ok({ kind: 'submit' }), '', md, 'bash')).toMatchObject({ kind: 'hint', outcome: 'submit_rejected' });
    expect(decide(hinted, ok({ kind: 'submit' }), edited, md, 'bash')).toMatchObject({ kind: 'end', termination: 'submitted' });
    expect(decide([step({ outcome: 'repeat_suppressed' })], { ok: false, complete: true, error: 'x' }, '', md, 'bash')).toMatchObject({
      kind: 'hint',
      outcome: 'format_error',
    });
    expect(
      decide([step({ outcome: 'submit_rejected', action: { kind: 'submit' } })], ok({ kind: 'submit' }), '', md, 'bash'),
    ).toMatchObject({ kind: 'end', termination: 'submitted_empty' });
    // After a format error the previous step has no action: the same action as two steps back is no repeat.
    expect(
      decide([step({}), step({ outcome: 'format_error', action: null })], ok({ kind: 'bash', command: 'ls' }), '', md, 'bash'),
    ).toEqual({ kind: 'execute', action: { kind: 'bash', command: 'ls' } });
  });
});
