/**
 * `probe report`: a screen run directory (BPB, MCQ, pass@k, ASAP) and a BPB run rendered
 * into one HTML file, opened in headless Chromium, with every section and chart present.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import type { ReportData } from '../src/report/collect.ts';
import { renderReport, REPORT_SECTIONS } from '../src/report/html.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { chromiumUnavailable, renderedDom, screenshot } from './helpers/chromium.ts';
import { CKPT, DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 600_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('probe report', () => {
  it('refuses a directory that is not a run, and a run that has not finished, naming the file (exit 2)', () => {
    const notRun = probe(['report', tempDir()]);
    expect(notRun.code).toBe(2);
    expect(notRun.stderr).toMatch(/run\.json: not a run directory/);
    const dir = join(tempDir(), 'run');
    expect(probe(['bpb', '--ckpt', CKPT.prose, '--probes', DEMO_PROBES, '--limit', '2', '--out', dir]).code).toBe(0);
    const results = join(dir, 'results.json');
    writeFileSync(results, '{"results":');
    const broken = probe(['report', dir]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain(`${results}: not JSON`);
  });
});

describe('renderReport', () => {
  it('escapes every text that comes from files or models, and survives missing numbers', () => {
    const evil = '<img src=x onerror=alert(1)>';
    const data: ReportData = {
      runs: [{ dir: `/runs/${evil}`, verb: 'mcq', manifest: null }],
      bpb: [
        {
          checkpoint: evil,
          backend: 'onnx',
          bpb: NaN,
          nats: 0,
          bytes: 0,
          tokens: 0,
          items: [{ id: evil, task: 't', bpb: NaN, nats: 0, bytes: 0, tokens: 0, truncated: false, greedy: false }],
        },
      ],
      mcq: [
        {
          checkpoint: evil,
          backend: 'onnx',
          style: evil as never,
          acc: 0,
          acc_norm: null,
          acc_pmi: null,
          min_distractors: 3,
          skipped: [],
          diagnostics: {
            shortest_wins: { acc: NaN, acc_norm: null, acc_pmi: null, letter: null },
            shortest_is_gold: NaN,
            verbatim_in_context: { any: NaN, gold: NaN, distractor: NaN },
          },
          items: [
            { id: evil, options: 2, pick: { acc: -1, acc_norm: 0, acc_pmi: 0 }, correct: false, correct_norm: true, correct_pmi: true },
          ],
        },
      ],
      passk: [
        {
          checkpoint: evil,
          backend: 'onnx',
          n: 2,
          pass_at: { '1': null as unknown as number, '2': 0.5 },
          parse_failure_rate: 0,
          items: [
            { id: evil, task: 't', n: 2, c: 1, parse_failures: 0, samples: [{ text: evil, parsed: true, resolved: false, reason: evil }] },
          ],
        },
      ],
      asap: [],
      episodes: {},
      aptbench: [],
      trend: [],
      ladder: { rows: [], shortlist: [evil] },
      items: new Map(),
      controls: new Set([evil]),
    };
    const html = renderReport(data, { downstream: new Map([[evil, 1]]) });
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});

describe.skipIf(skipWithoutBwrap || chromiumUnavailable())('probe report in headless Chromium', () => {
  it('renders every section of a screen run and a BPB run, with charts, drill-down and transcripts', () => {
    const screenDir = join(tempDir(), 'screen');
    const ckpts = ['ngram-prose', 'attn-agent', 'contaminated-agent'].map((n) => join(EMBEDDED_CHECKPOINTS, n));
    const screen = probe([
      'screen',
      '--ckpt',
      ...ckpts,
      '--probes',
      join(REPO_ROOT, 'probes', 'demo.jsonl'),
      '--limit',
      '4',
      '-n',
      '2',
      '--shortlist',
      '1',
      '--passk-top',
      '2',
      '--asap-runs',
      '1',
      '--asap-max-steps',
      '6',
      '--out',
      screenDir,
      '--json',
    ]);
    expect(screen.code, screen.stderr).toBe(0);
    for (const f of [
      'run.json',
      'results.json',
      'cheap.json',
      'passk.json',
      'bpb/samples.jsonl',
      'mcq/samples.jsonl',
      'passk/samples.jsonl',
      'asap/results.json',
    ]) {
      expect(existsSync(join(screenDir, f)), f).toBe(true);
    }
    const bpbDir = join(tempDir(), 'bpb');
    expect(
      probe(['bpb', '--ckpt', CKPT.agent, '--probes', join(REPO_ROOT, 'probes', 'demo.jsonl'), '--limit', '4', '--out', bpbDir]).code,
    ).toBe(0);

    const scores = join(tempDir(), 'downstream.csv');
    writeFileSync(scores, 'checkpoint,swebench\nngram-prose,0.01\nattn-agent,0.05\ncontaminated-agent,0.4\nngram-agent,0.02\n');
    const html = join(tempDir(), 'report', 'report.html');
    const report = probe(['report', screenDir, bpbDir, '--html', html, '--downstream', scores, '--json']);
    expect(report.code, report.stderr).toBe(0);
    const summary = JSON.parse(report.stdout) as { bpb: Array<{ checkpoint: string }>; shortlist: string[]; html: string };
    expect(summary.bpb.map((b) => b.checkpoint.split('/').pop()).sort()).toEqual([
      'attn-agent',
      'contaminated-agent',
      'ngram-agent',
      'ngram-prose',
    ]);
    // The contaminated control is a ceiling, never shortlisted; it is named a control, and kept out of the correlations.
    expect(summary.shortlist.map((c) => c.split('/').pop())).toEqual(['attn-agent']);
    expect((summary as unknown as { controls: string[] }).controls.map((c) => c.split('/').pop())).toEqual(['contaminated-agent']);
    expect(summary.html).toBe(html);

    // Self-contained: nothing is fetched from anywhere.
    const source = readFileSync(html, 'utf8');
    expect(source).not.toMatch(/<(script|link|img)\b[^>]*\b(src|href)=/i);

    const dom = renderedDom(html);
    const sectionOf = (id: string) => {
      const match = new RegExp(`<section id="${id}">([\\s\\S]*?)</section>`).exec(dom);
      expect(match, `section ${id}`).not.toBeNull();
      return match![1]!;
    };
    for (const id of REPORT_SECTIONS) expect(sectionOf(id)).not.toContain('class="empty"');
    expect(sectionOf('ranking')).toMatch(/Shortlist for post-training: <strong>attn-agent<\/strong>/);
    expect(sectionOf('ranking')).toMatch(/contaminated-agent <span class="control">\(control\)<\/span>/);
    expect(sectionOf('correlation')).toMatch(/BPB against the downstream score \(Spearman ρ = -?\d\.\d\d, 3 checkpoints\)/);
    expect(sectionOf('bpb')).toContain('data-chart="bar"');
    expect(sectionOf('mcq')).toContain('data-chart="bar"');
    expect(sectionOf('passk')).toContain('data-chart="line"');
    expect(sectionOf('asap').match(/data-chart="stacked"/g)).toHaveLength(2);
    expect(sectionOf('correlation').match(/data-chart="scatter"/g)!.length).toBeGreaterThanOrEqual(3);
    expect(sectionOf('correlation')).toMatch(/Spearman ρ = -?\d\.\d\d/);
    const items = sectionOf('items');
    expect(items.match(/<details class="item">/g)).toHaveLength(4);
    expect(items).toContain('class="gold"');
    expect(items).toContain('class="distractor"');
    expect(items).toMatch(/class="sample (pass|fail)"/);
    const transcripts = sectionOf('transcripts');
    expect(transcripts).toContain('# Task');
    expect(transcripts).toMatch(/run 0: (RESOLVED|not resolved)/);

    // A large ASAP run keeps the file readable: past --max-transcripts, transcripts are listed by path.
    const capped = join(tempDir(), 'capped.html');
    expect(probe(['report', screenDir, '--html', capped, '--max-transcripts', '1']).code).toBe(0);
    const cappedHtml = readFileSync(capped, 'utf8');
    expect(cappedHtml.match(/<details class="transcript">/g)).toHaveLength(1);
    expect(cappedHtml).toMatch(/<p class="transcript-path">run 0: .*<code>.*run-0\.md<\/code>/);

    const png = join(tempDir(), 'report.png');
    screenshot(html, png);
    expect(statSync(png).size).toBeGreaterThan(20_000);
  }, 900_000);
});
