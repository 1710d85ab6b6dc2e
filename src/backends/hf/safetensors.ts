/**
 * probe's own reader of Hugging Face safetensors checkpoints: `model.safetensors`, or the
 * shards `model.safetensors.index.json` names. No dependency: the format is 8 bytes of
 * little-endian u64 N, N bytes of UTF-8 JSON header (`{ "__metadata__"?: {…}, "<tensor>":
 * { dtype, shape, data_offsets: [begin, end] } }`), then the data section, the offsets
 * relative to its start (8 + N).
 *
 * A checkpoint is anyone's (a download, a trainer's output), and its weight files can run
 * to many GB, so:
 *
 * - Only headers are read up front, each with one positioned read of 8 bytes and one of N
 *   (N capped at 100 MB, as the reference implementation caps it; real headers are under
 *   1 MB), and every entry is checked then — shape, offsets inside the file, byte length
 *   agreeing with shape × dtype width, no two tensors sharing bytes — so a bad file is one
 *   InputError naming the file and the tensor before any weight is used, never a crash, a
 *   hang or an allocation the file merely claims.
 * - A tensor's values are read later (`readFloat32`) with positioned reads of exactly its
 *   bytes; the file is never loaded whole.
 * - Files are opened through safe-tree: a FIFO or a device in a file's place is refused.
 *   Links are followed wherever they lead (the Hugging Face cache keeps a snapshot's files
 *   as links into its blobs/), but only to regular files.
 *
 * Sharded checkpoints: the index and the shards must agree exactly. A shard name is a plain
 * file name in the directory; every tensor the index names must be in its shard; a tensor
 * a shard holds that the index assigns to another shard, or to none, is refused (a tensor
 * in two shards, or shards mixed from two saves, leaves which weights are meant a guess).
 *
 * Little-endian host assumed (x86-64, arm64): F32 bytes are copied straight into a
 * Float32Array, halves read through a Uint16Array.
 */
