// The pending gauges over the last hour (GET /api/v1/attention/history: a sample every 10 s, in the gateway's
// memory) as two small SVG line charts: the oldest PENDING message's age, with the stale threshold, and the
// number of PENDING messages. Drawn with attributes and CSS classes only (the page's CSP allows no inline style).

import {age, h, replace} from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 600;
const H = 170;
const PAD = {left: 56, right: 12, top: 14, bottom: 26};

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

export function pendingChart(container, history, thresholdSeconds) {
  const samples = history.samples ?? [];
  if (samples.length === 0) {
    replace(container, h('p', {class: 'empty'}, `No samples yet: the gateway takes one every ${history.intervalSeconds} s.`));
    return;
  }
  const end = Date.parse(samples.at(-1).at);
  const start = end - history.windowSeconds * 1000;
  const ages = samples.map((s) => ({t: Date.parse(s.at), v: s.oldestPendingAgeSeconds}));
  const counts = samples.map((s) => ({t: Date.parse(s.at), v: s.pending}));
  const maxAge = Math.max(...ages.map((p) => p.v));
  const maxCount = Math.max(...counts.map((p) => p.v));
  const now = samples.at(-1);
  replace(container,
    panel('chart-age', 'Oldest PENDING age', ages, {start, end, format: age, threshold: thresholdSeconds},
      `Oldest PENDING message's age over the last hour: now ${age(now.oldestPendingAgeSeconds)}, highest ${age(maxAge)}; `
      + `the stale threshold is ${age(thresholdSeconds)}.`),
    panel('chart-count', 'PENDING messages', counts, {start, end, format: (n) => String(n)},
      `PENDING messages over the last hour: now ${now.pending}, highest ${maxCount}.`),
    h('p', {class: 'chart-note'}, `${samples.length} sample${samples.length === 1 ? '' : 's'}, one every `
      + `${history.intervalSeconds} s, kept in the gateway's memory since it started (at most the last hour).`));
}

function panel(id, title, points, {start, end, format, threshold}, description) {
  const top = Math.max(1, ...points.map((p) => p.v), threshold ? threshold * 1.15 : 0);
  const x = (t) => PAD.left + ((t - start) / (end - start)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const titleId = `${id}-title`;
  const descId = `${id}-desc`;
  const chart = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': `${titleId} ${descId}`, class: 'chart-svg', id},
    svg('title', {id: titleId}, title),
    svg('desc', {id: descId}, description));
  // Axes and grid: the top value and zero on the left, -60 / -30 / 0 minutes below.
  chart.append(
    svg('line', {x1: PAD.left, y1: y(0), x2: W - PAD.right, y2: y(0), class: 'axis'}),
    svg('line', {x1: PAD.left, y1: y(top), x2: W - PAD.right, y2: y(top), class: 'grid'}),
    svg('text', {x: PAD.left - 6, y: y(top) + 4, class: 'tick', 'text-anchor': 'end'}, format(Math.round(top))),
    svg('text', {x: PAD.left - 6, y: y(0) + 4, class: 'tick', 'text-anchor': 'end'}, format(0)));
  for (const [label, t] of [['−60 min', start], ['−30 min', (start + end) / 2], ['now', end]]) {
    chart.append(svg('text', {x: x(t), y: H - 6, class: 'tick', 'text-anchor': t === start ? 'start' : t === end ? 'end' : 'middle'}, label));
  }
  if (threshold) {
    chart.append(
      svg('line', {x1: PAD.left, y1: y(threshold), x2: W - PAD.right, y2: y(threshold), class: 'threshold'}),
      svg('text', {x: W - PAD.right, y: y(threshold) - 4, class: 'tick threshold-label', 'text-anchor': 'end'},
        `stale after ${format(threshold)}`));
  }
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ');
  chart.append(svg('path', {d: path, class: 'series'}));
  if (points.length === 1) chart.append(svg('circle', {cx: x(points[0].t), cy: y(points[0].v), r: 3, class: 'series-dot'}));
  return h('figure', {class: 'chart-panel'}, chart, h('figcaption', {}, title));
}
