// Small DOM and formatting helpers. Text always goes in as text nodes (never innerHTML): nothing a sender or an
// operator typed can become markup.

/** h('a', {href: '#/live', class: 'x'}, 'text', child...) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  return append(el, children);
}

/** A status as a badge: its name in words (never color alone), its class for color. */
export function statusBadge(status) {
  return h('span', {class: `status status-${String(status).toLowerCase()}`}, words(status));
}

const STATUS_WORDS = {
  PENDING: 'Pending', SENT: 'Sent', FAILED_TEMP: 'Failed (temporary)', FAILED_PERM: 'Failed (permanent)',
  UNKNOWN: 'Unknown', RESOLVED_DELIVERED: 'Resolved: delivered', RESOLVED_NOT_DELIVERED: 'Resolved: not delivered',
  CAPTURED: 'Captured (not relayed)',
  ACCEPTED: 'Accepted', REJECTED: 'Rejected', SUPERSEDED: 'Superseded (the message moved on)',
};

export function words(status) {
  return STATUS_WORDS[status] ?? String(status);
}

/** Local time as 2026-11-30 10:00:05: unambiguous in every locale, sortable by eye. */
export function time(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * The browser's offset from UTC at an instant (now by default) as a label: UTC, UTC+1, UTC+5:30, UTC-3. An offset,
 * not a zone's name: the names browsers give (CET, GMT+1) differ by locale, and an operator comparing with a log
 * line (which carries its offset) wants the number.
 */
export function zone(at = new Date()) {
  const east = -at.getTimezoneOffset();
  if (east === 0) return 'UTC';
  const abs = Math.abs(east);
  return `UTC${east > 0 ? '+' : '-'}${Math.floor(abs / 60)}${abs % 60 ? `:${String(abs % 60).padStart(2, '0')}` : ''}`;
}

/**
 * A <time> element: local time with its offset from UTC shown (a time without one is ambiguous between an operator's
 * browser and the gateway's logs), the instant in datetime (machines) and title (people).
 */
export function timeEl(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return h('time', {datetime: iso, title: iso}, time(iso),
    Number.isNaN(d.getTime()) ? '' : [' ', h('span', {class: 'tz'}, zone(d))]);
}

export function age(seconds) {
  if (seconds === null || seconds === undefined) return '';
  const s = Math.max(0, Math.round(seconds));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `${(s / 3600).toFixed(1)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function bytes(n) {
  if (n === null || n === undefined) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A datetime-local input's value (local time) as an ISO instant, or '' when empty. */
export function localToIso(value) {
  if (!value) return '';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

/** An ISO instant as a datetime-local input's value. */
export function isoToLocal(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * Runs fn at most once per `ms`: the first call at once, calls during the wait folded into one at its end.
 * Returns the throttled function; `.cancel()` drops a pending call.
 */
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  const run = () => {
    timer = null;
    last = Date.now();
    fn();
  };
  const throttled = () => {
    if (timer) return;
    const wait = last + ms - Date.now();
    if (wait <= 0) run();
    else timer = setTimeout(run, wait);
  };
  throttled.cancel = () => {
    clearTimeout(timer);
    timer = null;
  };
  return throttled;
}

/** Says something to screen readers through the page's polite live region. */
export function announce(text) {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.textContent = '';
  // A new text node in a later task, so that the same words said twice are said twice.
  setTimeout(() => { region.textContent = text; }, 50);
}

/**
 * Keeps tbody's rows in the order of `items`, one <tr> per key, without rebuilding rows that stay: a row the
 * keyboard is on keeps its focus while the list updates around it. build(item) makes a new row (its first cell
 * the link, never rebuilt); update(tr, item) rewrites the other cells when signature(item) changed.
 */
export function syncRows(tbody, items, {key, signature, build, update}) {
  const wanted = new Set(items.map(key));
  for (const tr of [...tbody.children]) {
    if (!wanted.has(tr.dataset.id)) tr.remove();
  }
  const byId = new Map([...tbody.children].map((tr) => [tr.dataset.id, tr]));
  items.forEach((item, i) => {
    let tr = byId.get(key(item));
    if (!tr) {
      tr = build(item);
      tr.dataset.id = key(item);
    }
    const sig = signature(item);
    if (tr.dataset.sig !== sig) {
      tr.dataset.sig = sig;
      while (tr.children.length > 1) tr.lastChild.remove();
      update(tr, item);
    }
    if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] ?? null);
  });
}

/** A message's tags (docs/data-model.md §5.17) as small labels; none: nothing. */
export function tagList(tags) {
  if (!Array.isArray(tags) || tags.length === 0) return '';
  return h('span', {class: 'tags'}, tags.map((t) => h('span', {class: 'tag'}, t)));
}
