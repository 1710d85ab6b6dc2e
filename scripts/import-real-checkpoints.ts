/**
 * Brings the real checkpoints of ../shared/models (one LlamaForCausalLM trained on real
 * Python source, snapshotted at 40, 250 and 1,500 steps) into the demo ladder under
 * `checkpoints/`, small enough to ship in the repository:
 *
 * - every float32 weight is stored as float16 and widened back by a Cast node, which
 *   onnxruntime folds once at load (float16 → float32 is exact), so the graph computes
 *   in float32 on weights rounded to float16;
 * - the LM head, which the export stores as a second copy of the tied embedding
 *   (transposed), is a Transpose of the embedding instead (also folded at load).
 *
 * Operators, names, inputs and outputs are the export's own. Each directory's
 * config.json gains a `probe_ladder` block: where it came from and its held-out code BPB
 * (measured on the float32 originals; what rounding the weights changes is measured by
 * test/real-ladder.test.ts). Usage: npx tsx scripts/import-real-checkpoints.ts [--from DIR] [--out DIR]
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import onnxProto from 'onnx-proto';
import { toHalfBits } from './checkpoints/onnx-graph.ts';
import { encodeModel, floatsOf, readModel, vocabTensors } from './checkpoints/real-graph.ts';
import { REAL_RUNGS } from './checkpoints/real-rungs.ts';

const { onnx } = onnxProto;
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const fromFlag = process.argv.indexOf('--from');
const from = fromFlag >= 0 ? resolve(process.argv[fromFlag + 1]!) : join(repo, '..', 'shared', 'models');
const outFlag = process.argv.indexOf('--out');
const outRoot = outFlag >= 0 ? resolve(process.argv[outFlag + 1]!) : join(repo, 'checkpoints');
const FLOAT = onnx.TensorProto.DataType.FLOAT;
const FLOAT16 = onnx.TensorProto.DataType.FLOAT16;

for (const rung of REAL_RUNGS) {
  const source = join(from, rung.source);
  const model = readModel(join(source, 'onnx', 'model.onnx'));
  const graph = model.graph!;
  const { embed, head } = vocabTensors(model);
  const [vocab, hidden] = embed.dims!.map(Number) as [number, number];
  const nodes: onnxProto.onnx.INodeProto[] = [];
  // The head must be the embedding transposed, value for value, before it may be dropped.
  if (head) {
    const e = floatsOf(embed);
    const h = floatsOf(head);
    for (let v = 0; v < vocab; v++)
      for (let d = 0; d < hidden; d++) {
        if (h[d * vocab + v] !== e[v * hidden + d]) throw new Error(`${rung.source}: the LM head is not the tied embedding transposed`);
      }
  }
  const kept = graph.initializer!.filter((t) => t !== head);
  for (const tensor of kept) {
    if (tensor.dataType !== FLOAT) continue;
    const name = tensor.name!;
    const half = toHalfBits(floatsOf(tensor));
    tensor.name = `${name}.f16`;
    tensor.dataType = FLOAT16;
    tensor.rawData = Buffer.from(half.buffer, half.byteOffset, half.byteLength);
    tensor.floatData = [];
    nodes.push(
      onnx.NodeProto.create({
        opType: 'Cast',
        name: `widen:${name}`,
        input: [tensor.name],
        output: [name],
        attribute: [{ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: FLOAT }],
      }),
    );
  }
  if (head)
    nodes.push(
      onnx.NodeProto.create({
        opType: 'Transpose',
        name: 'tied:lm_head',
        input: [embed.name!.replace(/\.f16$/, '')],
        output: [head.name!],
        attribute: [{ name: 'perm', type: onnx.AttributeProto.AttributeType.INTS, ints: [1, 0] }],
      }),
    );
  graph.initializer = kept;
  graph.node = [...nodes, ...graph.node!];
  model.docString = `${rung.source} from ../shared/models: weights stored as float16, widened to float32 at load; LM head tied (scripts/import-real-checkpoints.ts)`;

  const out = join(outRoot, rung.name);
  mkdirSync(join(out, 'onnx'), { recursive: true });
  writeFileSync(join(out, 'onnx', 'model.onnx'), encodeModel(model));
  for (const file of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(source, file), join(out, file));
  const config = JSON.parse(readFileSync(join(source, 'config.json'), 'utf8')) as Record<string, unknown>;
  config.probe_ladder = {
    name: rung.name,
    description: rung.description,
    source: `../shared/models/${rung.source}`,
    train_steps: rung.trainSteps,
    heldout_code_bpb: rung.heldoutCodeBpb,
    weights: 'float16 storage of the float32 original, widened at load',
  };
  writeFileSync(join(out, 'config.json'), `${JSON.stringify(config, null, 1)}\n`);
  console.error(`${rung.name}: ${vocab} × ${hidden} embedding, ${kept.length} initializers → ${out}`);
}
