/**
 * probe's own safetensors reader (src/backends/hf/safetensors.ts): the values it reads
 * are exact for F32, F16 and BF16, a sharded checkpoint reads as one, and every bad file —
 * a header that lies about its length, a header that is not a JSON object of proper
 * entries, a tensor past the end of a truncated file, byte ranges that disagree with their
 * shape or with each other, an index pointing out of the directory or disagreeing with its
 * shards, a FIFO in a file's place — is one InputError naming the file and the tensor,
 * found when the headers are read. Each file is written here, byte by byte.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, symlinkSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasSafetensors, INDEX_FILE, readFloat32, readSafetensors, SINGLE_FILE } from '../src/backends/hf/safetensors.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { tempDir } from './helpers/paths.ts';

const REAL = join(REPO_ROOT, '..', 'shared', 'models', 'hf', 'llama-bpe8k-s1500');

// ---------------------------------------------------------------- writing files

interface TensorSpec {
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

/** A header entry as written: any JSON at all, for the bad cases. */
type RawHeader = Record<string, unknown>;

const f32Bytes = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
const u16Bytes = (bits: number[]) => new Uint8Array(new Uint16Array(bits).buffer);

/** The header of `tensors` laid out one after another, in order, with `metadata`. */
function headerOf(tensors: Record<string, TensorSpec>, metadata?: unknown): { header: RawHeader; data: Buffer } {
  const header: RawHeader = metadata === undefined ? {} : { __metadata__: metadata };
  const chunks: Uint8Array[] = [];
  let at = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + t.data.length] };
    chunks.push(t.data);
    at += t.data.length;
  }
  return { header, data: Buffer.concat(chunks) };
}

/** A safetensors file: the 8-byte length (`declared`, else the header's), the header bytes, the data. */
function fileBytes(header: RawHeader | string | Buffer, data: Uint8Array, declared?: bigint): Buffer {
  const text = Buffer.isBuffer(header) ? header : Buffer.from(typeof header === 'string' ? header : JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(declared ?? BigInt(text.length));
  return Buffer.concat([length, text, data]);
}

function writeSafetensors(path: string, tensors: Record<string, TensorSpec>, metadata: unknown = { format: 'pt' }): void {
  const { header, data } = headerOf(tensors, metadata);
  writeFileSync(path, fileBytes(header, data));
}

/** A checkpoint directory whose model.safetensors has `header` (any JSON) over `data`. */
function dirWithHeader(header: RawHeader | string | Buffer, data: Uint8Array = new Uint8Array(64), declared?: bigint): string {
  const dir = tempDir();
  writeFileSync(join(dir, SINGLE_FILE), fileBytes(header, data, declared));
  return dir;
}

const f32 = (shape: number[], values: number[]): TensorSpec => ({ dtype: 'F32', shape, data: f32Bytes(values) });

/** An index naming `weightMap`. */
function writeIndex(dir: string, weightMap: unknown): void {
  writeFileSync(join(dir, INDEX_FILE), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
}

/** Two shards and their index: a, b in shard 1; c in shard 2. */
function shardedDir(dir = tempDir()): string {
  mkdirSync(dir, { recursive: true });
  writeSafetensors(join(dir, 'model-00001-of-00002.safetensors'), { a: f32([2], [1, 2]), b: f32([1], [3]) });
  writeSafetensors(join(dir, 'model-00002-of-00002.safetensors'), { c: f32([3], [4, 5, 6]) });
  writeIndex(dir, { a: 'model-00001-of-00002.safetensors', b: 'model-00001-of-00002.safetensors', c: 'model-00002-of-00002.safetensors' });
  return dir;
}

const mkfifo = (path: string) => execFileSync('mkfifo', [path]);

// ---------------------------------------------------------------- checking errors

/**
 * `run` throws one InputError, on one line, naming `file` (and `tensor` as its field) and
 * saying `problem`: the problem pins which check fired, so a test fails when its own check
 * is removed even if a later one would also refuse the file.
 */
function expectInputError(run: () => unknown, file: string, tensor: string | undefined, problem: RegExp): InputError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught, 'expected an InputError').toBeInstanceOf(InputError);
  const error = caught as InputError;
  expect(error.message).not.toContain('\n');
  expect(error.location.file).toBe(file);
  expect(error.message.startsWith(file)).toBe(true);
  if (tensor !== undefined) expect(error.message).toContain(`field "${tensor}"`);
  expect(error.message).toMatch(problem);
  return error;
}

