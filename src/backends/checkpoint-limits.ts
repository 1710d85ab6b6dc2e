/** How a checkpoint directory's files are read: what they are called in messages, and their caps (checkpoint-dir.ts and each weights' reader). */
import type { TreeLimits } from '../util/safe-tree.ts';

/** What the checkpoint's files are, in safe-tree's messages. */
export const CHECKPOINT_DIR = 'the checkpoint directory';

/** A checkpoint's weights may run to any size (they are streamed, never held); its files and directories are counted. */
export const CHECKPOINT_LIMITS: Partial<TreeLimits> = { fileBytes: Number.POSITIVE_INFINITY, totalBytes: Number.POSITIVE_INFINITY };

/** Bytes a checkpoint's JSON file may hold: several times a real tokenizer.json of a 256k-token vocabulary (some tens of MB). */
export const CHECKPOINT_JSON_BYTES = 128 * 1024 * 1024;
