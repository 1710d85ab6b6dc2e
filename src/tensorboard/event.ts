/**
 * The two protobuf messages of a scalars-only events file, encoded by hand (tensorboard's
 * own `event.proto` and `summary.proto`): `Event` {wall_time double = 1, step int64 = 2,
 * file_version string = 3, summary Summary = 5}, `Summary` {repeated Value value = 1},
 * `Value` {tag string = 1, simple_value float = 2}. Fields are written in field order and
 * zeros of plain fields left out, as protobuf's own serializer does, so the bytes are the
 * canonical ones (test/tensorboard.test.ts compares them with Python's).
 */

export interface Scalar {
  tag: string;
  /** Stored as a 32-bit float: what TensorBoard keeps of a simple_value. */
  value: number;
}

export type TensorboardEvent =
  | { wallTime: number; step: number; fileVersion: string }
  | { wallTime: number; step: number; scalars: readonly Scalar[] };

/** The first record of every events file: which format the rest is in. */
export const FILE_VERSION = 'brain.Event:2';

const WIRE = { varint: 0, fixed64: 1, bytes: 2, fixed32: 5 } as const;

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

const key = (field: number, wire: number) => varint((field << 3) | wire);

function lengthDelimited(field: number, bytes: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([...key(field, WIRE.bytes), ...varint(bytes.length)]), bytes]);
}

function value(s: Scalar): Buffer {
  const float = Buffer.alloc(4);
  float.writeFloatLE(s.value);
  // simple_value is in a oneof: it is written even when 0.
  return Buffer.concat([lengthDelimited(1, Buffer.from(s.tag, 'utf8')), Buffer.from(key(2, WIRE.fixed32)), float]);
}

export function encodeEvent(e: TensorboardEvent): Buffer {
  if (!Number.isSafeInteger(e.step) || e.step < 0) throw new RangeError(`an event's step must be a whole number >= 0, got ${e.step}`);
  const parts: Buffer[] = [];
  if (e.wallTime !== 0) {
    const double = Buffer.alloc(8);
    double.writeDoubleLE(e.wallTime);
    parts.push(Buffer.from(key(1, WIRE.fixed64)), double);
  }
  if (e.step !== 0) parts.push(Buffer.from([...key(2, WIRE.varint), ...varint(e.step)]));
  if ('fileVersion' in e) parts.push(lengthDelimited(3, Buffer.from(e.fileVersion, 'utf8')));
  else parts.push(lengthDelimited(5, Buffer.concat(e.scalars.map((s) => lengthDelimited(1, value(s))))));
  return Buffer.concat(parts);
}
