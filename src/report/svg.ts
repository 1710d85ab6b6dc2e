/**
 * Charts as plain SVG strings, so a report is one self-contained file that renders offline
 * with no script: horizontal bars, stacked bars, lines (pass@k curves) and a scatter.
 */

export const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const FONT = 'font-family="system-ui, sans-serif" font-size="12"';

function svg(width: number, height: number, title: string, body: string, kind: string): string {
  return (
    `<svg class="chart" data-chart="${kind}" role="img" aria-label="${escapeXml(title)}" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT}>` +
    `<title>${escapeXml(title)}</title><text x="8" y="16" font-weight="600">${escapeXml(title)}</text>${body}</svg>`
  );
}

const finite = (v: number) => Number.isFinite(v);

export interface Bar {
  label: string;
  value: number;
  note?: string;
}

/** One horizontal bar per label; NaN values are drawn as "n/a". */
export function barChart(title: string, bars: Bar[], format: (v: number) => string, options: { max?: number } = {}): string {
  const labelWidth = Math.min(260, 16 + 7 * Math.max(8, ...bars.map((b) => b.label.length)));
  const plot = 320;
  const row = 24;
  const max = options.max ?? Math.max(1e-12, ...bars.map((b) => b.value).filter(finite));
  const body = bars
    .map((b, i) => {
      const y = 28 + i * row;
      const w = finite(b.value) ? Math.max(1, (plot * b.value) / max) : 0;
      return (
        `<text x="${labelWidth - 6}" y="${y + 15}" text-anchor="end">${escapeXml(b.label)}</text>` +
        (w
          ? `<rect x="${labelWidth}" y="${y + 3}" width="${w.toFixed(1)}" height="${row - 8}" fill="${PALETTE[i % PALETTE.length]}"/>`
          : '') +
        `<text x="${labelWidth + w + 6}" y="${y + 15}">${escapeXml(finite(b.value) ? format(b.value) : 'n/a')}${b.note ? ` ${escapeXml(b.note)}` : ''}</text>`
      );
    })
    .join('');
  return svg(labelWidth + plot + 110, 36 + bars.length * row, title, body, 'bar');
}

export interface StackedBar {
  label: string;
  parts: number[];
}

/** Bars of parts stacked to their share of the bar's total, with a legend of the categories. */
export function stackedBars(title: string, categories: string[], bars: StackedBar[], unit = ''): string {
  const labelWidth = Math.min(260, 16 + 7 * Math.max(8, ...bars.map((b) => b.label.length)));
  const plot = 360;
  const row = 26;
  const legendY = 30 + bars.length * row + 8;
  const body = bars
    .map((b, i) => {
      const y = 28 + i * row;
      const total = b.parts.reduce((a, v) => a + v, 0);
      let x = labelWidth;
      const rects = b.parts
        .map((v, j) => {
          if (total === 0 || v === 0) return '';
          const w = (plot * v) / total;
          const rect = `<rect x="${x.toFixed(1)}" y="${y + 3}" width="${w.toFixed(1)}" height="${row - 8}" fill="${PALETTE[j % PALETTE.length]}"><title>${escapeXml(`${categories[j]}: ${v} of ${total}`)}</title></rect>`;
          x += w;
          return rect;
        })
        .join('');
      return `<text x="${labelWidth - 6}" y="${y + 16}" text-anchor="end">${escapeXml(b.label)}</text>${rects}<text x="${labelWidth + plot + 6}" y="${y + 16}">${total}${unit ? ` ${escapeXml(unit)}` : ''}</text>`;
    })
    .join('');
  const legend = categories
    .map((c, j) => {
      const x = 8 + (j % 4) * 150;
      const y = legendY + Math.floor(j / 4) * 18;
      return `<rect x="${x}" y="${y}" width="12" height="12" fill="${PALETTE[j % PALETTE.length]}"/><text x="${x + 16}" y="${y + 10}">${escapeXml(c)}</text>`;
    })
    .join('');
  return svg(Math.max(labelWidth + plot + 110, 620), legendY + Math.ceil(categories.length / 4) * 18 + 6, title, body + legend, 'stacked');
}

export interface Series {
  name: string;
  points: Array<[number, number]>;
}

interface Axes {
  x0: number;
  y0: number;
  w: number;
  h: number;
  sx: (v: number) => number;
  sy: (v: number) => number;
}

