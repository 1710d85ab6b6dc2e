/** `probe --help`: the verbs grouped by what a user does, each example a real command; unknown verbs named in one line. */
import { describe, expect, it } from 'vitest';
import { VERB_GROUPS, VERBS } from '../src/cli/verbs.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { commandProblem, shellWords } from './helpers/command-lines.ts';

describe('probe --help', () => {
  it('lists every verb under its group, each with an example', () => {
    const run = runProbe(['--help']);
    expect(run.code, run.stderr).toBe(0);
    for (const group of VERB_GROUPS) expect(run.stdout).toContain(`\n${group.title}:\n`);
    for (const verb of VERBS.values()) {
      expect(run.stdout).toMatch(new RegExp(`\\n  ${verb.name} +\\S`));
      expect(run.stdout).toContain(`$ ${verb.example}`);
    }
    // The group order a user follows: start, build probes, score, run agents, read results.
    const titles = VERB_GROUPS.map((g) => run.stdout.indexOf(`${g.title}:`));
    expect(titles).toEqual([...titles].sort((a, b) => a - b));
  });

  it('every example is a real verb with real flags', async () => {
    for (const verb of VERBS.values()) {
      expect(await commandProblem(verb.example)).toBeUndefined();
      expect(shellWords(verb.example)[1]).toBe(verb.name);
    }
    // The checker itself refuses what is not real.
    expect(await commandProblem('probe bpb --no-such-flag')).toMatch(/bpb has no flag --no-such-flag/);
    expect(await commandProblem('probe frobnicate')).toMatch(/unknown verb frobnicate/);
  });

  it('a bare probe shows the help as a usage error; probe help VERB is VERB --help', () => {
    const bare = runProbe([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('Score checkpoints:');
    const viaHelp = runProbe(['help', 'passk']);
    const direct = runProbe(['passk', '--help']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(direct.stdout);
    expect(direct.stdout).toMatch(/^Usage: probe passk/);
  });

  it('an unknown verb is one line naming the verbs (exit 2)', () => {
    expectOneLineError(runProbe(['bpd', '--ckpt', 'x']), /unknown verb 'bpd' \(one of: demo, .*bpb.*\)/);
    expectOneLineError(runProbe(['--no-such-option']), /unknown option '--no-such-option'/);
  });
});
