/**
 * `--tensorboard DIR`: the events files probe writes by hand (TFRecord framing, CRC-32C,
 * the Event and Summary protobufs) read back by TensorBoard's own Python reader, and a
 * watch on the agentic ladder — killed and resumed, a checkpoint landing before ones
 * already written — read back through the real TensorBoard's HTTP API: every point at its
 * step, the values results.json's trend holds, none twice.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { EVENTS_FILE, settledTrend, tensorboardRuns, writeTensorboard } from '../src/report/trend-tensorboard.ts';
import { TREND_PROBES, type TrendPoint } from '../src/report/trend.ts';
import { crc32c } from '../src/tensorboard/crc32c.ts';
import { encodeEvent } from '../src/tensorboard/event.ts';
import { updateEventsFile } from '../src/tensorboard/events-file.ts';
import { maskedCrc } from '../src/tensorboard/record.ts';
import { runProbe, runProbeKilledAfter } from './helpers/cli.ts';
import { tempDir } from './helpers/paths.ts';
import { decodeEvents, pythonSerialized, type ServedTensorboard, serveTensorboard, skipWithoutTensorboard } from './helpers/tensorboard.ts';

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

describe('what the events files hold while pass@K and ASAP are out (watch --slurm)', () => {
  it("holds a run's later points back until its earlier checkpoint's pass@K and ASAP are in, so they append rather than rewrite", () => {
    const point = (checkpoint: string, series: string, step: number): TrendPoint => ({
      checkpoint,
      label: checkpoint,
      series,
      step,
      values: { bpb: { value: step / 1000, low: null, high: null } },
      disagreements: {},
    });
    const trend = [
      point('a-100', 'a', 100),
      point('a-200', 'a', 200),
      point('a-300', 'a', 300),
      point('b-100', 'b', 100),
      point('b-200', 'b', 200),
    ];
    const names = (pending: string[]) => settledTrend(trend, new Set(pending)).map((p) => p.checkpoint);
    expect(names([])).toEqual(trend.map((p) => p.checkpoint));
    // a-200's pass@K job is out: a-200's cheap points may go (they end the file), a-300's wait; run b is not held.
    expect(names(['a-200'])).toEqual(['a-100', 'a-200', 'b-100', 'b-200']);
    expect(names(['a-300', 'a-100'])).toEqual(['a-100', 'b-100', 'b-200']);
    // Each state's file is the start of the next one's: the file only grows.
    const wall = () => 1;
    const files = [['a-100', 'a-200'], ['a-200'], []].map(
      (pending) => tensorboardRuns(settledTrend(trend, new Set(pending)), wall).get('a')!,
    );
    for (let i = 1; i < files.length; i++) expect(files[i]!.subarray(0, files[i - 1]!.length).equals(files[i - 1]!)).toBe(true);
  });
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

const LADDER = join(REPO_ROOT, '..', 'shared', 'agentic-ladder');

interface Results {
  trend: TrendPoint[];
}

type Scalars = Array<[number, number, number]>;
type Shown = Record<string, Record<string, Array<[number, number]>>>;

/** Runs and tags in name order, so two views compare as text whatever order they were gathered in. */
const sorted = (view: Shown): Shown =>
  Object.fromEntries(
    Object.keys(view)
      .sort()
      .map((r) => [
        r,
        Object.fromEntries(
          Object.keys(view[r]!)
            .sort()
            .map((tag) => [tag, view[r]![tag]!]),
        ),
      ]),
  );

