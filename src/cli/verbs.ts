/**
 * The verbs, grouped by what a user does, each with one example. `probe --help` is printed from
 * this table alone, and a run loads only its own verb's module: importing every verb would load
 * every dependency (the tokenizer library, Docker's client, the Parquet reader) before a word of
 * help, and that is most of a second.
 */
import type { Command } from 'commander';

export interface Verb {
  readonly name: string;
  readonly summary: string;
  readonly example: string;
  readonly load: () => Promise<Command>;
}

export interface VerbGroup {
  readonly title: string;
  readonly verbs: readonly Verb[];
}

export const VERB_GROUPS: readonly VerbGroup[] = [
  {
    title: 'Start here',
    verbs: [
      {
        name: 'demo',
        summary: 'every rung on the embedded checkpoints and demo suite: a ranking table and an HTML report',
        example: 'probe demo',
        load: async () => (await import('./demo.ts')).demoCommand(),
      },
      {
        name: 'setup',
        summary: 'check (and as root install) what the jailed sandbox needs',
        example: 'probe setup --check',
        load: async () => (await import('./setup.ts')).setupCommand(),
      },
    ],
  },
  {
    title: 'Build probes from trajectories',
    verbs: [
      {
        name: 'task',
        summary:
          'a task record (DIR/task.json) from DIR/repo/ (a git checkout or a plain tree) and DIR/tests-added/, for your own trajectories; task check --terminal DIR…: the oracle run over Terminal-Bench task sets',
        example:
          'probe task my-task --test-cmd "python3 -m pytest -rA tests/test_fix.py" --fail tests/test_fix.py::test_fix --problem-file issue.md',
        load: async () => (await import('./task.ts')).taskCommand(),
      },
      {
        name: 'replay',
        summary: 'replay one successful trajectory, verify after every edit, find the decisive step T*',
        example: 'probe replay trajectories/shop__pricing-1.mini.traj.json --task verifiers/shop__pricing-1/task.json',
        load: async () => (await import('./replay.ts')).replayCommand(),
      },
      {
        name: 'build',
        summary: 'replay a directory of trajectories and write a probe item at each T*, with near-miss distractors',
        example: 'probe build --trajectories trajectories --tasks verifiers --out my-probes/demo.jsonl',
        load: async () => (await import('./build.ts')).buildCommand(),
      },
      {
        name: 'inspect',
        summary: "a probe set's quality report: leaks, distractors by source, lengths",
        example: 'probe inspect probes/demo.jsonl',
        load: async () => (await import('./inspect.ts')).inspectCommand(),
      },
    ],
  },
  {
    title: 'Score checkpoints',
    verbs: [
      {
        name: 'bpb',
        summary: 'Decisive-Action BPB: bits per byte of the gold decisive action (cheapest, seconds)',
        example: 'probe bpb --ckpt path/to/ckpt-a --ckpt path/to/ckpt-b',
        load: async () => (await import('./bpb.ts')).bpbCommand(),
      },
      {
        name: 'mcq',
        summary: 'Patch MCQ: the gold action against verifier-rejected near misses',
        example: 'probe mcq --ckpt path/to/ckpt-a',
        load: async () => (await import('./mcq.ts')).mcqCommand(),
      },
      {
        name: 'passk',
        summary: "prefix-conditioned pass@K: samples at T*, run against the task's tests",
        example: 'probe passk --ckpt path/to/ckpt-a -n 8',
        load: async () => (await import('./passk.ts')).passkCommand(),
      },
      {
        name: 'screen',
        summary: 'every rung on every checkpoint: one table and a recommended shortlist',
        example: 'probe screen --ckpt path/to/ckpt-a --ckpt path/to/ckpt-b',
        load: async () => (await import('./screen.ts')).screenCommand(),
      },
      {
        name: 'watch',
        summary: 'follow a training run: score each checkpoint as it lands, and each probe against training step',
        example: 'probe watch /ckpts/run-7 --out runs/watch-run-7',
        load: async () => (await import('./watch.ts')).watchCommand(),
      },
      {
        name: 'aptbench',
        summary: 'APTBench-format items: letters, commands, ROUGE-L',
        example: 'probe aptbench --items items.jsonl --prompt template.txt --ckpt path/to/ckpt-a',
        load: async () => (await import('./aptbench.ts')).aptbenchCommand(),
      },
    ],
  },
  {
    title: 'Run agents',
    verbs: [
      {
        name: 'asap',
        summary: 'the frozen base model drives whole episodes (SWE, Terminal-Bench, deep research)',
        example: 'probe asap --ckpt path/to/ckpt-a --runs 8',
        load: async () => (await import('./asap.ts')).asapCommand(),
      },
      {
        name: 'validate',
        summary: 'the validation study: each probe against ASAP, with rank correlations and their intervals',
        example: 'probe validate --ckpt ckpt-a --ckpt ckpt-b --ckpt ckpt-c --trajectories trajectories --tasks verifiers',
        load: async () => (await import('./validate.ts')).validateCommand(),
      },
      {
        name: 'serve',
        summary: 'an OpenAI-compatible server for a checkpoint directory run in process (scoring batched across requests)',
        example: 'probe serve --ckpt path/to/ckpt-a --port 8000',
        load: async () => (await import('./serve.ts')).serveCommand(),
      },
    ],
  },
  {
    title: 'Read results',
    verbs: [
      {
        name: 'report',
        summary: 'rankings and one self-contained HTML report from run directories',
        example: 'probe report runs/bpb-* --html report.html',
        load: async () => (await import('./report.ts')).reportCommand(),
      },
      {
        name: 'correlate',
        summary: 'Spearman, Kendall and Pearson of each metric against downstream scores',
        example: 'probe correlate --results bpb.json --scores downstream.csv',
        load: async () => (await import('./correlate.ts')).correlateCommand(),
      },
    ],
  },
];

export const VERBS: ReadonlyMap<string, Verb> = new Map(VERB_GROUPS.flatMap((group) => group.verbs.map((verb) => [verb.name, verb])));

/** `probe --help`: the verbs by group, each with its example. */
export function groupedHelp(): string {
  const width = Math.max(...[...VERBS.keys()].map((name) => name.length));
  const lines = [
    'Usage: probe <verb> [options]        probe <verb> --help for its flags',
    '',
    'Screen base LLM checkpoints for agentic post-training potential.',
  ];
  for (const group of VERB_GROUPS) {
    lines.push('', `${group.title}:`);
    for (const verb of group.verbs) {
      lines.push(`  ${verb.name.padEnd(width)}  ${verb.summary}`, `  ${' '.repeat(width)}  $ ${verb.example}`);
    }
  }
  lines.push(
    '',
    'Options: --version, -h/--help.  The manual: docs/verbs.md.',
    'Exit codes: 0 success, 1 failed run, 2 bad usage, input or environment (one line naming the file, field, flag, path or port).',
    'PROBE_DEBUG=1 adds the stack trace to every error; without it only a bug in probe prints one.',
    '',
  );
  return lines.join('\n');
}
