// The live ledger: the newest messages matching the filters, kept current by the hub's events; older pages by
// keyset paging (the API's opaque `next` cursor). Events are applied as they come (a new PENDING message is shown
// from its event at once, a settle changes its row in place); the page is also read again at most once a second
// after events it cannot place alone (recipient filter, sizes, a settle that now matches a status filter).
// Each row keeps the highest version seen, from the API or an event, so a read that raced an event never
// turns a row back.

import {api, query} from './api.js';
import {append, bytes, h, isoToLocal, localToIso, replace, statusBadge, syncRows, tagList, throttle, timeEl, zone} from './dom.js';

const PAGE = 50;
const KNOWN_MAX = 2000;
const STATUSES = ['PENDING', 'SENT', 'FAILED_TEMP', 'FAILED_PERM', 'UNKNOWN', 'RESOLVED_DELIVERED', 'RESOLVED_NOT_DELIVERED',
  'CAPTURED'];

export function mount(container, ctx) {
  const filters = Object.fromEntries(new URLSearchParams(ctx.param ?? ''));
  const f = {
    status: filters.status ?? '', sender: filters.sender ?? '', recipient: filters.recipient ?? '',
    since: filters.since ?? '', until: filters.until ?? '', tag: filters.tag ?? '',
  };
  let rows = new Map(); // id -> row as the API shows it, plus `touched` (performance.now() of the last event)
  const known = new Map(); // id -> {status, version, settledAt}: the newest each event said, for merging reads
  let next = null;
  const cursors = []; // [] on the first page; the cursor of each older page shown
  let loadError = null;

  const form = filterForm(f);
  const filterBox = h('details', {class: 'filter-box', open: hasFilter() || matchMedia('(min-width: 701px)').matches},
    h('summary', {}, hasFilter() ? 'Filters (on)' : 'Filters'), form);
  const tbody = h('tbody');
  const table = h('table', {class: 'ledger', id: 'ledger-table'},
    h('caption', {class: 'visually-hidden'}, 'Messages, newest first'),
    h('thead', {}, h('tr', {},
      h('th', {scope: 'col'}, 'Received'), h('th', {scope: 'col'}, 'Status'), h('th', {scope: 'col'}, 'From'),
      h('th', {scope: 'col'}, 'To'),
      // No Subject column: the ledger keeps no header but the Message-ID (bodies are not stored).
      h('th', {scope: 'col', class: 'wide'}, 'Message-ID'),
      h('th', {scope: 'col', class: 'num wide'}, 'Size'), h('th', {scope: 'col', class: 'wide'}, 'Intake'))),
    tbody);
  const empty = h('p', {class: 'empty', hidden: true}, 'No messages match.');
  const where = h('p', {class: 'where', id: 'ledger-where'});
  const newer = h('button', {type: 'button', class: 'secondary', id: 'newer'}, '← Newer');
  const older = h('button', {type: 'button', class: 'secondary', id: 'older'}, 'Older →');
  const error = h('p', {class: 'error', role: 'alert', hidden: true});
  container.append(
    h('h1', {}, 'Live ledger'),
    filterBox,
    where,
    error,
    h('div', {class: 'table-wrap'}, table),
    empty,
    h('nav', {class: 'pager', 'aria-label': 'Pages'}, newer, older));

  newer.addEventListener('click', () => {
    cursors.pop();
    load();
  });
  older.addEventListener('click', () => {
    if (!next) return;
    cursors.push(next);
    load();
  });

  function statusMatches(r) {
    return !f.status || r.status === f.status;
  }

  /** Whether a new message's pending event alone tells that it matches (no recipient filter: the event lacks them). */
  function pendingMatches(d, at) {
    if (f.recipient) return null;
    if (f.status && f.status !== 'PENDING') return false;
    if (f.sender && (d.mailFrom ?? '').toLowerCase() !== f.sender.toLowerCase()) return false;
    // Events carry the message's tags when it has any (docs/data-model.md §5.17).
    if (f.tag && !(d.tags ?? []).includes(f.tag)) return false;
    const t = Date.parse(at);
    if (f.since && t < Date.parse(f.since)) return false;
    if (f.until && t >= Date.parse(f.until)) return false;
    return true;
  }

  async function load() {
    const cursor = cursors.at(-1);
    const started = performance.now();
    try {
      const page = await api(`/api/v1/messages${query({...f, limit: PAGE, cursor})}`);
      loadError = null;
      merge(page.items, started);
      next = page.next;
    } catch (e) {
      loadError = e.message;
    }
    render();
  }

  const refetch = throttle(() => {
    if (cursors.length === 0) load();
  }, 1000);

  function merge(items, started) {
    const fresh = new Map();
    for (const item of items) {
      const k = known.get(item.id);
      if (k && k.version > item.version) {
        item.status = k.status;
        item.version = k.version;
        item.settledAt = item.settledAt ?? k.settledAt;
      }
      if (statusMatches(item)) fresh.set(item.id, item);
    }
    if (cursors.length === 0) {
      // Rows an event brought while this read was on its way are newer than what it read.
      for (const [id, r] of rows) {
        if (!fresh.has(id) && r.touched > started) fresh.set(id, r);
      }
    }
    rows = fresh;
  }

  function onEvent(e) {
    const frame = e.detail;
    const d = frame.data ?? {};
    const id = frame.messageId;
    if (typeof d.version !== 'number' || !d.status) return;
    const settledAt = d.status === 'PENDING' ? null : frame.at;
    const prev = known.get(id);
    if (!prev || d.version > prev.version) {
      known.delete(id);
      known.set(id, {status: d.status, version: d.version, settledAt});
      if (known.size > KNOWN_MAX) known.delete(known.keys().next().value);
    }
    const row = rows.get(id);
    if (row) {
      if (d.version > row.version) {
        Object.assign(row, {status: d.status, version: d.version, touched: performance.now(), flash: true});
        row.settledAt = row.settledAt ?? settledAt;
        if (!statusMatches(row)) {
          rows.delete(id);
          refetch();
        }
        render();
      }
      return;
    }
    if (cursors.length > 0) return; // an older page: new messages wait for "Newer"
    if (frame.event === 'message.pending') {
      const matches = pendingMatches(d, frame.at);
      if (matches) {
        rows.set(id, {
          id, status: 'PENDING', version: d.version, intake: d.intake, mailFrom: d.mailFrom, messageId: d.messageId,
          tags: d.tags ?? [],
          receivedAt: frame.at, settledAt: null, size: null, recipientCount: null, firstRecipient: null,
          touched: performance.now(), flash: true,
        });
        render();
      }
      if (matches !== false) refetch(); // sizes and recipients, or whether it matches the recipient filter
    } else if (f.status && d.status === f.status) {
      refetch(); // a message that now matches the status filter
    }
  }

  function render() {
    error.hidden = !loadError;
    error.textContent = loadError ? `The ledger could not be read: ${loadError}` : '';
    const sorted = [...rows.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    syncRows(tbody, sorted, {
      key: (r) => r.id,
      signature: (r) => `${r.version}|${r.recipientCount !== null}|${r.receivedAt}`,
      build: (r) => h('tr', {}, h('td', {}, h('a', {href: `#/message/${r.id}`}, timeEl(r.receivedAt)))),
      update: (tr, r) => {
        tr.dataset.version = String(r.version);
        tr.dataset.status = r.status;
        tr.dataset.filled = String(r.recipientCount !== null); // size and recipients come with the next read of the page
        tr.firstChild.firstChild.replaceChildren(timeEl(r.receivedAt));
        append(tr, [
          h('td', {}, statusBadge(r.status)),
          h('td', {class: 'addr'}, r.mailFrom === '' ? '<>' : r.mailFrom ?? ''),
          h('td', {class: 'addr to'}, to(r)),
          h('td', {class: 'wide mono'}, r.messageId ?? '', tagList(r.tags)),
          h('td', {class: 'num wide'}, r.size === null ? '…' : bytes(r.size)),
          h('td', {class: 'wide'}, r.intake ?? '')]);
      },
    });
    for (const r of sorted) {
      if (r.flash) {
        r.flash = false;
        const tr = tbody.querySelector(`tr[data-id="${r.id}"]`);
        tr.classList.remove('fresh');
        void tr.offsetWidth; // restart the highlight
        tr.classList.add('fresh');
        clearTimeout(tr.freshTimer);
        tr.freshTimer = setTimeout(() => tr.classList.remove('fresh'), 2500);
      }
    }
    empty.hidden = sorted.length > 0 || !!loadError;
    const first = cursors.length === 0;
    newer.disabled = first;
    older.disabled = !next;
    replace(where, first
      ? `Newest first${hasFilter() ? ', filtered' : ''}: new messages appear as they are received.`
      : `Page ${cursors.length + 1} of the history${hasFilter() ? ', filtered' : ''}: new messages wait until you go back to the newest.`);
    where.dataset.page = String(cursors.length + 1);
  }

  function hasFilter() {
    return Object.values(f).some((v) => v);
  }

  function onResync() {
    cursors.length = 0;
    load();
  }

  const view = ctx.socket.follow(onEvent, onResync, refetch.cancel);
  load();
  return view;
}

/** The To column: the first recipient, and how many more (the list carries one address and the count). */
function to(r) {
  if (r.recipientCount === null || r.recipientCount === undefined) return '…';
  if (!r.firstRecipient) return '';
  return r.recipientCount > 1 ? `${r.firstRecipient} +${r.recipientCount - 1}` : r.firstRecipient;
}

function filterForm(f) {
  const status = h('select', {id: 'filter-status', name: 'status'},
    h('option', {value: ''}, 'Any status'),
    STATUSES.map((s) => h('option', {value: s, selected: f.status === s}, s)));
  const input = (id, name, label, type, value, extra = {}) => h('div', {class: 'field'},
    h('label', {for: id}, label), h('input', {id, name, type, value, ...extra}));
  const form = h('form', {class: 'filters', id: 'filters', 'aria-label': 'Filter the ledger'},
    h('div', {class: 'field'}, h('label', {for: 'filter-status'}, 'Status'), status),
    input('filter-sender', 'sender', 'Sender', 'text', f.sender, {placeholder: 'a@example.com', autocomplete: 'off'}),
    input('filter-recipient', 'recipient', 'Recipient', 'text', f.recipient, {placeholder: 'b@example.net', autocomplete: 'off'}),
    input('filter-tag', 'tag', 'Tag', 'text', f.tag, {placeholder: 'billing', autocomplete: 'off'}),
    input('filter-since', 'since', `Received from (${zone()})`, 'datetime-local', isoToLocal(f.since)),
    input('filter-until', 'until', `Received before (${zone()})`, 'datetime-local', isoToLocal(f.until)),
    h('div', {class: 'actions'},
      h('button', {type: 'submit'}, 'Apply'),
      h('button', {type: 'button', class: 'secondary', id: 'filter-clear'}, 'Clear')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const q = new URLSearchParams();
    for (const k of ['status', 'sender', 'recipient', 'tag']) {
      const v = String(data.get(k) ?? '').trim();
      if (v) q.set(k, v);
    }
    for (const k of ['since', 'until']) {
      const v = localToIso(String(data.get(k) ?? ''));
      if (v) q.set(k, v);
    }
    const s = q.toString();
    location.hash = s ? `#/live?${s}` : '#/live';
  });
  form.querySelector('#filter-clear').addEventListener('click', () => {
    location.hash = '#/live';
  });
  return form;
}