describe.skipIf(skipWithoutTensorboard)('probe watch --tensorboard, read through the real TensorBoard', () => {
  let served: ServedTensorboard | undefined;
  afterAll(async () => {
    await served?.stop();
  });

  it('holds every point of the trend at its step, none twice, across a kill, a resume and a checkpoint landing late', async () => {
    const root = tempDir();
    const [watched, run, board] = [join(root, 'ckpts'), join(root, 'watch'), join(root, 'tb')];
    mkdirSync(watched);
    mkdirSync(board);
    writeFileSync(join(board, 'notes.txt'), 'not ours'); // nothing else in DIR is touched
    const land = (name: string) => symlinkSync(join(LADDER, name), join(watched, name));
    const args = ['watch', watched, '--out', run, '--tensorboard', board, '--once', '--settle', '0', '--no-cache'];
    args.push(
      '--probes',
      join(REPO_ROOT, 'probes', 'demo.jsonl'),
      '--limit',
      '3',
      '--code',
      join(REPO_ROOT, 'verifiers', 'api__pagination-5'),
    );
    args.push('-n', '0', '--asap-runs', '0');
    const file = (series: string) => join(board, series, EVENTS_FILE);

    /** What TensorBoard serves of every probe tag: run → tag → [step, value]. */
    const shown = async (tb: ServedTensorboard) => {
      const tags = await tb.get<Record<string, Record<string, unknown>>>('data/plugin/scalars/tags');
      const out: Shown = {};
      for (const [r, byTag] of Object.entries(tags))
        for (const tag of Object.keys(byTag)) {
          const points = await tb.get<Scalars>(`data/plugin/scalars/scalars?run=${encodeURIComponent(r)}&tag=${encodeURIComponent(tag)}`);
          (out[r] ??= {})[tag] = points.map(([, step, value]) => [step, value]);
        }
      return sorted(out);
    };
    /** The same from results.json's trend, as TensorBoard keeps a value: a 32-bit float. */
    const expected = () => {
      const { trend } = JSON.parse(readFileSync(join(run, 'results.json'), 'utf8')) as Results;
      const out: Shown = {};
      for (const p of trend)
        for (const { key } of TREND_PROBES) {
          const v = p.values[key];
          if (!v) continue;
          const add = (tag: string, x: number | null) => x !== null && ((out[p.series] ??= {})[tag] ??= []).push([p.step, Math.fround(x)]);
          add(`probe/${key}`, v.value);
          add(`probe/${key}/low`, v.low);
          add(`probe/${key}/high`, v.high);
        }
      return sorted(out);
    };
    const agrees = async (tb: ServedTensorboard, timeoutMs = 60_000) => {
      const want = expected();
      const started = Date.now();
      let got = await shown(tb);
      while (JSON.stringify(got) !== JSON.stringify(want) && Date.now() - started < timeoutMs) {
        await new Promise((r) => setTimeout(r, 500));
        got = await shown(tb);
      }
      expect(got).toEqual(want);
    };

    // Killed right after the second checkpoint's cheap rungs were recorded: the first is in its file, the second not yet.
    for (const name of ['agentmix-mix25-s250', 'agentmix-mix25-s500', 'agentmix-mix0-s800']) land(name);
    runProbeKilledAfter(args, 'watch.jsonl:3', 120_000);
    expect(decodeEvents(file('agentmix-mix25')).map((e) => e.step)).toEqual([0, 250, 250, 250]);

    // A TensorBoard tailing the file while the watch resumes sees the rest appended, nothing twice.
    served = await serveTensorboard(board);
    const resumed = runProbe(args, {}, 120_000);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).not.toMatch(/rewrote/);
    await agrees(served);
    const got = await shown(served);
    expect(Object.keys(got).sort()).toEqual(['agentmix-mix0', 'agentmix-mix25']);
    expect(got['agentmix-mix25']!['probe/bpb']!.map(([step]) => step)).toEqual([250, 500]);
    expect(got['agentmix-mix0']!['probe/code_bpb']!.map(([step]) => step)).toEqual([800]);
    expect(Object.keys(got['agentmix-mix25']!).sort()).toEqual(Object.keys(expected()['agentmix-mix25']!).sort());

    // A checkpoint at an earlier step lands late: its run's file is rewritten in step order, which a TensorBoard
    // already reading it does not follow (it keeps its place in the replaced file) — a fresh one shows it whole.
    land('agentmix-mix25-s100');
    const late = runProbe(args, {}, 120_000);
    expect(late.code, late.stderr).toBe(0);
    expect(late.stderr).toMatch(/rewrote .*agentmix-mix25's events/);
    await served.stop();
    served = await serveTensorboard(board);
    await agrees(served);
    expect((await shown(served))['agentmix-mix25']!['probe/bpb']!.map(([step]) => step)).toEqual([100, 250, 500]);

    // Written again on every start, the same bytes: a torn tail is made whole, an intact file left as it is.
    const before = { a: readFileSync(file('agentmix-mix25')), b: readFileSync(file('agentmix-mix0')) };
    truncateSync(file('agentmix-mix0'), before.b.length - 5);
    const again = runProbe(args, {}, 120_000);
    expect(again.code, again.stderr).toBe(0);
    expect(readFileSync(file('agentmix-mix25'))).toEqual(before.a);
    expect(readFileSync(file('agentmix-mix0'))).toEqual(before.b);
    expect(readdirSync(board).sort()).toEqual(['agentmix-mix0', 'agentmix-mix25', 'notes.txt']);
    for (const series of ['agentmix-mix0', 'agentmix-mix25']) expect(readdirSync(join(board, series))).toEqual([EVENTS_FILE]);
  }, 480_000);
});