function axes(
  xs: number[],
  ys: number[],
  options: { logX?: boolean; yMin?: number; yMax?: number; xLabel: string; yLabel: string },
): { axes: Axes; body: string } {
  const x0 = 56;
  const y0 = 28;
  const w = 400;
  const h = 220;
  const tx = (v: number) => (options.logX ? Math.log2(v) : v);
  const xMin = Math.min(...xs.map(tx));
  const xMax = Math.max(...xs.map(tx));
  const yMin = options.yMin ?? Math.min(...ys);
  const yMax = options.yMax ?? Math.max(...ys);
  const spanX = xMax - xMin || 1;
  const spanY = yMax - yMin || 1;
  const sx = (v: number) => x0 + ((tx(v) - xMin) / spanX) * w;
  const sy = (v: number) => y0 + h - ((v - yMin) / spanY) * h;
  let body = `<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#999"/>`;
  for (const v of [...new Set(xs)].sort((a, b) => a - b))
    body += `<text x="${sx(v).toFixed(1)}" y="${y0 + h + 14}" text-anchor="middle">${v}</text>`;
  for (let i = 0; i <= 4; i++) {
    const v = yMin + (spanY * i) / 4;
    body += `<line x1="${x0}" x2="${x0 + w}" y1="${sy(v).toFixed(1)}" y2="${sy(v).toFixed(1)}" stroke="#eee"/><text x="${x0 - 4}" y="${(sy(v) + 4).toFixed(1)}" text-anchor="end">${Number(v.toPrecision(3))}</text>`;
  }
  body += `<text x="${x0 + w / 2}" y="${y0 + h + 30}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`;
  body += `<text transform="translate(14 ${y0 + h / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`;
  return { axes: { x0, y0, w, h, sx, sy }, body };
}

/** Lines through points, one per series (log₂ x for pass@k). */
export function lineChart(
  title: string,
  allSeries: Series[],
  options: { logX?: boolean; xLabel: string; yLabel: string; yMin?: number; yMax?: number },
): string {
  const series = allSeries.map((s) => ({ ...s, points: s.points.filter((p) => finite(p[0]) && finite(p[1])) }));
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  if (xs.length === 0) return svg(480, 40, title, '<text x="8" y="34">no data</text>', 'line');
  const { axes: a, body } = axes(xs, ys, options);
  const lines = series
    .map((s, i) => {
      const color = PALETTE[i % PALETTE.length];
      const path = s.points.map((p, j) => `${j ? 'L' : 'M'}${a.sx(p[0]).toFixed(1)},${a.sy(p[1]).toFixed(1)}`).join('');
      const dots = s.points
        .map(
          (p) =>
            `<circle cx="${a.sx(p[0]).toFixed(1)}" cy="${a.sy(p[1]).toFixed(1)}" r="3" fill="${color}"><title>${escapeXml(`${s.name}: ${p[1].toFixed(3)} at ${p[0]}`)}</title></circle>`,
        )
        .join('');
      const legend = `<rect x="${a.x0 + a.w + 12}" y="${a.y0 + i * 18}" width="12" height="12" fill="${color}"/><text x="${a.x0 + a.w + 28}" y="${a.y0 + i * 18 + 10}">${escapeXml(s.name)}</text>`;
      return `<path d="${path}" fill="none" stroke="${color}" stroke-width="2"/>${dots}${legend}`;
    })
    .join('');
  return svg(a.x0 + a.w + 220, a.y0 + a.h + 40, title, body + lines, 'line');
}

export interface Point {
  label: string;
  x: number;
  y: number;
}

/** Labelled points, e.g. a probe metric against a downstream score. */
export function scatter(title: string, points: Point[], options: { xLabel: string; yLabel: string }): string {
  const usable = points.filter((p) => finite(p.x) && finite(p.y));
  if (usable.length === 0) return svg(480, 40, title, '<text x="8" y="34">no data</text>', 'scatter');
  const { axes: a, body } = axes(
    usable.map((p) => p.x),
    usable.map((p) => p.y),
    options,
  );
  const dots = usable
    .map(
      (p, i) =>
        `<circle cx="${a.sx(p.x).toFixed(1)}" cy="${a.sy(p.y).toFixed(1)}" r="5" fill="${PALETTE[i % PALETTE.length]}"><title>${escapeXml(`${p.label}: ${p.x}, ${p.y}`)}</title></circle>` +
        `<text x="${(a.sx(p.x) + 7).toFixed(1)}" y="${(a.sy(p.y) - 6).toFixed(1)}">${escapeXml(p.label)}</text>`,
    )
    .join('');
  return svg(a.x0 + a.w + 160, a.y0 + a.h + 40, title, body + dots, 'scatter');
}
