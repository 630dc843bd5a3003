// Who is limited (docs/design.md §8.9 "Quotas"): every user with an entry in the tenants file or a count today, its
// usage against its hourly and daily quotas and when each window resets (GET /api/v1/tenants), the limited ones
// first. Read-only: an operator raises a quota in the tenants file and sends SIGHUP to every node. Refreshed every
// 10 s while the page is open.

import {api} from './api.js';
import {h, replace, timeEl} from './dom.js';

const REFRESH_MS = 10_000;

/** "12 / 50" (or "12 / no limit") and, while used up, when it resets. */
function usage(w) {
  if (!w) return '';
  const text = `${w.used} / ${w.limit === 0 ? 'no limit' : w.limit}`;
  return w.limited ? h('span', {class: 'limited'}, text, ' until ', timeEl(w.resetsAt)) : text;
}

export function mount(container) {
  const body = h('tbody', {id: 'quotas-rows'});
  const problem = h('p', {class: 'error', id: 'quotas-error', role: 'alert', hidden: true});
  const summary = h('p', {id: 'quotas-summary', role: 'status'});
  container.append(
    h('h1', {}, 'Quotas'),
    h('p', {class: 'lead'}, 'Messages each user sent this hour and today against its quotas, counted on every node. ',
      'A limited user hears 451 4.7.1 (SMTP) or 429 (HTTP) until its window resets. To raise a quota, edit the ',
      'tenants file and send SIGHUP to every gateway.'),
    summary, problem,
    h('table', {class: 'rows', id: 'quotas-table'},
      h('thead', {}, h('tr', {},
        h('th', {scope: 'col'}, 'User'),
        h('th', {scope: 'col'}, 'This hour'),
        h('th', {scope: 'col'}, 'Today'),
        h('th', {scope: 'col'}, 'Refused (hour / day)'),
        h('th', {scope: 'col'}, 'Entry'))),
      body));

  async function load() {
    try {
      const answer = await api('/api/v1/tenants');
      const users = [...answer.users].sort((a, b) => Number(b.limited) - Number(a.limited) || a.user.localeCompare(b.user));
      replace(body, ...users.map((u) => h('tr', {'data-user': u.user, class: u.limited ? 'limited' : ''},
        h('td', {class: 'mono'}, u.user),
        h('td', {}, usage(u.quotas.messagesPerHour)),
        h('td', {}, usage(u.quotas.messagesPerDay)),
        h('td', {}, `${u.quotas.messagesPerHour.refused} / ${u.quotas.messagesPerDay.refused}`),
        h('td', {}, u.ownEntry ? 'own' : 'defaults'))));
      const limited = users.filter((u) => u.limited).length;
      summary.textContent = limited === 0 ? 'Nobody is limited now.' : `${limited} user(s) limited now.`;
      problem.hidden = true;
    } catch (e) {
      problem.textContent = `The usage could not be read: ${e.message}`;
      problem.hidden = false;
    }
  }

  load();
  const timer = setInterval(load, REFRESH_MS);
  return {unmount() { clearInterval(timer); }};
}