/** Object.is element by element: tells -0 from 0, and NaN equals NaN. */
function expectSameFloats(actual: Float32Array, expected: number[]): void {
  expect(Array.from(actual)).toEqual(expected);
  expect(Array.from(actual).map((v, i) => Object.is(v, expected[i]))).toEqual(expected.map(() => true));
}

/** IEEE half → number, written out from the definition (not probe's table). */
function halfValue(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

/** bfloat16 → number, from the definition (8-bit exponent, 7-bit fraction). */
function bf16Value(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 7) & 0xff;
  const frac = bits & 0x7f;
  if (exp === 0) return sign * frac * 2 ** -133;
  if (exp === 255) return frac === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * 2 ** (exp - 127) * (1 + frac / 128);
}

// ---------------------------------------------------------------- good files

describe('a good model.safetensors', () => {
  const F32_VALUES = [1.5, -2.25, 0, -0, 3.4028234663852886e38, 2 ** -149, 2 ** -126, Infinity, -Infinity, NaN];
  // 1, -2, the smallest and largest subnormals (±), the largest normal, ±inf, NaN, -0, 1/3 rounded.
  const HALF_BITS = [0x3c00, 0xc000, 0x0001, 0x03ff, 0x8001, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x8000, 0x3555];
  const HALF_VALUES = [1, -2, 2 ** -24, 1023 * 2 ** -24, -(2 ** -24), 65504, Infinity, -Infinity, NaN, -0, 0.333251953125];
  // 1, -3, the smallest subnormal, the largest finite, ±inf, NaN, -0, pi rounded.
  const BF16_BITS = [0x3f80, 0xc040, 0x0001, 0x7f7f, 0x7f80, 0xff80, 0x7fc0, 0x8000, 0x4049];
  const BF16_VALUES = [1, -3, 2 ** -133, (1 + 127 / 128) * 2 ** 127, Infinity, -Infinity, NaN, -0, 3.140625];

  function goodDir(): string {
    const dir = tempDir();
    writeSafetensors(join(dir, SINGLE_FILE), {
      'w.f32': f32([2, 5], F32_VALUES),
      'w.f16': { dtype: 'F16', shape: [HALF_BITS.length], data: u16Bytes(HALF_BITS) },
      'w.bf16': { dtype: 'BF16', shape: [1, BF16_BITS.length], data: u16Bytes(BF16_BITS) },
      'w.i64': { dtype: 'I64', shape: [2], data: new Uint8Array(16) },
      'w.fp8': { dtype: 'F8_E4M3', shape: [3], data: new Uint8Array(3) },
      'w.future': { dtype: 'F4', shape: [4], data: new Uint8Array(2) },
      'w.empty': { dtype: 'F32', shape: [0, 7], data: new Uint8Array(0) },
    });
    return dir;
  }

  it('lists every tensor with its dtype, shape, absolute offset and length', () => {
    const dir = goodDir();
    const file = join(dir, SINGLE_FILE);
    const ckpt = readSafetensors(dir);
    expect(ckpt.files).toEqual([file]);
    expect([...ckpt.tensors.keys()]).toEqual(['w.f32', 'w.f16', 'w.bf16', 'w.i64', 'w.fp8', 'w.future', 'w.empty']);
    const headerLength = Number(readFileSync(file).readBigUInt64LE(0));
    expect(ckpt.tensor('w.f32', 'test')).toEqual({
      name: 'w.f32',
      file,
      dtype: 'F32',
      shape: [2, 5],
      offset: 8 + headerLength,
      length: 40,
    });
    expect(ckpt.tensor('w.f16', 'test')).toMatchObject({ dtype: 'F16', shape: [11], offset: 8 + headerLength + 40, length: 22 });
    expect(ckpt.tensor('w.future', 'test')).toMatchObject({ dtype: 'F4', shape: [4], length: 2 });
    expect(ckpt.has('w.bf16')).toBe(true);
    expect(ckpt.has('w.missing')).toBe(false);
  });

  it('F32 reads as is: negatives, -0, the largest and subnormal floats, ±inf and NaN', () => {
    const ckpt = readSafetensors(goodDir());
    expectSameFloats(readFloat32(ckpt.tensor('w.f32', 'test')), F32_VALUES);
  });

  it('F16 widens exactly: subnormals, -0, ±inf and NaN kept', () => {
    expect(HALF_BITS.map(halfValue)).toEqual(HALF_VALUES);
    const ckpt = readSafetensors(goodDir());
    expectSameFloats(readFloat32(ckpt.tensor('w.f16', 'test')), HALF_VALUES);
  });

  it('BF16 widens exactly: subnormals, -0, the largest finite, ±inf and NaN kept', () => {
    expect(BF16_BITS.map(bf16Value)).toEqual(BF16_VALUES);
    const ckpt = readSafetensors(goodDir());
    expectSameFloats(readFloat32(ckpt.tensor('w.bf16', 'test')), BF16_VALUES);
  });

  it('an empty tensor reads as an empty array', () => {
    expect(readFloat32(readSafetensors(goodDir()).tensor('w.empty', 'test')).length).toBe(0);
  });

  it('`into` receives the values in place (a slice of a bigger buffer), nothing around it touched', () => {
    const ckpt = readSafetensors(goodDir());
    const big = new Float32Array(2 + F32_VALUES.length + HALF_VALUES.length + 2).fill(7);
    const a = big.subarray(2, 2 + F32_VALUES.length);
    const b = big.subarray(2 + F32_VALUES.length, 2 + F32_VALUES.length + HALF_VALUES.length);
    expect(readFloat32(ckpt.tensor('w.f32', 'test'), a)).toBe(a);
    expect(readFloat32(ckpt.tensor('w.f16', 'test'), b)).toBe(b);
    expectSameFloats(big, [7, 7, ...F32_VALUES, ...HALF_VALUES, 7, 7]);
    expect(() => readFloat32(ckpt.tensor('w.f32', 'test'), new Float32Array(3))).toThrow(RangeError);
  });

  it('a half tensor longer than one read is converted across the reads', () => {
    const dir = tempDir();
    const n = (1 << 20) + 1001;
    // Not periodic in 2^16 (a pattern that is would hide a chunk read from the wrong place).
    const bits = Array.from({ length: n }, (_, i) => Math.imul(i, 2654435761) >>> 16);
    writeSafetensors(join(dir, SINGLE_FILE), {
      h: { dtype: 'F16', shape: [n], data: u16Bytes(bits) },
      b: { dtype: 'BF16', shape: [n], data: u16Bytes(bits) },
    });
    const ckpt = readSafetensors(dir);
    const same = (actual: Float32Array, decode: (bits: number) => number) =>
      bits.every((b, i) => Object.is(actual[i], Math.fround(decode(b))) || (Number.isNaN(actual[i]) && Number.isNaN(decode(b))));
    expect(same(readFloat32(ckpt.tensor('h', 'test')), halfValue)).toBe(true);
    expect(same(readFloat32(ckpt.tensor('b', 'test')), bf16Value)).toBe(true);
  });

  it('an F32 tensor longer than one read (64 MiB) is read across the reads, each from its own place', () => {
    const dir = tempDir();
    const n = 16 * 1024 * 1024 + 5;
    const path = join(dir, SINGLE_FILE);
    // A sparse file: zeros but for a few marked elements, around the 64 MiB boundary of the reads.
    writeFileSync(path, fileBytes({ w: { dtype: 'F32', shape: [n], data_offsets: [0, n * 4] } }, new Uint8Array(0)));
    const dataStart = readFileSync(path).length;
    truncateSync(path, dataStart + n * 4);
    const marks = new Map([
      [0, 1.25],
      [16 * 1024 * 1024 - 1, -2.5],
      [16 * 1024 * 1024, 3.75],
      [n - 1, -4.5],
    ]);
    const fd = openSync(path, 'r+');
    for (const [i, v] of marks) writeSync(fd, f32Bytes([v]), 0, 4, dataStart + i * 4);
    closeSync(fd);
    const values = readFloat32(readSafetensors(dir).tensor('w', 'test'));
    for (const [i, v] of marks) expect(values[i], `element ${i}`).toBe(v);
    expect(values.reduce((sum, v) => sum + Math.abs(v), 0)).toBe(1.25 + 2.5 + 3.75 + 4.5);
  });

  it('other dtypes are listed but refused as floats, naming the file and the tensor', () => {
    const dir = goodDir();
    const ckpt = readSafetensors(dir);
    for (const name of ['w.i64', 'w.fp8', 'w.future'])
      expectInputError(() => readFloat32(ckpt.tensor(name, 'test')), join(dir, SINGLE_FILE), name, /only F32, F16, BF16/);
  });

  it('a missing tensor names the file it should be in, the tensor and its role', () => {
    const dir = goodDir();
    const error = expectInputError(
      () => readSafetensors(dir).tensor('model.layers.3.self_attn.q_proj.weight', 'layer 3 q projection'),
      join(dir, SINGLE_FILE),
      'model.layers.3.self_attn.q_proj.weight',
      /missing/,
    );
    expect(error.message).toContain('layer 3 q projection');
  });

  it('a file the Hugging Face cache keeps as a link into blobs/ is followed', () => {
    const cache = tempDir();
    mkdirSync(join(cache, 'blobs'));
    mkdirSync(join(cache, 'snapshot'));
    writeSafetensors(join(cache, 'blobs', 'f00d'), { w: f32([2], [0.5, -1]) });
    symlinkSync(join('..', 'blobs', 'f00d'), join(cache, 'snapshot', SINGLE_FILE));
    const ckpt = readSafetensors(join(cache, 'snapshot'));
    expect(ckpt.files).toEqual([join(cache, 'snapshot', SINGLE_FILE)]);
    expectSameFloats(readFloat32(ckpt.tensor('w', 'test')), [0.5, -1]);
  });

  it('hasSafetensors: model.safetensors or the index, else false', () => {
    expect(hasSafetensors(goodDir())).toBe(true);
    expect(hasSafetensors(shardedDir())).toBe(true);
    expect(hasSafetensors(tempDir())).toBe(false);
  });
});