import { closeSync, lstatSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { join, resolve } from 'node:path';
import { describeCause, InputError } from '../../errors.ts';
import { openRegularFile, readJsonFile, regularFile } from '../../util/safe-tree.ts';
import { halvesToFloats } from '../onnx/half.ts';
import { CHECKPOINT_DIR } from '../checkpoint-limits.ts';

/** Other dtypes are listed but refused when read as floats. */
export type TensorDtype = 'F32' | 'F16' | 'BF16' | string;

export interface TensorEntry {
  name: string;
  /** The shard file, absolute. */
  file: string;
  dtype: TensorDtype;
  shape: number[];
  /** Absolute byte offset of the tensor's data in `file`. */
  offset: number;
  /** Byte length of the data (= product(shape) × dtype width). */
  length: number;
}

export interface SafetensorsCheckpoint {
  /** The weight files read (one, or the index's shards), absolute. */
  files: string[];
  /** Every tensor, by name. */
  tensors: ReadonlyMap<string, TensorEntry>;
  /** The tensor `name`, or an InputError naming the file it should be in (the index, or model.safetensors) and the tensor (field), saying what `role` it plays (e.g. "layer 3 q projection"). */
  tensor(name: string, role: string): TensorEntry;
  has(name: string): boolean;
}

export const SINGLE_FILE = 'model.safetensors';
export const INDEX_FILE = 'model.safetensors.index.json';

/** Bytes the index may hold: the index of a model of tens of thousands of tensors is a few MB. */
const INDEX_JSON_BYTES = 128 * 1024 * 1024;

/** The reference implementation's cap on a header (100 MB); real headers are under 1 MB. */
export const MAX_HEADER_BYTES = 100_000_000;

/**
 * Bytes per element of the dtypes safetensors defines with a whole-byte width: for these
 * a header's byte range must match its shape. A Map, not an object: a dtype string
 * "constructor" must not find Object.prototype's.
 */
const DTYPE_BYTES: ReadonlyMap<string, number> = new Map([
  ['BOOL', 1],
  ['U8', 1],
  ['I8', 1],
  ['F8_E5M2', 1],
  ['F8_E4M3', 1],
  ['F8_E8M0', 1],
  ['I16', 2],
  ['U16', 2],
  ['F16', 2],
  ['BF16', 2],
  ['I32', 4],
  ['U32', 4],
  ['F32', 4],
  ['I64', 8],
  ['U64', 8],
  ['F64', 8],
  ['C64', 8],
]);

/** The dtypes `readFloat32` reads: F32 as is, the halves widened (exactly: every half is a float32). */
const FLOAT_DTYPES = ['F32', 'F16', 'BF16'];

/** Elements converted per read of a half tensor: bounds the scratch memory, not the tensor. */
const HALF_CHUNK_ELEMENTS = 1 << 20;

/** Bytes per read of an F32 tensor: one `read` returns at most ~2 GiB on Linux, and smaller reads keep each call short. */
const F32_CHUNK_BYTES = 64 * 1024 * 1024;

/** The longest Float32Array the engine makes (Node 20: 2^32 elements). */
const MAX_FLOAT32_ELEMENTS = 2 ** 32;

/** A name (a tensor's, a shard's) as an error message shows it: one line, control characters escaped, a bounded length. */
function shown(name: string): string {
  const cut = name.length > 200 ? `${name.slice(0, 200)}…` : name;
  return JSON.stringify(cut).slice(1, -1);
}

/** Some other error's text on one line (JSON.parse quotes the input it stopped at, newlines and all). */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether something (anything: a FIFO too, which reading then refuses by name) is at `path`. */
function present(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

/** Fills `target` from `fd` at `position`, or an InputError when the file ends first (it shrank since it was checked). */
function readFully(fd: number, target: Uint8Array, position: number, fail: (got: number) => InputError): void {
  for (let at = 0; at < target.length; ) {
    const n = readSync(fd, target, at, target.length - at, position + at);
    if (n === 0) throw fail(at);
    at += n;
  }
}

/** Whether `dir` holds safetensors weights (model.safetensors or model.safetensors.index.json). */
export function hasSafetensors(dir: string): boolean {
  return present(join(dir, SINGLE_FILE)) || present(join(dir, INDEX_FILE));
}

/** Reads the headers of dir's model.safetensors, or of every shard model.safetensors.index.json names (never the data). */
export function readSafetensors(dir: string): SafetensorsCheckpoint {
  const root = resolve(dir);
  const single = join(root, SINGLE_FILE);
  const index = join(root, INDEX_FILE);
  const hasSingle = present(single);
  const hasIndex = present(index);
  // transformers reads model.safetensors when both are there, vLLM the index's shards: which weights are meant is a guess.
  if (hasSingle && hasIndex)
    throw new InputError(
      { file: index },
      `stands beside ${SINGLE_FILE}: a checkpoint holds one or the other (transformers would read ${SINGLE_FILE}, vLLM the shards), remove the one that is stale`,
    );
  if (hasIndex) return shardedCheckpoint(index, root);
  if (!hasSingle) throw new InputError({ file: single }, `missing: the directory holds neither ${SINGLE_FILE} nor ${INDEX_FILE}`);
  const tensors = new Map<string, TensorEntry>();
  for (const entry of readShardHeader(single)) tensors.set(entry.name, entry);
  return checkpointOf([single], tensors, single);
}

function checkpointOf(files: string[], tensors: Map<string, TensorEntry>, source: string): SafetensorsCheckpoint {
  return {
    files,
    tensors,
    has: (name) => tensors.has(name),
    tensor(name, role) {
      const entry = tensors.get(name);
      if (!entry) throw new InputError({ file: source, field: shown(name) }, `missing: the checkpoint has no such tensor (the ${role})`);
      return entry;
    },
  };
}

/** The index's tensor → shard map, each shard name a plain file name in the directory, or an InputError naming the index and the tensor. */
function weightMapOf(index: string): Map<string, string> {
  const raw = readJsonFile(index, { maxBytes: INDEX_JSON_BYTES, what: CHECKPOINT_DIR });
  if (!isPlainObject(raw)) throw new InputError({ file: index }, 'not a JSON object');
  const map = raw.weight_map;
  if (!isPlainObject(map)) throw new InputError({ file: index, field: 'weight_map' }, 'must be an object of tensor name → shard file name');
  const weightMap = new Map<string, string>();
  for (const [name, shard] of Object.entries(map)) {
    const where = { file: index, field: shown(name) };
    if (typeof shard !== 'string') throw new InputError(where, 'the shard must be a file name (a string)');
    // A plain name: the index may only point at the directory's own files, never out of it.
    if (shard === '' || shard === '.' || shard === '..' || /[/\\\u0000-\u001f\u007f]/.test(shard))
      throw new InputError(where, `shard "${shown(shard)}" is not a plain file name in the checkpoint directory`);
    weightMap.set(name, shard);
  }
  if (weightMap.size === 0) throw new InputError({ file: index, field: 'weight_map' }, 'names no tensors');
  return weightMap;
}

function shardedCheckpoint(index: string, root: string): SafetensorsCheckpoint {
  const weightMap = weightMapOf(index);
  const byShard = new Map<string, string[]>();
  for (const [name, shard] of weightMap) {
    const names = byShard.get(shard);
    if (names) names.push(name);
    else byShard.set(shard, [name]);
  }
  const tensors = new Map<string, TensorEntry>();
  const files: string[] = [];
  for (const shard of [...byShard.keys()].sort()) {
    const file = join(root, shard);
    const assigned = byShard.get(shard)!;
    if (regularFile(file, { maxBytes: Number.POSITIVE_INFINITY, what: CHECKPOINT_DIR }) === undefined)
      throw new InputError({ file: index, field: shown(assigned[0]!) }, `its shard ${shard} is missing (${file})`);
    files.push(file);
    for (const entry of readShardHeader(file)) {
      const meant = weightMap.get(entry.name);
      if (meant === undefined)
        throw new InputError({ file, field: shown(entry.name) }, `the shard holds a tensor ${INDEX_FILE} does not name`);
      if (meant !== shard)
        throw new InputError({ file, field: shown(entry.name) }, `${INDEX_FILE} assigns this tensor to ${shown(meant)}, not this shard`);
      tensors.set(entry.name, entry);
    }
    for (const name of assigned)
      if (!tensors.has(name))
        throw new InputError({ file: index, field: shown(name) }, `assigned to shard ${shard}, which does not hold it`);
  }
  return checkpointOf(files, tensors, index);
}

/** Every tensor of one safetensors file, its header read and checked; the data is not read. */
function readShardHeader(file: string): TensorEntry[] {
  const { fd, size } = openRegularFile(file, { what: CHECKPOINT_DIR });
  try {
    if (size < 8)
      throw new InputError({ file }, `is ${size} bytes: too short for a safetensors file (8 bytes of header length come first)`);
    const lengthBytes = Buffer.alloc(8);
    readFully(fd, lengthBytes, 0, () => new InputError({ file }, 'shrank while being read'));
    const declared = lengthBytes.readBigUInt64LE(0);
    if (declared > BigInt(MAX_HEADER_BYTES))
      throw new InputError(
        { file },
        `declares a header of ${declared} bytes, over the ${MAX_HEADER_BYTES}-byte cap (real headers are under 1 MB): not a safetensors file, or a damaged one`,
      );
    const headerBytes = Number(declared);
    if (8 + headerBytes > size)
      throw new InputError(
        { file },
        `declares a header of ${headerBytes} bytes, but the file is ${size} bytes: truncated, or not a safetensors file`,
      );
    const header = Buffer.alloc(headerBytes);
    readFully(fd, header, 8, () => new InputError({ file }, 'shrank while being read'));
    return entriesOf(parseHeader(file, header), file, 8 + headerBytes, size);
  } finally {
    closeSync(fd);
  }
}

function parseHeader(file: string, bytes: Buffer): Record<string, unknown> {
  let text: string;
  try {
    // fatal: a byte that is not UTF-8 is refused, not read as U+FFFD into a tensor's name.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (error) {
    throw new InputError({ file }, 'header is not valid UTF-8', { cause: error });
  }
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (error) {
    throw new InputError({ file }, `header is not valid JSON: ${oneLine(describeCause(error))}`, { cause: error });
  }
  if (!isPlainObject(header)) throw new InputError({ file }, 'header is not a JSON object (of tensor name → {dtype, shape, data_offsets})');
  return header;
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The entries of a parsed header, each checked, their byte ranges inside the file and apart from each other. */
function entriesOf(header: Record<string, unknown>, file: string, dataStart: number, fileBytes: number): TensorEntry[] {
  const entries: TensorEntry[] = [];
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') {
      checkMetadata(value, file);
      continue;
    }
    entries.push(entryOf(name, value, file, dataStart, fileBytes));
  }
  // Sorted by where they start, the ranges before the first overlap are disjoint: each need only be checked against the one before it.
  // An empty tensor holds no bytes, so shares none, wherever its offsets point.
  const byOffset = entries.filter((e) => e.length > 0).sort((a, b) => a.offset - b.offset);
  let previous: TensorEntry | undefined;
  for (const entry of byOffset) {
    if (previous && entry.offset < previous.offset + previous.length)
      throw new InputError(
        { file, field: shown(entry.name) },
        `its bytes [${entry.offset - dataStart}, ${entry.offset - dataStart + entry.length}) overlap tensor "${shown(previous.name)}"'s [${previous.offset - dataStart}, ${previous.offset - dataStart + previous.length})`,
      );
    previous = entry;
  }
  return entries;
}

function checkMetadata(value: unknown, file: string): void {
  if (!isPlainObject(value) || Object.values(value).some((v) => typeof v !== 'string'))
    throw new InputError({ file, field: '__metadata__' }, 'must be an object of string → string');
}

/**
 * product(shape). Past 2^53 it is no longer exact (and may reach Infinity), so the caller
 * refuses any result that is not a safe integer; a zero dimension is looked for first,
 * since Infinity × 0 would be NaN, not the empty tensor it is.
 */
function elementCount(shape: number[]): number {
  return shape.includes(0) ? 0 : shape.reduce((count, dim) => count * dim, 1);
}

function entryOf(name: string, value: unknown, file: string, dataStart: number, fileBytes: number): TensorEntry {
  const where = { file, field: shown(name) };
  if (!isPlainObject(value)) throw new InputError(where, 'must be an object {dtype, shape, data_offsets}');
  const { dtype, shape, data_offsets: offsets } = value;
  if (typeof dtype !== 'string' || dtype === '') throw new InputError(where, 'dtype must be a non-empty string');
  if (!Array.isArray(shape) || !shape.every(isCount)) throw new InputError(where, 'shape must be a list of non-negative integers');
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount))
    throw new InputError(where, 'data_offsets must be [begin, end], two non-negative integers');
  const [begin, end] = offsets as [number, number];
  if (begin > end) throw new InputError(where, `data_offsets [${begin}, ${end}] end before they begin`);
  const dims = shape as number[];
  const width = DTYPE_BYTES.get(dtype);
  if (width !== undefined) {
    const bytes = elementCount(dims) * width;
    if (!Number.isSafeInteger(bytes)) throw new InputError(where, `shape [${dims.join(', ')}] holds more elements than any file can`);
    if (end - begin !== bytes)
      throw new InputError(
        where,
        `data_offsets [${begin}, ${end}] hold ${end - begin} bytes, but shape [${dims.join(', ')}] of ${dtype} needs ${bytes}`,
      );
  }
  if (dataStart + end > fileBytes)
    throw new InputError(
      where,
      `file is ${fileBytes} bytes, tensor "${shown(name)}" needs up to ${dataStart + end}: the file is truncated, or its header is wrong`,
    );
  return { name, file, dtype, shape: dims, offset: dataStart + begin, length: end - begin };
}

