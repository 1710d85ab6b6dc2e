/**
 * The real rungs of the demo ladder: one LlamaForCausalLM trained on real Python source
 * (../shared/models/README.md), at three points of one training run. Their order at
 * modelling code is known from held-out BPB, measured by the run that made them.
 */
export interface RealRung {
  name: string;
  /** Directory under ../shared/models. */
  source: string;
  trainSteps: number;
  /** Held-out code BPB of the float32 original (60 held-out source files, first 1,024 tokens each). */
  heldoutCodeBpb: number;
  description: string;
}

const ARCH =
  'LlamaForCausalLM (4 layers, hidden 128, GQA 4/2 heads, RoPE, RMSNorm, tied embeddings, byte-level BPE of 8,192 tokens; 1.84 M parameters) trained on 13.2 M tokens of real Python source';

export const REAL_RUNGS: RealRung[] = [
  {
    name: 'llama-bpe8k-s40',
    source: 'llama-bpe8k-s40',
    trainSteps: 40,
    heldoutCodeBpb: 2.671083382659728,
    description: `${ARCH}, after 40 steps.`,
  },
  {
    name: 'llama-bpe8k-s250',
    source: 'llama-bpe8k-s250',
    trainSteps: 250,
    heldoutCodeBpb: 1.4277576256034528,
    description: `${ARCH}, after 250 steps.`,
  },
  {
    name: 'llama-bpe8k-s1500',
    source: 'llama-bpe8k-s1500',
    trainSteps: 1500,
    heldoutCodeBpb: 1.2805224071474193,
    description: `${ARCH}, after 1,500 steps.`,
  },
];
