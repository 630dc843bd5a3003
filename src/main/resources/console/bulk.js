// Bulk resolve: every message a filter selects among those that need attention (stale PENDING, UNKNOWN),
// resolved with one outcome and note. Three steps: preview (GET /api/v1/attention with the filter: the count and
// the first rows), a typed confirmation (the operator types the count), then POST /api/v1/resolutions, which
// resolves each message through the single resolution's path and refuses when the count changed meanwhile.

import {api, ProblemError, query, session} from './api.js';
import {age, announce, h, localToIso, replace, statusBadge, timeEl, words, zone} from './dom.js';

const PREVIEW_ROWS = 10;

export function mount(container, ctx) {
  let preview = null; // {filter, matching} of the preview on screen; any change of the filter drops it

  const field = (id, label, control) => h('div', {class: 'field'}, h('label', {for: id}, label), control);
  const status = h('select', {id: 'bulk-status', name: 'status'},
    h('option', {value: 'UNKNOWN'}, 'UNKNOWN'),
    h('option', {value: 'PENDING'}, 'Stale PENDING'),
    h('option', {value: ''}, 'Both'));
  const sender = h('input', {id: 'bulk-sender', name: 'sender', type: 'text', placeholder: 'any sender', autocomplete: 'off'});
  const since = h('input', {id: 'bulk-since', name: 'since', type: 'datetime-local'});
  const until = h('input', {id: 'bulk-until', name: 'until', type: 'datetime-local'});
  const filterForm = h('form', {id: 'bulk-filter', class: 'filters', 'aria-label': 'Which messages'},
    field('bulk-status', 'Status', status),
    field('bulk-sender', 'Sender', sender),
    field('bulk-since', `Received from (${zone()})`, since),
    field('bulk-until', `Received before (${zone()})`, until),
    h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'bulk-preview'}, 'Preview')));

  const previewArea = h('div', {id: 'bulk-preview-area', 'aria-live': 'polite'});
  const outcome = h('select', {id: 'bulk-outcome', name: 'outcome'},
    h('option', {value: 'NOT_DELIVERED'}, 'Not delivered'),
    h('option', {value: 'DELIVERED'}, 'Delivered'));
  const note = h('textarea', {id: 'bulk-note', rows: 3, maxlength: 2000, required: true});
  const operator = h('input', {id: 'bulk-operator', type: 'text', maxlength: 200, required: true, value: session.operator,
    autocomplete: 'name'});
  const typed = h('input', {id: 'bulk-typed', type: 'text', inputmode: 'numeric', autocomplete: 'off', required: true,
    'aria-describedby': 'bulk-typed-hint'});
  const typedHint = h('p', {class: 'hint', id: 'bulk-typed-hint'});
  const go = h('button', {type: 'submit', id: 'bulk-resolve', class: 'danger', disabled: true}, 'Resolve');
  const problem = h('p', {class: 'error', id: 'bulk-error', role: 'alert', hidden: true});
  const resolveForm = h('form', {id: 'bulk-resolve-form', class: 'narrow', hidden: true, 'aria-labelledby': 'bulk-resolve-title'},
    h('h2', {id: 'bulk-resolve-title'}, 'Resolve them'),
    field('bulk-outcome', 'What happened to them', outcome),
    field('bulk-note', 'Note (recorded on every message; required)', note),
    field('bulk-operator', 'Operator', operator),
    h('div', {class: 'field'}, h('label', {for: 'bulk-typed'}, 'Confirm: type the number of messages'), typedHint, typed),
    problem,
    h('div', {class: 'actions'}, go));
  const result = h('div', {id: 'bulk-result', role: 'status'});

  container.append(
    h('h1', {}, 'Bulk resolve'),
    h('p', {class: 'lead'}, 'Resolve many messages at once, for example every UNKNOWN message of a smarthost outage. ',
      'Each one is resolved on its own, with its own resolution record and event, as if resolved from its page; one that ',
      'changed meanwhile is left alone and listed. At most 1000 per run: narrow the time range for more.'),
    filterForm, previewArea, resolveForm, result);

  const filter = () => ({
    status: status.value,
    sender: sender.value.trim(),
    since: localToIso(since.value),
    until: localToIso(until.value),
  });
  const sameFilter = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  function dropPreview() {
    if (!preview) return;
    preview = null;
    previewArea.replaceChildren(h('p', {class: 'notice'}, 'The filter changed: preview again.'));
    resolveForm.hidden = true;
  }
  for (const el of [status, sender, since, until]) el.addEventListener('input', dropPreview);

  function canGo() {
    go.disabled = !preview || typed.value.trim() !== String(preview.matching) || !note.value.trim() || !operator.value.trim();
  }
  for (const el of [typed, note, operator]) el.addEventListener('input', canGo);

  filterForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    result.replaceChildren();
    const f = filter();
    try {
      const a = await api(`/api/v1/attention${query({...f, limit: PREVIEW_ROWS})}`);
      preview = {filter: f, matching: a.matching};
      showPreview(a);
    } catch (err) {
      preview = null;
      resolveForm.hidden = true;
      previewArea.replaceChildren(h('p', {class: 'error', role: 'alert'}, `Preview failed: ${err.message}`));
    }
  });

  function showPreview(a) {
    const n = a.matching;
    if (n === 0) {
      resolveForm.hidden = true;
      previewArea.replaceChildren(h('p', {class: 'empty', id: 'bulk-count', 'data-count': '0'}, 'No message matches.'));
      return;
    }
    replace(previewArea,
      h('p', {id: 'bulk-count', 'data-count': String(n)}, h('strong', {}, `${n} message${n === 1 ? '' : 's'}`),
        ` match${n === 1 ? 'es' : ''}`, n > a.items.length ? `; the oldest ${a.items.length}:` : ':'),
      h('div', {class: 'table-wrap'}, h('table', {class: 'ledger', id: 'bulk-table'},
        h('caption', {class: 'visually-hidden'}, 'The first messages the filter selects'),
        h('thead', {}, h('tr', {}, h('th', {scope: 'col'}, 'Message'), h('th', {scope: 'col'}, 'Status'),
          h('th', {scope: 'col'}, 'Age'), h('th', {scope: 'col'}, 'From'), h('th', {scope: 'col', class: 'wide'}, 'Received'))),
        h('tbody', {}, a.items.map((r) => h('tr', {'data-id': r.id},
          h('td', {class: 'mono'}, h('a', {href: `#/message/${r.id}`}, r.messageId ?? r.id)),
          h('td', {}, statusBadge(r.status)), h('td', {}, age(r.ageSeconds)), h('td', {class: 'addr'}, r.mailFrom),
          h('td', {class: 'wide'}, timeEl(r.receivedAt))))))));
    if (n > 1000) {
      resolveForm.hidden = true;
      previewArea.append(h('p', {class: 'error', role: 'alert'}, 'More than 1000: narrow the time range and resolve them in parts.'));
      return;
    }
    replace(typedHint, `Type ${n} to confirm that you resolve all ${n}.`);
    replace(go, `Resolve ${n} message${n === 1 ? '' : 's'}`);
    typed.value = '';
    problem.hidden = true;
    resolveForm.hidden = false;
    canGo();
  }

  resolveForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    canGo();
    if (go.disabled || !preview) return;
    if (!sameFilter(preview.filter, filter())) return dropPreview();
    const f = preview.filter;
    const body = {
      filter: Object.fromEntries(Object.entries(f).filter(([, v]) => v)),
      expectedCount: preview.matching,
      outcome: outcome.value,
      note: note.value.trim(),
      operator: operator.value.trim(),
    };
    go.disabled = true;
    problem.hidden = true;
    try {
      const r = await api('/api/v1/resolutions', {method: 'POST', body});
      session.setOperator(body.operator);
      preview = null;
      resolveForm.hidden = true;
      previewArea.replaceChildren();
      showResult(r);
      ctx.refreshBadge();
    } catch (err) {
      if (err instanceof ProblemError && err.status === 409) {
        problem.textContent = `Nothing was resolved: the filter now matches ${err.problem?.matching} messages, not `
          + `${preview.matching}. Preview again.`;
      } else {
        problem.textContent = `Nothing was resolved: ${err.message}`;
      }
      problem.hidden = false;
      canGo();
    }
  });

  function showResult(r) {
    const left = r.items.filter((i) => i.result !== 'RESOLVED');
    replace(result,
      h('p', {class: r.resolved === r.matched ? 'success' : 'notice', id: 'bulk-summary', 'data-resolved': String(r.resolved)},
        `Resolved ${r.resolved} of ${r.matched}`, r.conflicts ? `; ${r.conflicts} changed meanwhile and were left alone` : '',
        r.failed ? `; ${r.failed} failed (the ledger did not answer): preview and run again` : '', '.'),
      left.length === 0 ? '' : h('ul', {class: 'replies'}, left.map((i) => h('li', {},
        h('a', {href: `#/message/${i.id}`, class: 'mono'}, i.id), `: ${i.result === 'CONFLICT' ? 'now' : 'still'} ${words(i.status)}`,
        i.detail ? ` (${i.detail})` : ''))));
    announce(result.textContent);
  }

  return {unmount() {}};
}
