/**
 * `--tensorboard DIR`: the events files probe writes by hand (TFRecord framing, CRC-32C,
 * the Event and Summary protobufs) read back by TensorBoard's own Python reader, and a
 * watch on the agentic ladder — killed and resumed, a checkpoint landing before ones
 * already written — read back through the real TensorBoard's HTTP API: every point at its
 * step, the values results.json's trend holds, none twice.
 */
import { appendFileSync, readdirSync, readFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENTS_FILE, tensorboardRuns, writeTensorboard } from '../src/report/trend-tensorboard.ts';
import type { TrendPoint } from '../src/report/trend.ts';
import { crc32c } from '../src/tensorboard/crc32c.ts';
import { encodeEvent } from '../src/tensorboard/event.ts';
import { updateEventsFile } from '../src/tensorboard/events-file.ts';
import { maskedCrc } from '../src/tensorboard/record.ts';
import { tempDir } from './helpers/paths.ts';
import { decodeEvents, pythonSerialized, skipWithoutTensorboard } from './helpers/tensorboard.ts';

describe('the events file encoding', () => {
  it('CRC-32C has the standard check value, and the mask is TensorFlow’s', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
    expect(crc32c(Buffer.alloc(32))).toBe(0x8a9136aa); // RFC 3720's 32 zero bytes
    const crc = crc32c(Buffer.from('123456789'));
    expect(maskedCrc(Buffer.from('123456789'))).toBe((((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0);
  });

  it('refuses a step protobuf cannot hold as asked', () => {
    expect(() => encodeEvent({ wallTime: 1, step: -1, scalars: [] })).toThrow(/step/);
  });
});

const point = (series: string, step: number, values: TrendPoint['values'], label = `${series}-s${step}`): TrendPoint => ({
  checkpoint: `/ckpts/${label}`,
  label,
  series,
  step,
  values,
  disagreements: {},
});

describe.skipIf(skipWithoutTensorboard)('the events file, read back by TensorBoard’s own reader', () => {
  it('encodes Event and Summary byte for byte as protobuf does', () => {
    expect(encodeEvent({ wallTime: 1700000000.25, step: 0, fileVersion: 'brain.Event:2' })).toEqual(
      pythonSerialized('event_pb2.Event(wall_time=1700000000.25, file_version="brain.Event:2")'),
    );
    expect(
      encodeEvent({
        wallTime: 1.5,
        step: 2 ** 40,
        scalars: [
          { tag: 'probe/bpb', value: 0.1 },
          { tag: 'probe/mcq', value: 0 },
          { tag: 'é/x', value: -3.25 },
        ],
      }),
    ).toEqual(
      pythonSerialized(
        'event_pb2.Event(wall_time=1.5, step=2**40, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="probe/bpb", simple_value=0.1), summary_pb2.Summary.Value(tag="probe/mcq", simple_value=0.0), summary_pb2.Summary.Value(tag="é/x", simple_value=-3.25)]))',
      ),
    );
  });

  it('writes one run per series, points in step order, one per step, with the intervals there are', () => {
    const dir = tempDir();
    const trend = [
      point('run/a', 500, { bpb: { value: 0.5, low: 0.25, high: 0.75 }, mcq: { value: 1, low: null, high: null } }),
      point('run/a', 100, { bpb: { value: 2, low: 1.5, high: 2.5 } }),
      point('run/a', 100, { bpb: { value: 9, low: null, high: null } }, 'run/a-again'), // the same step: the first is shown
      point('b', 7, { code_bpb: { value: 1.25, low: null, high: null }, asap_valid_calls: { value: 0.5, low: null, high: null } }),
    ];
    writeTensorboard(dir, trend, (p) => 1000 + p.step);
    expect(readdirSync(dir).sort()).toEqual(['b', 'run%2Fa']);
    const a = decodeEvents(join(dir, 'run%2Fa', EVENTS_FILE));
    expect(a[0]).toEqual({ wall_time: 1100, step: 0, file_version: 'brain.Event:2', values: [] });
    expect(a.slice(1).map((e) => [e.wall_time, e.step, e.values])).toEqual([
      [
        1100,
        100,
        [
          { tag: 'probe/bpb', simple_value: 2 },
          { tag: 'probe/bpb/low', simple_value: 1.5 },
          { tag: 'probe/bpb/high', simple_value: 2.5 },
        ],
      ],
      [
        1500,
        500,
        [
          { tag: 'probe/bpb', simple_value: 0.5 },
          { tag: 'probe/bpb/low', simple_value: 0.25 },
          { tag: 'probe/bpb/high', simple_value: 0.75 },
        ],
      ],
      [1500, 500, [{ tag: 'probe/mcq', simple_value: 1 }]],
    ]);
    expect(decodeEvents(join(dir, 'b', EVENTS_FILE)).map((e) => e.values.map((v) => v.tag))).toEqual([
      [],
      ['probe/code_bpb'],
      ['probe/asap_valid_calls'],
    ]);
  });

  it('appends where the file is a prefix of what it must hold, else rewrites it whole', () => {
    const file = join(tempDir(), 'run', EVENTS_FILE);
    const at = (p: TrendPoint) => p.step;
    const one = [point('r', 1, { bpb: { value: 1, low: null, high: null } })];
    const two = [...one, point('r', 2, { bpb: { value: 2, low: null, high: null } })];
    const full = tensorboardRuns(two, at).get('r')!;
    expect(updateEventsFile(file, tensorboardRuns(one, at).get('r')!)).toBe('created');
    expect(updateEventsFile(file, full)).toBe('appended');
    expect(updateEventsFile(file, full)).toBe('unchanged');
    // A torn last record (killed mid-append) is a prefix too: the rest is appended.
    truncateSync(file, full.length - 3);
    expect(updateEventsFile(file, full)).toBe('appended');
    expect(readFileSync(file)).toEqual(full);
    appendFileSync(file, 'junk');
    expect(updateEventsFile(file, full)).toBe('rewritten');
    expect(readFileSync(file)).toEqual(full);
    // A point before those written: the whole file again, in step order.
    const earlier = tensorboardRuns([point('r', 0, { bpb: { value: 0, low: null, high: null } }), ...two], at).get('r')!;
    expect(updateEventsFile(file, earlier)).toBe('rewritten');
    expect(decodeEvents(file).map((e) => e.step)).toEqual([0, 0, 1, 2]);
  });
});
