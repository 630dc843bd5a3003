// Needs attention: the stale PENDING and the UNKNOWN messages, oldest first, with their age; the gauges
// exactly as /metrics reports them; the last hour of the pending gauges as a chart. Read again on events
// (at most once a second) and every 5 s, because ages grow and the stale watch raises rows as time passes.

import {api} from './api.js';
import {age, append, h, replace, statusBadge, syncRows, throttle, timeEl} from './dom.js';
import {pendingChart} from './chart.js';

const EVERY_MS = 5000;

export function mount(container, ctx) {
  const cards = h('div', {class: 'cards', id: 'gauges', role: 'group', 'aria-label': 'The gauges, as /metrics reports them'});
  const chart = h('div', {class: 'chart', id: 'pending-chart'});
  const tbody = h('tbody');
  const table = h('table', {class: 'ledger', id: 'attention-table'},
    h('caption', {class: 'visually-hidden'}, 'Messages that need an operator, oldest first'),
    h('thead', {}, h('tr', {},
      h('th', {scope: 'col'}, 'Message'), h('th', {scope: 'col'}, 'Status'), h('th', {scope: 'col'}, 'Age'),
      h('th', {scope: 'col'}, 'From'), h('th', {scope: 'col', class: 'wide'}, 'Received'),
      h('th', {scope: 'col', class: 'num wide', title: 'How often the stale watch raised it. It raises stale PENDING rows: '
        + 'an UNKNOWN row shows 0 unless it was raised while it was PENDING (its alarm is the UNKNOWN gauge).'}, 'Raised'))),
    tbody);
  const summary = h('p', {class: 'where', id: 'attention-summary'});
  const empty = h('p', {class: 'empty', hidden: true}, 'Nothing needs attention: no stale PENDING and no UNKNOWN message.');
  const error = h('p', {class: 'error', role: 'alert', hidden: true});
  container.append(
    h('h1', {}, 'Needs attention'),
    h('p', {class: 'lead'}, 'PENDING messages older than the stale threshold that nobody is settling, and UNKNOWN ones ',
      '(the downstream\'s reply to the final dot was lost). Only an operator can close them: open one to see its story ',
      'and resolve it, or resolve many at once with ', h('a', {href: '#/bulk'}, 'bulk resolve'), '.'),
    cards,
    error,
    summary,
    h('div', {class: 'table-wrap'}, table),
    empty,
    h('h2', {}, 'Pending, the last hour'),
    chart);

  async function load() {
    try {
      const [a, history] = await Promise.all([api('/api/v1/attention?limit=500'), api('/api/v1/attention/history')]);
      error.hidden = true;
      ctx.showBadge(a.gauges);
      showCards(a);
      showRows(a);
      pendingChart(chart, history, a.thresholdSeconds);
    } catch (e) {
      error.hidden = false;
      error.textContent = `Could not read what needs attention: ${e.message}`;
    }
  }

  function showCards(a) {
    const g = a.gauges;
    const card = (id, label, value, note) => h('div', {class: 'card', id},
      h('div', {class: 'card-value', 'data-value': value}, String(value)), h('div', {class: 'card-label'}, label),
      note ? h('div', {class: 'card-note'}, note) : '');
    replace(cards,
      card('gauge-stale', 'Stale PENDING', g.stale, `older than ${age(a.thresholdSeconds)}`),
      card('gauge-unknown', 'UNKNOWN', g.unknown, 'outcome lost'),
      card('gauge-pending', 'PENDING, all', g.pending, 'in flight or stale'),
      card('gauge-oldest', 'Oldest PENDING', g.pending ? age(g.oldestPendingAgeSeconds) : '–', null));
  }

  function showRows(a) {
    syncRows(tbody, a.items, {
      key: (r) => r.id,
      signature: (r) => `${r.version}|${r.ageSeconds}|${r.staleRaises}|${r.clientsWaiting}`,
      build: (r) => h('tr', {},
        h('td', {class: 'mono'}, h('a', {href: `#/message/${r.id}`}, r.messageId ?? r.id))),
      update: (tr, r) => {
        tr.dataset.status = r.status;
        append(tr, [
          // A client retry held with 451 4.4.2 waits on this row's resolution (docs/contract.md §1.13).
          h('td', {}, statusBadge(r.status), r.clientsWaiting > 0 ? h('span', {class: 'waiting',
            title: 'client retries held (451 4.4.2) until this row is resolved'},
            ` ${r.clientsWaiting} client${r.clientsWaiting === 1 ? '' : 's'} waiting`) : ''),
          h('td', {class: 'age'}, age(r.ageSeconds)),
          h('td', {class: 'addr'}, r.mailFrom === '' ? '<>' : r.mailFrom),
          h('td', {class: 'wide'}, timeEl(r.receivedAt)),
          h('td', {class: 'num wide'}, String(r.staleRaises ?? 0))]);
      },
    });
    empty.hidden = a.items.length > 0;
    summary.hidden = a.items.length === 0;
    summary.textContent = a.matching > a.items.length
      ? `The oldest ${a.items.length} of ${a.matching}, oldest first.`
      : `${a.matching} message${a.matching === 1 ? '' : 's'}, oldest first.`;
  }

  const refresh = throttle(load, 1000);
  const timer = setInterval(refresh, EVERY_MS);
  const view = ctx.socket.follow(refresh, refresh, () => clearInterval(timer), refresh.cancel);
  load();
  return view;
}
