/**
 * The ASAP loop in a real jailed sandbox on a real demo task: every termination and
 * recovery branch, driven by a scripted completion source (allowed for these branches
 * only), and graded by the task's real verifier.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBehaviour } from '../src/swe/behaviour.ts';
import { type EpisodeSettings, HINTS, runEpisode, type EpisodeStep } from '../src/swe/episode.ts';
import { asapFormat, type AsapFormatName } from '../src/formats/asap-transcripts.ts';
import { buildPrefix, type AsapPrefix } from '../src/swe/prefix.ts';
import type { ToolProfile } from '../src/swe/profiles.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import type { Sandbox } from '../src/sandbox/types.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { OBSERVATION_LIMIT } from '../src/formats/md-xml.ts';
import { loadTaskFile } from '../src/verify/load-task.ts';
import { verifyState } from '../src/verify/verifier.ts';
import { freshSandboxes } from '../src/sandbox/pool.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { ScriptedBackend } from './helpers/scripted-backend.ts';

const task = (await loadTaskFile(join(REPO_ROOT, 'verifiers', 'shop__pricing-1', 'task.json')))[0]!;
const reference = importTrajectory(join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json'));

const FIX = `The discount must be a percentage.\n<bash>\nsed -i 's/return round(total - discount, 2)/return round(total * (1 - discount \\/ 100), 2)/' cart/pricing.py\n</bash>`;
const SUBMIT = 'Done.\n<submit/>';

function settings(
  overrides: Partial<EpisodeSettings> = {},
  format: AsapFormatName = 'md+xml',
  profile: ToolProfile = 'bash',
): EpisodeSettings {
  return {
    format: asapFormat(format),
    profile,
    maxSteps: 30,
    maxTokens: 2048,
    temperature: 0.7,
    topP: 0.95,
    seed: 1,
    actionTimeoutMs: 30_000,
    ...overrides,
  };
}

describe.skipIf(skipWithoutBwrap)('ASAP episodes on shop__pricing-1 (local sandbox)', () => {
  let sb: Sandbox;
  let prefix: AsapPrefix;

  beforeAll(async () => {
    sb = await openSandbox('local', task);
    prefix = await buildPrefix(reference, task, { steps: 3, profile: 'bash', format: asapFormat('md+xml') }, sb);
  });
  afterAll(async () => {
    await sb?.close();
  });

  async function episode(completions: string[], s = settings(), p = prefix) {
    await sb.restore({ base_commit: task.base_commit, patch: p.state.patch });
    const backend = new ScriptedBackend(completions);
    const saved: EpisodeStep[] = [];
    const result = await runEpisode(
      {
        backend,
        sandbox: sb,
        baseCommit: task.base_commit,
        prefixText: p.text,
        prefixState: p.state,
        onStep: async (step) => {
          saved.push(step);
        },
      },
      s,
    );
    const finalPatch = result.steps.at(-1)?.patch ?? p.state.patch;
    const verdict = await verifyState(
      freshSandboxes((t) => openSandbox('local', t), task),
      task,
      { base_commit: task.base_commit, patch: finalPatch },
    );
    const behaviour = runBehaviour(
      result.steps,
      { termination: result.termination, patch: finalPatch, applies: true, passToPassFailed: verdict.passToPass.failed },
      { testCmd: task.test_cmd, relevantFiles: p.solutionFiles, prefixPatch: p.state.patch },
    );
    return { ...result, backend, saved, verdict, behaviour };
  }

  it('the prefix is the first three reference steps with their recorded observations, and names the solution files', () => {
    expect(prefix.steps.map((s) => s.from)).toEqual([0, 1, 2]);
    expect(prefix.text.startsWith('# Task\n<task>\nPercentage discounts are wrong')).toBe(true);
    expect(prefix.text).toContain('<bash>\ncat cart/pricing.py\n</bash>\n<observation>\n"""Cart pricing helpers."""');
    expect(prefix.state.patch).toBe('');
    expect(prefix.solutionFiles).toEqual(['cart/pricing.py']);
  });

  it("a prefix that reaches the reference's fix is refused (a sed fix: the line is in the tree it leaves)", async () => {
    await expect(buildPrefix(reference, task, { steps: 6, profile: 'bash', format: asapFormat('md+xml') }, sb)).rejects.toThrow(
      /6-step prefix leaks the reference's solution: the tree it leaves contains the added line "return round\(total \* \(1 - discount \/ 100\), 2\)" \(cart\/pricing\.py\)/,
    );
    // Five steps stop right before the fix: accepted.
    await expect(buildPrefix(reference, task, { steps: 5, profile: 'bash', format: asapFormat('md+xml') }, sb)).resolves.toMatchObject({
      steps: expect.any(Array),
    });
  });

  it('a prefix whose thought quotes the gold patch is refused', async () => {
    const gold =
      'diff --git a/cart/pricing.py b/cart/pricing.py\n--- a/cart/pricing.py\n+++ b/cart/pricing.py\n@@ -5,4 +5,4 @@\n-    return round(total - discount, 2)\n+    return round(total * (100 - discount) / 100, 2)\n';
    const leaky = structuredClone(reference);
    leaky.steps[1]!.thought = 'I bet the answer is `return round(total * (100 - discount) / 100, 2)`.';
    await expect(
      buildPrefix(leaky, { ...task, patch: gold }, { steps: 3, profile: 'bash', format: asapFormat('md+xml') }, sb),
    ).rejects.toThrow(/leaks the gold patch: its text contains/);
    // The same reference without the quote passes with that gold patch.
    await expect(
      buildPrefix(reference, { ...task, patch: gold }, { steps: 3, profile: 'bash', format: asapFormat('md+xml') }, sb),
    ).resolves.toBeTruthy();
  });

  it('edit, test, submit: submitted, resolved, and the behaviour says so', async () => {
    const run = await episode([FIX, 'Check.\n<bash>\npython -m pytest -q tests\n</bash>', SUBMIT]);
    expect(run.termination).toBe('submitted');
    expect(run.steps.map((s) => s.outcome)).toEqual(['executed', 'executed', 'submitted']);
    expect(run.verdict.resolved).toBe(true);
    expect(run.saved).toHaveLength(3);
    expect(run.backend.prompts[0]).toBe(`${prefix.text}\n## Thinking\n`);
    expect(run.backend.prompts[1]).toBe(`${prefix.text}\n## Thinking\n${FIX}\n<observation>\n\n</observation>\n\n## Thinking\n`);
    expect(run.behaviour).toMatchObject({
      turns: 3,
      parsable_turns: 3,
      valid_tool_calls: 3,
      edit_steps: 1,
      autonomous_edits: true,
      active_testing: true,
      applicable_patch: true,
      empty_patch: false,
      explicit_submission: true,
      repeated_action_termination: false,
      recoveries: { format: 0, submit: 0, repeat: 0 },
      regressions: 0,
      changed_lines: 2,
      relevant_file_access: true,
      network_attempts: [],
    });
  });

  it('submit without an edit: rejected once with a hint, the second time accepted as an empty patch', async () => {
    const run = await episode([SUBMIT, SUBMIT]);
    expect(run.steps.map((s) => s.outcome)).toEqual(['submit_rejected', 'submitted_empty']);
    expect(run.termination).toBe('submitted_empty');
    expect(run.backend.prompts[1]).toContain(`<observation>\n${HINTS.submit}\n</observation>`);
    expect(run.verdict.resolved).toBe(false);
    expect(run.behaviour).toMatchObject({
      empty_patch: true,
      applicable_patch: false,
      explicit_submission: true,
      recoveries: { format: 0, submit: 1, repeat: 0 },
    });
  });

  it('a rejected submit, then an edit, then submit: submitted and resolved', async () => {
    const run = await episode([SUBMIT, FIX, SUBMIT]);
    expect(run.steps.map((s) => s.outcome)).toEqual(['submit_rejected', 'executed', 'submitted']);
    expect(run.verdict.resolved).toBe(true);
  });

  it('a reproduction script alone is not a source edit: its submit is rejected', async () => {
    const run = await episode(['Write a repro.\n<bash>\necho "print(1)" > repro.py\n</bash>', SUBMIT, SUBMIT]);
    expect(run.steps.map((s) => s.outcome)).toEqual(['executed', 'submit_rejected', 'submitted_empty']);
    expect(run.behaviour).toMatchObject({ autonomous_edits: false, empty_patch: true });
  });

  it('the same action again: suppressed once with a hint, the second time the episode ends', async () => {
    const ls = 'Look.\n<bash>\nls\n</bash>';
    const run = await episode([ls, ls, 'Look again.\n<bash>\nls\n</bash>']);
    expect(run.steps.map((s) => s.outcome)).toEqual(['executed', 'repeat_suppressed', 'repeated_action']);
    expect(run.termination).toBe('repeated_action');
    expect(run.backend.prompts[2]).toContain(`<observation>\n${HINTS.repeat}\n</observation>`);
    expect(run.behaviour).toMatchObject({ repeated_action_termination: true, recoveries: { format: 0, submit: 0, repeat: 1 } });
  });

  it('a repeat that is not consecutive is allowed; one hint, then a later repeat ends the episode', async () => {
    const ls = 'Look.\n<bash>\nls\n</bash>';
    const pwd = 'Where?\n<bash>\npwd\n</bash>';
    const run = await episode([ls, pwd, ls, ls, pwd, pwd]);
    expect(run.steps.map((s) => s.outcome)).toEqual([
      'executed',
      'executed',
      'executed',
      'repeat_suppressed',
      'executed',
      'repeated_action',
    ]);
  });

  it('unparsable output: fed back once with a format hint, the second time the episode ends', async () => {
    const run = await episode(['I think the bug is in pricing.', 'Still no action <bash>ls']);
    expect(run.steps.map((s) => s.outcome)).toEqual(['format_error', 'format_ended']);
    expect(run.termination).toBe('format_error');
    expect(run.steps[0]!.error).toMatch(/no action element/);
    expect(run.steps[1]!.error).toMatch(/not closed/);
    expect(run.backend.prompts[1]).toContain('<observation>\nFormat error: no action element');
    expect(run.behaviour).toMatchObject({ parsable_turns: 0, valid_tool_calls: 0, recoveries: { format: 1, submit: 0, repeat: 0 } });
  });

  it('the editor tool in the bash profile is a structural failure that shares the format budget', async () => {
    const view = 'View it.\n<str_replace_editor command="view" path="cart/pricing.py">\n</str_replace_editor>';
    const run = await episode([view, 'Nothing.']);
    expect(run.steps.map((s) => s.outcome)).toEqual(['format_error', 'format_ended']);
    expect(run.steps[0]!.error).toMatch(/not in the bash profile/);
    expect(run.backend.prompts[1]).toContain(HINTS.tool('str_replace_editor'));
  });

  it('the step limit ends an episode that never submits; its patch is still graded', async () => {
    const run = await episode([FIX, 'Look.\n<bash>\nls\n</bash>'], settings({ maxSteps: 2 }));
    expect(run.termination).toBe('step_limit');
    expect(run.verdict.resolved).toBe(true);
    expect(run.behaviour.explicit_submission).toBe(false);
  });

  it('the editor profile edits through str_replace_editor; a rejected edit is not a valid call', async () => {
    const edit = (oldStr: string) =>
      `Fix.\n<str_replace_editor command="str_replace" path="cart/pricing.py">\n<old_str>${oldStr}</old_str>\n<new_str>round(total * (1 - discount / 100), 2)</new_str>\n</str_replace_editor>`;
    const editorPrefix = await buildPrefix(reference, task, { steps: 3, profile: 'editor', format: asapFormat('md+xml') }, sb);
    const run = await episode(
      [edit('no such text'), edit('round(total - discount, 2)'), SUBMIT],
      settings({}, 'md+xml', 'editor'),
      editorPrefix,
    );
    expect(run.steps.map((s) => s.outcome)).toEqual(['executed', 'executed', 'submitted']);
    expect(run.steps[0]!.exitCode).toBe(1);
    expect(run.verdict.resolved).toBe(true);
    expect(run.behaviour).toMatchObject({ valid_tool_calls: 2, edit_steps: 1 });
  });

  it('observations past 100,000 characters reach the model cut, with a marker', async () => {
    const run = await episode([`Big output.\n<bash>\npython3 -c "print('x' * ${OBSERVATION_LIMIT + 5000})"\n</bash>`, SUBMIT, SUBMIT]);
    expect(run.steps[0]!.observation!.length).toBeGreaterThan(OBSERVATION_LIMIT);
    const shown = run.backend.prompts[1]!;
    expect(shown).toContain('[... observation truncated: 5001 more characters ...]');
    expect(shown).not.toContain('x'.repeat(OBSERVATION_LIMIT + 1));
  });

  it('network access is attempted, audited, and blocked by the sandbox', async () => {
    const run = await episode([
      `Fetch docs.\n<bash>\npython3 -c "import urllib.request; urllib.request.urlopen('http://example.com', timeout=5)"\n</bash>`,
      SUBMIT,
      SUBMIT,
    ]);
    expect(run.behaviour.network_attempts).toHaveLength(1);
    expect(run.behaviour.network_attempts[0]).toMatchObject({ step: 0, blocked: true });
    expect(run.behaviour.network_attempts[0]!.command).toContain('urllib.request');
  });

  it('a regression (a PASS_TO_PASS test broken) is counted', async () => {
    const breakTax = `Break tax.\n<bash>\nsed -i 's/return round(total \\* (1 + rate \\/ 100), 2)/return total/' cart/pricing.py\n</bash>`;
    const run = await episode([FIX, breakTax, SUBMIT]);
    expect(run.verdict.resolved).toBe(false);
    expect(run.behaviour.regressions).toBe(1);
  });

  it("the bash profile says an OpenHands reference's editor steps with shell commands, with live observations", async () => {
    const jsTask = (await loadTaskFile(join(REPO_ROOT, 'verifiers', 'strings-js__title-case-9', 'task.json')))[0]!;
    const openhands = importTrajectory(join(REPO_ROOT, 'trajectories', 'strings-js__title-case-9.openhands.json'));
    const jsSb = await openSandbox('local', jsTask);
    try {
      const bashPrefix = await buildPrefix(openhands, jsTask, { steps: 3, profile: 'bash', format: asapFormat('md+xml') }, jsSb);
      expect(bashPrefix.steps.map((s) => s.action.kind)).toEqual(['bash', 'bash', 'bash']);
      expect(bashPrefix.steps[0]!.action).toEqual({ kind: 'bash', command: "cat -n '/testbed/src/titleCase.js'" });
      expect(bashPrefix.steps[0]!.observation).toMatch(/^\s+1\t/);
      expect(bashPrefix.text).not.toContain('str_replace_editor');
      expect(bashPrefix.state.patch).toContain('+++ b/repro.mjs');
      const editorPrefix = await buildPrefix(openhands, jsTask, { steps: 3, profile: 'editor', format: asapFormat('md+xml') }, jsSb);
      expect(editorPrefix.steps.map((s) => s.action.kind)).toEqual(['str_replace_editor', 'str_replace_editor', 'bash']);
      expect(editorPrefix.state.patch).toBe(bashPrefix.state.patch);
    } finally {
      await jsSb.close();
    }
  });

  it.each(['xml', 'json', 'markdown'] as const)('the %s format variant runs the same episode', async (name) => {
    const format = asapFormat(name);
    const variantPrefix = await buildPrefix(reference, task, { steps: 3, profile: 'bash', format }, sb);
    const write = (thought: string, action: Parameters<typeof format.renderStep>[0]['action']) => format.renderStep({ thought, action });
    const fix = write('Fix it.', {
      kind: 'bash',
      command: "sed -i 's/return round(total - discount, 2)/return round(total * (1 - discount \\/ 100), 2)/' cart/pricing.py",
    });
    const run = await episode([fix, write('Done.', { kind: 'submit' })], settings({}, name), variantPrefix);
    expect(run.steps.map((s) => s.outcome)).toEqual(['executed', 'submitted']);
    expect(run.verdict.resolved).toBe(true);
    expect(run.backend.prompts[0]!.endsWith(format.cue)).toBe(true);
  });
});

describe.skipIf(skipWithoutDocker || skipWithoutBwrap)('ASAP episodes in the docker sandbox', () => {
  it('build the same prefix as bubblewrap, run an episode, audit a blocked network attempt, and grade the patch', async () => {
    const local = await openSandbox('local', task);
    const docker = await openSandbox('docker', task);
    try {
      const format = asapFormat('md+xml');
      const localPrefix = await buildPrefix(reference, task, { steps: 3, profile: 'bash', format }, local);
      const dockerPrefix = await buildPrefix(reference, task, { steps: 3, profile: 'bash', format }, docker);
      expect(dockerPrefix).toEqual(localPrefix);
      await docker.restore({ base_commit: task.base_commit, patch: dockerPrefix.state.patch });
      const backend = new ScriptedBackend([
        `Fetch docs.\n<bash>\npython3 -c "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"\n</bash>`,
        FIX,
        SUBMIT,
      ]);
      const run = await runEpisode(
        {
          backend,
          sandbox: docker,
          baseCommit: task.base_commit,
          prefixText: dockerPrefix.text,
          prefixState: dockerPrefix.state,
          onStep: async () => {},
        },
        settings(),
      );
      expect(run.termination).toBe('submitted');
      const finalPatch = run.steps.at(-1)!.patch;
      const verdict = await verifyState(
        freshSandboxes((t) => openSandbox('docker', t), task),
        task,
        { base_commit: task.base_commit, patch: finalPatch },
      );
      expect(verdict.resolved).toBe(true);
      const behaviour = runBehaviour(
        run.steps,
        { termination: run.termination, patch: finalPatch, applies: true, passToPassFailed: verdict.passToPass.failed },
        { testCmd: task.test_cmd, relevantFiles: dockerPrefix.solutionFiles, prefixPatch: '' },
      );
      expect(behaviour.network_attempts).toEqual([
        expect.objectContaining({ step: 0, blocked: true, evidence: expect.stringMatching(/Network is unreachable/) }),
      ]);
    } finally {
      await Promise.all([local.close(), docker.close()]);
    }
  }, 180_000);
});
