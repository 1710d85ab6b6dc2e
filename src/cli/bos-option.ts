/** `--bos auto|always|never`: whether a BOS token goes before every context scored and prompt sampled (backends/bos.ts). */
import { type Command, Option } from 'commander';
import { BOS_POLICIES, type BosPolicy } from '../backends/bos.ts';

export interface BosFlags {
  bos?: BosPolicy;
}

export function addBosOption(command: Command): Command {
  return command.addOption(
    new Option(
      '--bos <policy>',
      "BOS token before every context and prompt: auto = what the checkpoint's tokenizer does (add_bos_token in tokenizer_config.json, else its post-processor; as HF and vLLM), always, never (lm-evaluation-harness's default)",
    )
      .choices([...BOS_POLICIES])
      .default('auto'),
  );
}