/**
 * The tensor's values as float32 (F32 read as is; F16 and BF16 widened exactly), read
 * from disk with positioned reads of exactly its bytes. `into` (optional) receives them
 * (length must equal the element count) so a caller can fill one big buffer without an
 * extra copy. Anything else (I64, F64, ...) is an InputError naming file and tensor.
 */
export function readFloat32(entry: TensorEntry, into?: Float32Array): Float32Array {
  const where = { file: entry.file, field: shown(entry.name) };
  if (!FLOAT_DTYPES.includes(entry.dtype))
    throw new InputError(where, `dtype ${shown(entry.dtype)} is not read as weights: only ${FLOAT_DTYPES.join(', ')} are`);
  if (endianness() !== 'LE') throw new Error('safetensors weights are read on a little-endian host only');
  const width = entry.dtype === 'F32' ? 4 : 2;
  const count = entry.length / width;
  if (into && into.length !== count)
    throw new RangeError(`readFloat32: tensor ${entry.name} has ${count} elements, the array given for it ${into.length}`);
  if (!into && count > MAX_FLOAT32_ELEMENTS)
    throw new InputError(where, `has ${count} elements, more than one Float32Array holds (${MAX_FLOAT32_ELEMENTS})`);
  const out = into ?? new Float32Array(count);
  const { fd, size } = openRegularFile(entry.file, { what: CHECKPOINT_DIR });
  try {
    const shrank = () =>
      new InputError(
        where,
        `file is ${size} bytes, tensor needs up to ${entry.offset + entry.length}: it shrank since its header was read`,
      );
    // Before anything is read: `into` is left as it was, not half filled.
    if (entry.offset + entry.length > size) throw shrank();
    if (entry.dtype === 'F32') {
      const bytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
      for (let at = 0; at < bytes.length; at += F32_CHUNK_BYTES)
        readFully(fd, bytes.subarray(at, Math.min(at + F32_CHUNK_BYTES, bytes.length)), entry.offset + at, shrank);
    } else {
      const halves = new Uint16Array(Math.min(count, HALF_CHUNK_ELEMENTS));
      const words = new Uint32Array(out.buffer, out.byteOffset, out.length);
      for (let done = 0; done < count; ) {
        const n = Math.min(halves.length, count - done);
        const chunk = halves.subarray(0, n);
        readFully(fd, new Uint8Array(chunk.buffer, 0, n * 2), entry.offset + done * 2, shrank);
        if (entry.dtype === 'F16') out.set(halvesToFloats(chunk), done);
        // bfloat16 is float32's upper half: the same sign, exponent and top 7 mantissa bits.
        else for (let i = 0; i < n; i++) words[done + i] = chunk[i]! << 16;
        done += n;
      }
    }
  } finally {
    closeSync(fd);
  }
  return out;
}
