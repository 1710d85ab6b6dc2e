/** Progress on a terminal: an overall bar with ETA and per-checkpoint counts; nothing when not a terminal. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgress, formatDuration } from '../src/report/progress.ts';
import { enterStage, RunStages, withRunStages } from '../src/report/run-stages.ts';

class Terminal extends Writable {
  text = '';
  constructor(
    readonly isTTY: boolean,
    readonly columns = 120,
  ) {
    super();
  }
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
  /** What the screen shows last: the lines drawn after the last cursor-up. */
  screen(): string[] {
    const last = this.text.split(/\x1b\[\d+A\r/).pop()!;
    return last.split('\n').map((l) => l.replace(/^\r/, '').split('\x1b[2K').pop()!);
  }
}

describe('progress', () => {
  it('draws the overall count, an ETA from computed work only, and per-checkpoint counts', () => {
    let t = 0;
    const term = new Terminal(true);
    const progress = createProgress({
      total: 6,
      perCheckpoint: [
        { name: 'checkpoints/a', units: 3 },
        { name: 'checkpoints/b', units: 3 },
      ],
      enabled: true,
      stream: term,
      intervalMs: 0,
      now: () => t,
    });
    progress.label('bpb: checkpoints/a');
    // Three items read back from a resumed run take no time and do not set the rate.
    for (let i = 0; i < 3; i++) progress.tick('checkpoints/a', true);
    t = 10_000;
    progress.tick('checkpoints/b');
    const [head, counts] = term.screen();
    expect(head).toContain('4/6');
    expect(head).toContain(' 67%');
    // One computed unit in 10 s, two left: 20 s.
    expect(head).toContain('ETA 20s');
    expect(head).toContain('bpb: checkpoints/a');
    expect(counts).toBe('  a 3/3 ✓ · b 1/3');
    progress.stop();
    expect(term.text.endsWith('\x1b[2K\x1b[1A\r')).toBe(true);
  });

  it('wraps the per-checkpoint counts to the terminal width', () => {
    const term = new Terminal(true, 40);
    const names = [
      'ngram-prose',
      'a-checkpoint-name-far-longer-than-the-terminal-is-wide',
      'ngram-agent',
      'attn-agent',
      'contaminated-agent',
    ];
    const progress = createProgress({
      total: 10,
      perCheckpoint: names.map((name) => ({ name, units: 2 })),
      enabled: true,
      stream: term,
      intervalMs: 0,
    });
    progress.tick('ngram-prose');
    const lines = term.screen();
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(line.length).toBeLessThan(40);
    expect(lines.slice(1).join(' ')).toContain('contaminated-agent 0/2');
    // Fewer lines on a later draw (never here, but the renderer must not leave one behind): as many lines as before.
    progress.tick('ngram-prose');
    expect(term.screen()).toHaveLength(lines.length);
  });

  it('writes nothing when the stream is not a terminal or when asked to be quiet', () => {
    for (const [isTTY, enabled] of [
      [false, true],
      [true, false],
    ] as const) {
      const term = new Terminal(isTTY);
      const progress = createProgress({ total: 3, enabled, stream: term });
      progress.tick('x');
      progress.stop();
      expect(term.text).toBe('');
    }
  });

  it('formats durations', () => {
    expect(formatDuration(NaN)).toBe('--');
    expect(formatDuration(59_400)).toBe('59s');
    expect(formatDuration(65_000)).toBe('1m05s');
    expect(formatDuration(3_725_000)).toBe('1h02m');
  });
});

describe('one display for a run of stages', () => {
  it("shows the stage of how many, the whole run's share done and its ETA, with read-back work outside the pace", async () => {
    let t = 0;
    const term = new Terminal(true);
    const bar = (total: number) => createProgress({ total, enabled: true, stream: term, intervalMs: 0, now: () => t });
    await withRunStages(
      [
        { name: 'a', share: 1 },
        { name: 'b', share: 3 },
      ],
      async () => {
        enterStage('a');
        const a = bar(2);
        t = 10_000;
        a.tick();
        // Half of a (share 1 of 4) in 10 s: 1/8 of the run, so 70 s left.
        expect(term.screen()[0]).toMatch(/^stage 1\/2 a █+░+ 1\/2 \| run 13% ETA 1m10s \| 10s elapsed$/);
        a.tick();
        a.stop();
        enterStage('b');
        const b = bar(3);
        b.tick(undefined, true); // read back: done, but no time spent
        // a (1/4) computed plus a third of b read back (1/4): half the run, a quarter of it computed in 10 s → 20 s left.
        expect(term.screen()[0]).toMatch(/^stage 2\/2 b █+░+ 1\/3 \| run 50% ETA 20s \| 10s elapsed$/);
        b.stop();
      },
      () => t,
    );
    // Outside a tracked run a bar is its own again.
    const alone = bar(2);
    alone.tick();
    expect(term.screen()[0]).toMatch(/^█+░+ 1\/2 {2}50% \| ETA/);
  });

  it('counts the stages a resumed run skips as done and read back, and takes stages it was not told of', () => {
    let t = 0;
    const run = new RunStages(
      [
        { name: 'build', share: 1 },
        { name: 'score', share: 1 },
      ],
      () => t,
    );
    run.enter('score');
    t = 5000;
    expect(run.position(0.5, 0)).toMatchObject({ stage: 'stage 2/2 score', fraction: 0.75, etaMs: 5000, elapsedMs: 5000 });
    run.enter('report');
    expect(run.position(0, 0).stage).toBe('stage 3/3 report');
  });
});

describe('where a run of stages spent its time', () => {
  it('gives each stage that ran its seconds, the current one until now', () => {
    let t = 0;
    const run = new RunStages(
      [
        { name: 'build', share: 1 },
        { name: 'score', share: 1 },
      ],
      () => t,
    );
    run.enter('build');
    t = 1500;
    run.enter('score');
    t = 4000;
    expect(run.timings()).toEqual([
      { stage: 'build', seconds: 1.5 },
      { stage: 'score', seconds: 2.5 },
    ]);
  });
});
