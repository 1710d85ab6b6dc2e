/** `probe inspect`: the quality report of a probe set, read before trusting a score computed on it. */
import { dirname, resolve } from 'node:path';
import { Command } from 'commander';
import { readTokenizerDir } from '../backends/checkpoint-dir.ts';
import { CheckpointTokenizer } from '../backends/onnx/tokenizer.ts';
import { loadProbeItems, probeFiles } from '../probes/load.ts';
import { probeQuality, type QualityOptions } from '../report/probe-quality.ts';
import { renderProbeQuality } from '../report/probe-quality-text.ts';
import { trajectoryLengths } from '../report/trajectory-lengths.ts';

interface InspectFlags {
  json?: boolean;
  trajectoriesRoot?: string;
  tokenizer?: string;
}

export function inspectCommand(): Command {
  return new Command('inspect')
    .description(
      'Report on a probe set: items per format, distractors by source, gold lengths, where T* falls, and leak checks (text the model could copy from its context, items that are not independent).',
    )
    .argument('<probes>', 'a probe file (.jsonl) or a directory of them')
    .option(
      '--trajectories-root <dir>',
      "where the items' source.file paths start, to read trajectory lengths (default: the directory above the probe file, then the current directory)",
    )
    .option('--tokenizer <dir>', 'a checkpoint or tokenizer directory: also report gold lengths in its tokens')
    .option('--json', 'print the report as one JSON document on stdout')
    .addHelpText(
      'after',
      '\nExample:\n  probe inspect probes/demo.jsonl\n  probe inspect runs/probes.jsonl --tokenizer checkpoints/llama-bpe8k-s1500 --json',
    )
    .action((path: string, flags: InspectFlags) => {
      const items = loadProbeItems(path);
      const options: QualityOptions = {
        trajectoryLengths: trajectoryLengths(
          items,
          flags.trajectoriesRoot ? [flags.trajectoriesRoot] : [resolve(dirname(probeFiles(path)[0]!), '..'), process.cwd()],
        ),
      };
      if (flags.tokenizer) {
        const tokenizer = new CheckpointTokenizer(readTokenizerDir(flags.tokenizer));
        options.tokens = { name: flags.tokenizer, count: (text) => tokenizer.encode(text).length };
      }
      const report = probeQuality(items, options);
      if (flags.json) process.stdout.write(`${JSON.stringify({ probes: path, ...report }, null, 2)}\n`);
      else process.stderr.write(renderProbeQuality(report, path));
    });
}