describe('a good sharded checkpoint', () => {
  it('reads every shard the index names, each tensor from its own shard', () => {
    const dir = shardedDir();
    const ckpt = readSafetensors(dir);
    const [one, two] = [join(dir, 'model-00001-of-00002.safetensors'), join(dir, 'model-00002-of-00002.safetensors')];
    expect(ckpt.files).toEqual([one, two]);
    expect([...ckpt.tensors.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(ckpt.tensor('a', 'test').file).toBe(one);
    expect(ckpt.tensor('c', 'test').file).toBe(two);
    expectSameFloats(readFloat32(ckpt.tensor('a', 'test')), [1, 2]);
    expectSameFloats(readFloat32(ckpt.tensor('b', 'test')), [3]);
    expectSameFloats(readFloat32(ckpt.tensor('c', 'test')), [4, 5, 6]);
  });

  it('a missing tensor names the index', () => {
    const dir = shardedDir();
    expectInputError(
      () => readSafetensors(dir).tensor('lm_head.weight', 'output projection'),
      join(dir, INDEX_FILE),
      'lm_head.weight',
      /output projection/,
    );
  });
});

// ---------------------------------------------------------------- bad single files

describe('a bad model.safetensors is one InputError naming the file (and tensor)', () => {
  const file = (dir: string) => join(dir, SINGLE_FILE);

  it('shorter than the 8-byte header length', () => {
    const dir = tempDir();
    writeFileSync(file(dir), Buffer.from([1, 2, 3]));
    expectInputError(() => readSafetensors(dir), file(dir), undefined, /too short/);
  });

  it('a header length past the end of the file', () => {
    const dir = dirWithHeader('{}', new Uint8Array(0), 1000n);
    expectInputError(() => readSafetensors(dir), file(dir), undefined, /declares a header of 1000 bytes, but the file is 10 bytes/);
  });

  it('a header length over the 100 MB cap, even in a file that long (sparse: it costs nothing), and 2^64-1', () => {
    const dir = dirWithHeader('{}', new Uint8Array(0), 100_000_001n);
    truncateSync(file(dir), 120_000_000);
    expectInputError(() => readSafetensors(dir), file(dir), undefined, /over the 100000000-byte cap/);
    const huge = dirWithHeader('{}', new Uint8Array(0), 2n ** 64n - 1n);
    expectInputError(() => readSafetensors(huge), file(huge), undefined, /18446744073709551615 bytes, over the 100000000-byte cap/);
  });

  it('a header that is not UTF-8', () => {
    // Decoded leniently, 0xff would become U+FFFD and the header a good one.
    const header = Buffer.concat([
      Buffer.from('{"w'),
      Buffer.from([0xff]),
      Buffer.from('":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}'),
    ]);
    const dir = dirWithHeader(header);
    expectInputError(() => readSafetensors(dir), file(dir), undefined, /not valid UTF-8/);
  });

  it('a header that is not JSON, or not a JSON object', () => {
    for (const [text, problem] of [
      // JSON.parse quotes this input, newline and all, in its message: the error must still be one line.
      ['nope\n{}', /not valid JSON/],
      ['{"w": {"dtype":\n"F32"', /not valid JSON/],
      ['', /not valid JSON/],
      ['[1, 2]', /not a JSON object/],
      ['null', /not a JSON object/],
      ['"F32"', /not a JSON object/],
    ] as const) {
      const dir = dirWithHeader(text);
      expectInputError(() => readSafetensors(dir), file(dir), undefined, problem);
    }
  });

  it('__metadata__ that is not an object of strings', () => {
    for (const metadata of [['pt'], { format: 1 }, 'pt', null]) {
      const dir = dirWithHeader({ __metadata__: metadata });
      expectInputError(() => readSafetensors(dir), file(dir), '__metadata__', /string → string/);
    }
  });

  it('an entry that is not {dtype, shape, data_offsets} of the right kinds', () => {
    const good = { dtype: 'F32', shape: [2], data_offsets: [0, 8] };
    const cases: Array<[unknown, RegExp]> = [
      [5, /must be an object/],
      [[good], /must be an object/],
      [null, /must be an object/],
      [{ ...good, dtype: undefined }, /dtype must be/],
      [{ ...good, dtype: 4 }, /dtype must be/],
      [{ ...good, dtype: '' }, /dtype must be/],
      [{ ...good, shape: undefined }, /shape must be/],
      [{ ...good, shape: 2 }, /shape must be/],
      [{ ...good, shape: [-2] }, /shape must be/],
      [{ ...good, shape: [1.5] }, /shape must be/],
      [{ ...good, shape: ['2'] }, /shape must be/],
      [{ ...good, shape: [2 ** 60] }, /shape must be/],
      [{ ...good, data_offsets: undefined }, /data_offsets must be/],
      [{ ...good, data_offsets: [0] }, /data_offsets must be/],
      [{ ...good, data_offsets: [0, 8, 16] }, /data_offsets must be/],
      [{ ...good, data_offsets: [-8, 0] }, /data_offsets must be/],
      [{ ...good, data_offsets: [0, '8'] }, /data_offsets must be/],
      [{ ...good, data_offsets: [0, 2 ** 60] }, /data_offsets must be/],
      [{ ...good, data_offsets: [8, 0] }, /end before they begin/],
    ];
    for (const [entry, problem] of cases) {
      const dir = dirWithHeader({ 'model.norm.weight': entry });
      expectInputError(() => readSafetensors(dir), file(dir), 'model.norm.weight', problem);
    }
  });

  it('a shape whose element count is no safe integer', () => {
    const dir = dirWithHeader({ w: { dtype: 'F32', shape: [2 ** 30, 2 ** 30, 2 ** 30], data_offsets: [0, 8] } });
    expectInputError(() => readSafetensors(dir), file(dir), 'w', /more elements than any file can/);
  });

  it('a zero dimension makes an empty tensor, however large the others (their product alone would be Infinity)', () => {
    const dir = dirWithHeader({ w: { dtype: 'F32', shape: [...Array(25).fill(2 ** 50), 0], data_offsets: [0, 0] } });
    expect(readSafetensors(dir).tensor('w', 'test').length).toBe(0);
  });

  it('a byte range that disagrees with shape × dtype width (known dtypes)', () => {
    for (const [dtype, shape, bytes] of [
      ['F32', [2, 3], 20],
      ['F16', [5], 12],
      ['BF16', [5], 8],
      ['I64', [1], 4],
    ] as const) {
      const dir = dirWithHeader({ w: { dtype, shape, data_offsets: [0, bytes] } });
      expectInputError(() => readSafetensors(dir), file(dir), 'w', new RegExp(`hold ${bytes} bytes, but shape .* of ${dtype} needs`));
    }
  });

  it('a truncated file: a tensor past its end names the file size and how far the tensor reaches', () => {
    const dir = tempDir();
    const { header, data } = headerOf({ a: f32([4], [1, 2, 3, 4]), 'model.norm.weight': f32([4], [5, 6, 7, 8]) });
    const bytes = fileBytes(header, data);
    writeFileSync(file(dir), bytes.subarray(0, bytes.length - 4));
    expectInputError(
      () => readSafetensors(dir),
      file(dir),
      'model.norm.weight',
      new RegExp(`file is ${bytes.length - 4} bytes, tensor "model.norm.weight" needs up to ${bytes.length}`),
    );
  });

  it('an unknown dtype past the end of the file is refused too', () => {
    const dir = dirWithHeader({ w: { dtype: 'F4', shape: [4], data_offsets: [0, 1000] } }, new Uint8Array(8));
    expectInputError(() => readSafetensors(dir), file(dir), 'w', /needs up to/);
  });

  it('two tensors sharing bytes, named both', () => {
    const dir = dirWithHeader({
      first: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
      inner: { dtype: 'F32', shape: [1], data_offsets: [4, 8] },
      second: { dtype: 'F32', shape: [2], data_offsets: [12, 20] },
    });
    const error = expectInputError(() => readSafetensors(dir), file(dir), 'inner', /overlap tensor "first"/);
    expect(error.message).toContain('[4, 8)');
    // An empty tensor inside another's range shares no bytes; the next one that does is found.
    const later = dirWithHeader({
      first: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
      inner: { dtype: 'F32', shape: [0], data_offsets: [4, 4] },
      second: { dtype: 'F32', shape: [2], data_offsets: [12, 20] },
    });
    expectInputError(() => readSafetensors(later), file(later), 'second', /overlap tensor "first"/);
  });

  it('a tensor name with a newline is shown escaped: the error stays one line', () => {
    const dir = dirWithHeader({ 'evil\nname': { dtype: 'F32', shape: [1], data_offsets: [0, 8] } });
    expectInputError(() => readSafetensors(dir), file(dir), 'evil\\nname', /hold 8 bytes/);
  });

  it('a FIFO in model.safetensors’ place is refused, not waited on (directly or through a link)', () => {
    const dir = tempDir();
    mkfifo(file(dir));
    expectInputError(() => readSafetensors(dir), file(dir), undefined, /FIFO/);
    const linked = tempDir();
    symlinkSync(file(dir), file(linked));
    expectInputError(() => readSafetensors(linked), file(linked), undefined, /FIFO/);
  });

  it('a file that shrinks after its header was read is refused when its tensor is read', () => {
    const dir = tempDir();
    writeSafetensors(file(dir), { a: f32([2], [1, 2]), b: f32([2], [3, 4]) });
    const ckpt = readSafetensors(dir);
    truncateSync(file(dir), ckpt.tensor('b', 'test').offset + 4);
    const into = new Float32Array(2).fill(7);
    expectInputError(() => readFloat32(ckpt.tensor('b', 'test'), into), file(dir), 'b', /shrank/);
    // Refused before anything is read: the caller's buffer is not half filled.
    expectSameFloats(into, [7, 7]);
  });

  it('neither model.safetensors nor an index', () => {
    const dir = tempDir();
    expectInputError(() => readSafetensors(dir), file(dir), undefined, /missing: the directory holds neither/);
  });

  it('both model.safetensors and an index: which weights are meant is a guess', () => {
    const dir = shardedDir();
    writeSafetensors(file(dir), { a: f32([2], [1, 2]) });
    expectInputError(() => readSafetensors(dir), join(dir, INDEX_FILE), undefined, /stands beside model.safetensors/);
  });
});

// ---------------------------------------------------------------- bad sharded checkpoints

describe('a bad sharded checkpoint is one InputError naming the file and tensor', () => {
  const index = (dir: string) => join(dir, INDEX_FILE);
  const SHARD1 = 'model-00001-of-00002.safetensors';
  const SHARD2 = 'model-00002-of-00002.safetensors';

  it('an index that is not JSON, or whose weight_map is not an object of strings', () => {
    const notJson = shardedDir();
    writeFileSync(index(notJson), '{"weight_map": ');
    expectInputError(() => readSafetensors(notJson), index(notJson), undefined, /not valid JSON/);
    for (const weightMap of [undefined, [SHARD1], 'x', null, {}]) {
      const dir = shardedDir();
      writeIndex(dir, weightMap);
      expectInputError(() => readSafetensors(dir), index(dir), 'weight_map', /must be an object|names no tensors/);
    }
    const dir = shardedDir();
    writeIndex(dir, { a: SHARD1, b: 7, c: SHARD2 });
    expectInputError(() => readSafetensors(dir), index(dir), 'b', /must be a file name/);
  });

  it('a shard name that leads out of the directory, even to a good file', () => {
    const root = tempDir();
    const dir = shardedDir(join(root, 'ckpt'));
    const outside = join(root, 'outside.safetensors');
    writeSafetensors(outside, { a: f32([2], [1, 2]) });
    mkdirSync(join(dir, 'sub'));
    writeSafetensors(join(dir, 'sub', SHARD1), { a: f32([2], [1, 2]) });
    const absolute = join(dir, SHARD1);
    for (const name of ['../outside.safetensors', absolute, `sub/${SHARD1}`, `sub\\${SHARD1}`, '..', '.', '', 'a\nb']) {
      writeIndex(dir, { a: name, b: SHARD1, c: SHARD2 });
      expectInputError(() => readSafetensors(dir), index(dir), 'a', /is not a plain file name in the checkpoint directory/);
    }
  });

  it('a shard that is missing', () => {
    const dir = shardedDir();
    writeIndex(dir, { a: SHARD1, b: SHARD1, c: SHARD2, d: 'model-00003-of-00003.safetensors' });
    expectInputError(() => readSafetensors(dir), index(dir), 'd', /shard model-00003-of-00003.safetensors is missing/);
  });

  it('a FIFO in a shard’s place is refused, not waited on', () => {
    const dir = tempDir();
    writeSafetensors(join(dir, SHARD1), { a: f32([2], [1, 2]) });
    mkfifo(join(dir, SHARD2));
    writeIndex(dir, { a: SHARD1, c: SHARD2 });
    expectInputError(() => readSafetensors(dir), join(dir, SHARD2), undefined, /FIFO/);
  });

  it('a tensor the index assigns to a shard that does not hold it', () => {
    const dir = shardedDir();
    writeIndex(dir, { a: SHARD1, b: SHARD1, c: SHARD1 });
    // Shard 2 is then named by no tensor; shard 1 lacks c.
    expectInputError(
      () => readSafetensors(dir),
      index(dir),
      'c',
      /assigned to shard model-00001-of-00002.safetensors, which does not hold it/,
    );
  });

  it('a tensor held by two shards (the index assigns it to one)', () => {
    const dir = shardedDir();
    writeSafetensors(join(dir, SHARD2), { c: f32([3], [4, 5, 6]), a: f32([2], [9, 9]) });
    expectInputError(
      () => readSafetensors(dir),
      join(dir, SHARD2),
      'a',
      /assigns this tensor to model-00001-of-00002.safetensors, not this shard/,
    );
  });

  it('a tensor a shard holds that the index does not name', () => {
    const dir = shardedDir();
    writeSafetensors(join(dir, SHARD2), { c: f32([3], [4, 5, 6]), extra: f32([1], [0]) });
    expectInputError(() => readSafetensors(dir), join(dir, SHARD2), 'extra', /does not name/);
  });

  it('a shard with a bad header is named itself', () => {
    const dir = shardedDir();
    const { header, data } = headerOf({ c: f32([3], [4, 5, 6]) });
    const bytes = fileBytes(header, data);
    writeFileSync(join(dir, SHARD2), bytes.subarray(0, bytes.length - 1));
    expectInputError(() => readSafetensors(dir), join(dir, SHARD2), 'c', /needs up to/);
  });
});

// ---------------------------------------------------------------- a real checkpoint

describe('a real checkpoint: llama-bpe8k-s1500', () => {
  it('every tensor listed, shapes as config.json says, values finite and where the file has them', (context) => {
    if (!existsSync(REAL)) {
      context.skip(`${REAL} is absent`);
      return;
    }
    const config = JSON.parse(readFileSync(join(REAL, 'config.json'), 'utf8'));
    const { vocab_size: vocab, hidden_size: hidden, intermediate_size: inter, num_hidden_layers: layers } = config;
    const headDim = config.head_dim;
    const q = config.num_attention_heads * headDim;
    const kv = config.num_key_value_heads * headDim;
    const ckpt = readSafetensors(REAL);
    expect(ckpt.files).toEqual([join(REAL, SINGLE_FILE)]);

    const expected = new Map<string, number[]>([
      ['model.embed_tokens.weight', [vocab, hidden]],
      ['model.norm.weight', [hidden]],
    ]);
    for (let l = 0; l < layers; l++) {
      const p = `model.layers.${l}`;
      expected.set(`${p}.input_layernorm.weight`, [hidden]);
      expected.set(`${p}.post_attention_layernorm.weight`, [hidden]);
      expected.set(`${p}.self_attn.q_proj.weight`, [q, hidden]);
      expected.set(`${p}.self_attn.k_proj.weight`, [kv, hidden]);
      expected.set(`${p}.self_attn.v_proj.weight`, [kv, hidden]);
      expected.set(`${p}.self_attn.o_proj.weight`, [hidden, q]);
      expected.set(`${p}.mlp.gate_proj.weight`, [inter, hidden]);
      expected.set(`${p}.mlp.up_proj.weight`, [inter, hidden]);
      expected.set(`${p}.mlp.down_proj.weight`, [hidden, inter]);
    }
    if (!config.tie_word_embeddings) expected.set('lm_head.weight', [vocab, hidden]);
    expect([...ckpt.tensors.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [name, shape] of expected) expect(ckpt.tensor(name, 'test').shape, name).toEqual(shape);
    expect(ckpt.tensor('model.embed_tokens.weight', 'test').shape).toEqual([8192, 128]);

    const embed = ckpt.tensor('model.embed_tokens.weight', 'token embedding');
    const values = readFloat32(embed);
    expect(values.length).toBe(8192 * 128);
    expect(values.every(Number.isFinite)).toBe(true);
    expect(values.some((v) => v !== 0)).toBe(true);
    // The same bytes the file holds at the offset the header gives, read here independently.
    const whole = readFileSync(join(REAL, SINGLE_FILE));
    const headerEnd = 8 + Number(whole.readBigUInt64LE(0));
    const start = headerEnd + JSON.parse(whole.toString('utf8', 8, headerEnd))['model.embed_tokens.weight'].data_offsets[0];
    expect(Buffer.from(values.buffer).equals(whole.subarray(start, start + values.byteLength))).toBe(true);
  });
});
