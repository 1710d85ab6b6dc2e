/**
 * The trend view as one self-contained SVG: a panel per probe (the baseline, general code
 * BPB, first, beside the others), training step across, one line per training run, the
 * 95% interval of each point as a bar, and points where the probe disagrees with the
 * baseline ringed in red with the reason as their tooltip. The same string goes into the
 * HTML report and into `trend.svg`, which pastes into a training log as it is.
 */
import { escapeXml, PALETTE } from './svg.ts';
import { BASELINE, formatTrendValue, TREND_PROBES, type TrendPoint, type TrendProbe } from './trend.ts';

const PANEL = { w: 330, h: 170, left: 52, top: 26, right: 12, bottom: 34 };
const COLUMNS = 2;
const DISAGREE = '#d62728';

/** Round values within [min, max] to label an axis with: steps of 1, 2 or 5 × 10^k, at most 6 of them. */
function ticks(min: number, max: number): number[] {
  if (!(max > min)) return [min];
  const raw = (max - min) / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function panel(probe: (typeof TREND_PROBES)[number], points: TrendPoint[], seriesNames: string[], x0: number, y0: number): string {
  const mine = points.filter((p) => p.values[probe.key]);
  const steps = points.map((p) => p.step);
  const [sMin, sMax] = [Math.min(...steps), Math.max(...steps)];
  const ys = mine.flatMap((p) => {
    const v = p.values[probe.key]!;
    return [v.value, v.low ?? v.value, v.high ?? v.value].filter(Number.isFinite);
  });
  let [yMin, yMax] = ys.length ? [Math.min(...ys), Math.max(...ys)] : [0, 1];
  if (probe.share) [yMin, yMax] = [Math.min(0, yMin), Math.max(yMax, yMin + 0.05)];
  const pad = (yMax - yMin || Math.abs(yMax) || 1) * 0.08;
  [yMin, yMax] = [yMin - pad, yMax + pad];
  const w = PANEL.w - PANEL.left - PANEL.right;
  const h = PANEL.h - PANEL.top - PANEL.bottom;
  const px = x0 + PANEL.left;
  const py = y0 + PANEL.top;
  // Inset from the frame, so a point (and its interval) at the first or last step is not drawn on it.
  const inset = 14;
  const sx = (s: number) => px + (sMax === sMin ? w / 2 : inset + ((s - sMin) / (sMax - sMin)) * (w - 2 * inset));
  const sy = (v: number) => py + h - ((v - yMin) / (yMax - yMin)) * h;
  const fmt = (v: number) => (probe.share ? `${Math.round(100 * v)}%` : String(Number(v.toPrecision(3))));
  const title = `${probe.label}${probe.higherIsBetter ? ' ↑' : ' ↓'}`;
  let body = `<g data-panel="${probe.key}"><text x="${px}" y="${y0 + 16}" font-weight="600">${escapeXml(title)}</text>`;
  body += `<rect x="${px}" y="${py}" width="${w}" height="${h}" fill="none" stroke="#999"/>`;
  for (const v of ticks(yMin, yMax))
    body += `<line x1="${px}" x2="${px + w}" y1="${sy(v).toFixed(1)}" y2="${sy(v).toFixed(1)}" stroke="#eee"/><text x="${px - 4}" y="${(sy(v) + 4).toFixed(1)}" text-anchor="end">${fmt(v)}</text>`;
  for (const s of [...new Set(steps)].sort((a, b) => a - b))
    body += `<text x="${sx(s).toFixed(1)}" y="${py + h + 13}" text-anchor="middle" font-size="10">${s}</text>`;
  body += `<text x="${px + w / 2}" y="${py + h + 27}" text-anchor="middle" font-size="11">training step</text>`;
  if (mine.length === 0) body += `<text x="${px + w / 2}" y="${py + h / 2}" text-anchor="middle" class="empty">not scored yet</text>`;
  seriesNames.forEach((series, i) => {
    const color = PALETTE[i % PALETTE.length]!;
    const run = mine.filter((p) => p.series === series).sort((a, b) => a.step - b.step);
    if (run.length > 1)
      body += `<path d="${run.map((p, j) => `${j ? 'L' : 'M'}${sx(p.step).toFixed(1)},${sy(p.values[probe.key]!.value).toFixed(1)}`).join('')}" fill="none" stroke="${color}" stroke-width="2"${probe.key === BASELINE ? ' stroke-dasharray="5 3"' : ''}/>`;
    for (const p of run) {
      const v = p.values[probe.key]!;
      const [cx, cy] = [sx(p.step).toFixed(1), sy(v.value).toFixed(1)];
      if (v.low !== null && v.high !== null && Number.isFinite(v.low) && Number.isFinite(v.high))
        body += `<line data-interval="${probe.key}" x1="${cx}" x2="${cx}" y1="${sy(v.low).toFixed(1)}" y2="${sy(v.high).toFixed(1)}" stroke="${color}" stroke-opacity="0.45" stroke-width="5"/>`;
      const why = p.disagreements[probe.key];
      const interval =
        v.low !== null && v.high !== null ? ` [${formatTrendValue(probe.key, v.low)}, ${formatTrendValue(probe.key, v.high)}]` : '';
      const tip = `${p.label} (step ${p.step}): ${formatTrendValue(probe.key, v.value)}${interval}${why ? ` — disagrees with the baseline: ${why}` : ''}`;
      body += `<circle data-point="${probe.key}" data-checkpoint="${escapeXml(p.checkpoint)}" data-step="${p.step}" data-series="${escapeXml(series)}"${why ? ' data-disagrees="true"' : ''} cx="${cx}" cy="${cy}" r="${why ? 5 : 3.5}" fill="${color}"${why ? ` stroke="${DISAGREE}" stroke-width="2.5"` : ''}><title>${escapeXml(tip)}</title></circle>`;
    }
  });
  return `${body}</g>`;
}

/** The whole trend: one panel per probe with any point (the baseline always), a legend of the training runs. */
export function trendChart(title: string, points: TrendPoint[]): string {
  const seriesNames = [...new Set(points.map((p) => p.series))].sort();
  const probes = TREND_PROBES.filter((p) => p.key === BASELINE || points.some((x) => x.values[p.key as TrendProbe]));
  const rows = Math.ceil(probes.length / COLUMNS);
  const legendY = 30;
  const top = legendY + 18 * Math.ceil(seriesNames.length / 3) + 4;
  const width = COLUMNS * PANEL.w + 8;
  const height = top + rows * PANEL.h + 22;
  const legend =
    seriesNames
      .map((s, i) => {
        const [x, y] = [8 + (i % 3) * 220, legendY + Math.floor(i / 3) * 18];
        return `<rect x="${x}" y="${y}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/><text x="${x + 16}" y="${y + 10}">${escapeXml(s)}</text>`;
      })
      .join('') +
    `<circle cx="${width - 190}" cy="${legendY + 6}" r="5" fill="#fff" stroke="${DISAGREE}" stroke-width="2.5"/><text x="${width - 180}" y="${legendY + 10}">disagrees with the baseline</text>`;
  const panels = probes
    .map((p, i) => panel(p, points, seriesNames, (i % COLUMNS) * PANEL.w, top + Math.floor(i / COLUMNS) * PANEL.h))
    .join('');
  const note = `<text x="8" y="${height - 6}" font-size="10" fill="#666">bars: 95% bootstrap interval over items · ↓ lower is better, ↑ higher is better · dashed: the baseline</text>`;
  return (
    `<svg class="chart" data-chart="trend" role="img" aria-label="${escapeXml(title)}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">` +
    `<title>${escapeXml(title)}</title><rect width="100%" height="100%" fill="#fff"/><text x="8" y="18" font-weight="600">${escapeXml(title)}</text>${legend}${panels}${note}</svg>`
  );
}
