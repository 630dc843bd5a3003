// Bounces (docs/design.md §8.13): the recipients the smarthost's own record says bounced, newest message first. The
// messages come from the list (GET /api/v1/messages?delivery=bounced&category=..., keyset pages by `next`); each one's
// bounced recipients, with their category, code, remote host and reply, from its detail (GET /api/v1/messages/{id},
// `delivery`). Replies are the remote servers' words, addresses the senders': they go in as text only (dom.js), never
// as markup. Not refreshed on a timer: an operator reading a page does not want the rows to move.

import {api, query} from './api.js';
import {h, replace, timeEl} from './dom.js';

const PAGE = 20;
const CATEGORIES = ['invalid_recipient', 'mailbox_full', 'spam_block', 'policy', 'auth_failure', 'dns', 'connection', 'other'];

export function mount(container) {
  const category = h('select', {id: 'bounces-category'},
    h('option', {value: ''}, 'any'), CATEGORIES.map((c) => h('option', {value: c}, c)));
  const filterForm = h('form', {id: 'bounces-filter', class: 'filters', 'aria-label': 'Which bounces'},
    h('div', {class: 'field'}, h('label', {for: 'bounces-category'}, 'Category'), category),
    h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'bounces-apply'}, 'Show')));
  const body = h('tbody', {id: 'bounces-rows'});
  const empty = h('p', {class: 'empty', id: 'bounces-empty', hidden: true}, 'No bounce.');
  const error = h('p', {class: 'error', id: 'bounces-error', role: 'alert', hidden: true});
  const more = h('button', {type: 'button', class: 'secondary', id: 'bounces-more', hidden: true}, 'Older');

  container.append(
    h('h1', {}, 'Bounces'),
    h('p', {class: 'lead'}, 'Recipients the smarthost\'s own record says bounced after it took the message (its 250), ',
      'with the bounce classifier\'s category and the remote server\'s reply. The message\'s status stays what our hop ',
      'did. A bounce of a category in suppression.bounceCategories also put the address on the suppression list.'),
    filterForm, error,
    h('div', {class: 'table-wrap'}, h('table', {class: 'rows', id: 'bounces-table'},
      h('caption', {class: 'visually-hidden'}, 'Bounced recipients, newest message first'),
      h('thead', {}, h('tr', {},
        ['Bounced', 'Recipient', 'Category', 'Code', 'Remote host', 'Reply', 'Message']
          .map((t) => h('th', {scope: 'col'}, t)))),
      body)),
    empty,
    h('div', {class: 'pager'}, more));

  let chosen = '';
  let next = null;
  let generation = 0; // a newer read wins: an older one's rows are dropped

  function row(m, r, f) {
    return h('tr', {'data-id': `${m.id}:${r.address}:${f.at}`, class: 'bounce'},
      h('td', {}, timeEl(f.at)),
      h('td', {class: 'addr mono bounce-recipient'}, r.address),
      h('td', {class: 'bounce-category'}, f.category ?? '–', f.rule ? [' ', h('span', {class: 'hint'}, `(${f.rule})`)] : ''),
      h('td', {class: 'mono bounce-dsn'}, f.dsn ?? '–'),
      h('td', {class: 'mono bounce-host'}, f.remoteHost ?? '–'),
      h('td', {class: 'mono bounce-reply'}, f.reply ?? '–'),
      h('td', {class: 'mono'}, h('a', {href: `#/message/${encodeURIComponent(m.id)}`, class: 'bounce-message'}, m.id)));
  }

  /** The bounced facts of one message's detail that the filter asked for, newest first. */
  function rowsOf(m) {
    const out = [];
    for (const r of m.recipients ?? []) {
      for (const f of r.delivery ?? []) {
        if (f.state === 'bounced' && (!chosen || f.category === chosen)) out.push(row(m, r, f));
      }
    }
    return out.reverse();
  }

  async function load(append) {
    const mine = ++generation;
    try {
      const page = await api(`/api/v1/messages${query({delivery: 'bounced', category: chosen, limit: PAGE,
        cursor: append ? next : ''})}`);
      const details = await Promise.all(page.items.map((m) => api(`/api/v1/messages/${encodeURIComponent(m.id)}`)));
      if (mine !== generation) return;
      error.hidden = true;
      const rows = details.flatMap(rowsOf);
      if (append) body.append(...rows);
      else replace(body, rows);
      empty.hidden = body.children.length > 0;
      next = page.next ?? null;
      more.hidden = !next;
    } catch (e) {
      if (mine !== generation) return;
      error.hidden = false;
      error.textContent = `The bounces could not be read: ${e.message}`;
    }
  }

  filterForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    chosen = category.value;
    next = null;
    load(false);
  });
  more.addEventListener('click', () => load(true));

  load(false);
  return {unmount() { generation++; }};
}
