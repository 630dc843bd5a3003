// Usage: GET /api/v1/stats (docs/design.md §8.12) as a stacked bar chart per day or hour, per user, status or delivery
// state and bounce category (then of recipients), with the totals below and the same counts as CSV. SVG with
// attributes and CSS classes only (the page's CSP allows no inline style); colours come from console.css's
// .usage-s0 … .usage-s7, the rest of the series is "others".

import {api, query, session} from './api.js';
import {bytes, h, replace} from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 720;
const H = 220;
const PAD = {left: 56, right: 12, top: 12, bottom: 28};
const SERIES = 7; // the largest series drawn on their own (colours s0 … s6); the others added up (s7)

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** The request's parameters from the form: whole UTC days (or hours) ending with the current one. */
function params(form) {
  const days = Number(form.days.value);
  const bucket = days > 31 ? '1d' : form.bucket.value;
  const until = new Date();
  if (bucket === '1d') until.setUTCHours(24, 0, 0, 0);
  else until.setUTCMinutes(60, 0, 0);
  const since = new Date(until.getTime() - days * 86400000);
  return {since: since.toISOString().replace('.000', ''), until: until.toISOString().replace('.000', ''), bucket,
    groupBy: form.groupBy.value};
}

export function mount(container) {
  const form = h('form', {class: 'filters', id: 'usage-form'},
    h('label', {}, 'Range ', h('select', {name: 'days'},
      h('option', {value: '1'}, 'last day'), h('option', {value: '7'}, '7 days'),
      h('option', {value: '30', selected: true}, '30 days'), h('option', {value: '90'}, '90 days'))),
    h('label', {}, 'Per ', h('select', {name: 'bucket'},
      h('option', {value: '1d', selected: true}, 'day'), h('option', {value: '1h'}, 'hour (31 days at most)'))),
    h('label', {}, 'By ', h('select', {name: 'groupBy'},
      h('option', {value: 'user', selected: true}, 'user'), h('option', {value: 'status'}, 'status'),
      h('option', {value: 'delivery,category'}, 'delivery state and bounce category (recipients)'),
      h('option', {value: ''}, 'nothing'))),
    h('button', {type: 'submit'}, 'Show'),
    h('button', {type: 'button', class: 'secondary', id: 'usage-csv'}, 'Download CSV'));
  const chart = h('div', {class: 'chart', id: 'usage-chart'});
  const totals = h('div', {class: 'table-wrap', id: 'usage-totals'});
  const error = h('p', {class: 'error', role: 'alert', hidden: true});
  container.append(
    h('h1', {}, 'Usage'),
    h('p', {class: 'lead'}, 'Messages the gateway took per day or hour (UTC), from the ledger: exact, whatever was ',
      'settled or resolved since. By delivery state: the recipients of those messages by their tracking facts ',
      '(delivered, deferred, bounced, expired, and why), where a smarthost\'s log is followed.'),
    form, error, chart, totals);

  async function load(e) {
    e?.preventDefault();
    error.hidden = true;
    const p = params(form);
    try {
      draw(await api(`/api/v1/stats${query(p)}`), p);
    } catch (err) {
      error.textContent = `Could not read the statistics: ${err.message}`;
      error.hidden = false;
    }
  }

  function draw(answer, p) {
    // By delivery state the rows count recipients (messages and bytes are null): the series is state/category.
    const recipients = p.groupBy === 'delivery,category';
    const key = p.groupBy || null;
    const label = (r) => recipients ? r.delivery + (r.category ? ` / ${r.category}` : '')
      : key ? String(r[key] ?? '(none)') : 'messages';
    const value = (r) => recipients ? r.recipients : r.messages;
    const byKey = new Map();
    for (const r of answer.rows) {
      const k = label(r);
      byKey.set(k, (byKey.get(k) ?? 0) + value(r));
    }
    const ranked = [...byKey.entries()].sort((a, b) => b[1] - a[1]);
    const shown = ranked.slice(0, SERIES).map(([k]) => k);
    const series = (r) => {
      const k = label(r);
      return shown.includes(k) ? k : 'others';
    };
    const step = (p.bucket === '1h' ? 3600 : 86400) * 1000;
    const start = Date.parse(answer.since);
    const n = Math.round((Date.parse(answer.until) - start) / step);
    const stacks = Array.from({length: n}, () => new Map());
    for (const r of answer.rows) {
      const i = Math.round((Date.parse(r.bucket) - start) / step);
      const s = series(r);
      stacks[i].set(s, (stacks[i].get(s) ?? 0) + value(r));
    }
    const top = Math.max(1, ...stacks.map((m) => [...m.values()].reduce((a, b) => a + b, 0)));
    const bw = (W - PAD.left - PAD.right) / n;
    const y = (v) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
    const total = ranked.reduce((a, [, v]) => a + v, 0);
    const chartSvg = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'usage-title usage-desc', class: 'chart-svg'},
      svg('title', {id: 'usage-title'}, (recipients ? 'Recipients' : 'Messages') + ' per ' + (p.bucket === '1h' ? 'hour' : 'day')),
      svg('desc', {id: 'usage-desc'}, `${total} ${recipients ? 'recipients' : 'messages'} from ${answer.since} to ${answer.until}, highest ${top} in one bucket.`),
      svg('line', {x1: PAD.left, y1: y(0), x2: W - PAD.right, y2: y(0), class: 'axis'}),
      svg('text', {x: PAD.left - 6, y: y(top) + 4, class: 'tick', 'text-anchor': 'end'}, top),
      svg('text', {x: PAD.left - 6, y: y(0) + 4, class: 'tick', 'text-anchor': 'end'}, 0),
      svg('text', {x: PAD.left, y: H - 8, class: 'tick'}, answer.since.slice(0, p.bucket === '1h' ? 13 : 10)),
      svg('text', {x: W - PAD.right, y: H - 8, class: 'tick', 'text-anchor': 'end'}, answer.until.slice(0, p.bucket === '1h' ? 13 : 10)));
    const order = [...shown, 'others'];
    stacks.forEach((m, i) => {
      let base = 0;
      for (const s of order) {
        const v = m.get(s);
        if (!v) continue;
        const rect = svg('rect', {x: (PAD.left + i * bw + bw * 0.1).toFixed(1), y: y(base + v).toFixed(1), width: (bw * 0.8).toFixed(1),
          height: (y(base) - y(base + v)).toFixed(1), class: `usage-bar usage-s${Math.min(order.indexOf(s), SERIES)}`});
        rect.append(svg('title', {}, `${new Date(start + i * step).toISOString().slice(0, 16)}Z ${s}: ${v}`));
        chartSvg.append(rect);
        base += v;
      }
    });
    replace(chart, answer.rows.length === 0 ? h('p', {class: 'empty'}, recipients ? 'No tracked recipients in this range.'
      : 'No messages in this range.') : chartSvg);
    const sums = new Map();
    for (const r of answer.rows) {
      const k = key ? label(r) : 'all';
      const t = sums.get(k) ?? {messages: 0, recipients: 0, bytes: 0};
      t.messages += r.messages ?? 0; t.recipients += r.recipients; t.bytes += r.bytes ?? 0;
      sums.set(k, t);
    }
    const head = recipients ? [h('th', {scope: 'col', class: 'num'}, 'Recipients')]
      : [h('th', {scope: 'col', class: 'num'}, 'Messages'), h('th', {scope: 'col', class: 'num'}, 'Recipients'),
        h('th', {scope: 'col', class: 'num'}, 'Bytes')];
    const cells = (t) => recipients ? [h('td', {class: 'num'}, String(t.recipients))]
      : [h('td', {class: 'num'}, String(t.messages)), h('td', {class: 'num'}, String(t.recipients)), h('td', {class: 'num'}, bytes(t.bytes))];
    replace(totals, h('table', {class: 'ledger'},
      h('caption', {}, 'Totals of the range'),
      h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, recipients ? 'delivery / category' : key ?? ''), ...head)),
      h('tbody', {}, ...[...sums.entries()].sort((a, b) => (b[1].messages - a[1].messages) || (b[1].recipients - a[1].recipients))
        .map(([k, t]) => h('tr', {}, h('td', {}, k), ...cells(t))))));
  }

  /** The same request as CSV; the token goes in a header, so the file is fetched, then saved from a blob. */
  async function csv() {
    const p = params(form);
    const res = await fetch(`/api/v1/stats${query(p)}`, {cache: 'no-store',
      headers: {Accept: 'text/csv', Authorization: `Bearer ${session.token}`}});
    if (!res.ok) {
      error.textContent = `Could not read the statistics: HTTP ${res.status}`;
      error.hidden = false;
      return;
    }
    const url = URL.createObjectURL(await res.blob());
    const a = h('a', {href: url, download: `ledgerpost-usage-${p.since.slice(0, 10)}-${p.bucket}.csv`});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  form.addEventListener('submit', load);
  container.querySelector('#usage-csv').addEventListener('click', csv);
  load();
  return {unmount() {}};
}
