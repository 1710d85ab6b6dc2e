/**
 * The weights of an ONNX export (transformers.js / Optimum layout): the graph file `--dtype`
 * picks under `onnx/` (dtype.ts). onnxruntime opens the graph and its external data itself,
 * so nothing under `onnx/` may be a FIFO, a device or a loop: the tree is checked whole
 * before onnxruntime sees it.
 */
import { join } from 'node:path';
import { checkTree } from '../../util/safe-tree.ts';
import type { CheckpointFiles } from '../checkpoint-dir.ts';
import { CHECKPOINT_DIR, CHECKPOINT_LIMITS } from '../checkpoint-limits.ts';
import { type Dtype, modelPathOf } from './dtype.ts';

export function readOnnxWeights(dir: string, dtype: Dtype): Pick<CheckpointFiles, 'graph' | 'modelPath' | 'dtype'> {
  const modelPath = modelPathOf(dir, dtype);
  checkTree(join(dir, 'onnx'), { links: 'follow', limits: CHECKPOINT_LIMITS, what: CHECKPOINT_DIR });
  return { modelPath, graph: { kind: 'file' }, dtype };
}
