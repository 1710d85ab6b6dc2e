/** Progress on a terminal: an overall bar with ETA and per-checkpoint counts; nothing when not a terminal. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgress, formatDuration } from '../src/report/progress.ts';

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
