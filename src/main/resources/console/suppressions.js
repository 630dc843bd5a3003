// The suppression list (docs/design.md §8.8): recipients the gateway refuses without asking the smarthost. Lists the
// entries a page at a time, by address and scope as GET /api/v1/suppressions filters them; adds one (POST), removes one
// (DELETE by id), and imports a CSV file of address,scope,reason lines (POST /api/v1/suppressions/import, all or none).
// Each change names the signed-in operator (X-Operator). Addresses, reasons and replies come from senders and from the
// smarthost: they go in as text only (dom.js), never as markup. Not refreshed on a timer: the list changes when an
// operator or the refusals' feed changes it, and an operator reading a page does not want the rows to move.

import {api, query, session} from './api.js';
import {announce, h, replace, timeEl} from './dom.js';

const PAGE = 50;

/**
 * The signed-in operator as an X-Operator header, for a name a header carries unchanged (printable ASCII: fetch refuses
 * beyond Latin-1 and the gateway reads no charset); another is left out, and a removal is then recorded as "admin". An
 * add sends the name in its body instead, where any name goes.
 */
function operatorHeader() {
  return /^[\x20-\x7e]+$/.test(session.operator) ? {'X-Operator': session.operator} : {};
}

const SOURCE_WORDS = {operator: 'Operator', refusal: 'Smarthost refusals', bounce: 'Bounce'};

export function mount(container) {
  const field = (id, label, control) => h('div', {class: 'field'}, h('label', {for: id}, label), control);
  const filterAddress = h('input', {id: 'suppressions-filter-address', type: 'text', maxlength: 320, spellcheck: 'false',
    autocomplete: 'off', placeholder: 'any'});
  const filterScope = h('input', {id: 'suppressions-filter-scope', type: 'text', maxlength: 210, spellcheck: 'false',
    autocomplete: 'off', placeholder: 'any (global, user:<name>)'});
  const filterForm = h('form', {id: 'suppressions-filter', class: 'filters', 'aria-label': 'Which entries'},
    field('suppressions-filter-address', 'Address', filterAddress),
    field('suppressions-filter-scope', 'Scope', filterScope),
    h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'suppressions-filter-apply'}, 'Show')));

  const body = h('tbody', {id: 'suppressions-rows'});
  const empty = h('p', {class: 'empty', id: 'suppressions-empty', hidden: true}, 'No entry.');
  const error = h('p', {class: 'error', id: 'suppressions-error', role: 'alert', hidden: true});
  const done = h('p', {class: 'success', id: 'suppressions-done', role: 'status', hidden: true});
  const where = h('p', {class: 'where', id: 'suppressions-where'});
  const previous = h('button', {type: 'button', class: 'secondary', id: 'suppressions-previous', disabled: true}, 'Previous');
  const next = h('button', {type: 'button', class: 'secondary', id: 'suppressions-next', disabled: true}, 'Next');

  const addAddress = h('input', {id: 'suppression-address', type: 'text', maxlength: 320, required: true,
    spellcheck: 'false', autocomplete: 'off'});
  const addScope = h('input', {id: 'suppression-scope', type: 'text', maxlength: 210, value: 'global', required: true,
    spellcheck: 'false', autocomplete: 'off'});
  const addReason = h('input', {id: 'suppression-reason', type: 'text', maxlength: 1000, required: true});
  const addForm = h('form', {id: 'suppression-add', class: 'filters', 'aria-label': 'Add an entry'},
    field('suppression-address', 'Address', addAddress),
    field('suppression-scope', 'Scope', addScope),
    field('suppression-reason', 'Reason (the refused sender reads it)', addReason),
    h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'suppression-add-button'}, 'Add')));

  const importFile = h('input', {id: 'suppressions-import-file', type: 'file', accept: '.csv,text/csv,text/plain'});
  const importForm = h('form', {id: 'suppressions-import', class: 'filters', 'aria-label': 'Import a CSV file'},
    field('suppressions-import-file', 'CSV file (address,scope,reason a line; all lines or none)', importFile),
    h('div', {class: 'actions'}, h('button', {type: 'submit', id: 'suppressions-import-button', class: 'secondary'}, 'Import')));

  container.append(
    h('h1', {}, 'Suppressions'),
    h('p', {class: 'lead'}, 'Recipients the gateway refuses at RCPT (550) and in the send API (422) without asking the ',
      'smarthost: a global entry for all mail, a user:<name> entry for that user\'s. Entries expire; the smarthost\'s ',
      '5.1.x refusals add some on their own.'),
    filterForm, error, done, where,
    h('div', {class: 'table-wrap'}, h('table', {class: 'rows', id: 'suppressions-table'},
      h('caption', {class: 'visually-hidden'}, 'Suppression list entries, by address'),
      h('thead', {}, h('tr', {},
        ['Address', 'Scope', 'Reason', 'Source', 'Ledger row', 'Reply', 'Added by', 'Added', 'Expires', '']
          .map((t) => h('th', {scope: 'col'}, t)))),
      body)),
    empty,
    h('div', {class: 'pager'}, previous, next),
    h('h2', {}, 'Add an entry'), addForm,
    h('h2', {}, 'Import'), importForm);

  let filter = {address: '', scope: ''};
  let offset = 0;

  function tell(text, failed) {
    done.hidden = false;
    done.textContent = text;
    done.classList.toggle('error', failed);
    done.classList.toggle('success', !failed);
    announce(text);
  }

  function row(e) {
    return h('tr', {'data-id': e.id},
      h('td', {class: 'addr mono suppression-address'}, e.address),
      h('td', {class: 'mono suppression-scope'}, e.scope),
      h('td', {class: 'suppression-reason'}, e.reason, e.category ? [' ', h('span', {class: 'hint'}, `(${e.category})`)] : ''),
      h('td', {}, SOURCE_WORDS[e.source] ?? e.source),
      h('td', {class: 'mono suppression-message'},
        e.messageId ? h('a', {href: `#/message/${encodeURIComponent(e.messageId)}`}, e.messageId) : '–'),
      h('td', {class: 'mono suppression-reply'}, e.reply ?? '–'),
      h('td', {class: 'suppression-added-by'}, e.addedBy),
      h('td', {}, timeEl(e.addedAt)),
      h('td', {}, timeEl(e.expiresAt)),
      h('td', {}, h('button', {type: 'button', class: 'secondary suppression-remove',
        'aria-label': `Remove ${e.address} (${e.scope})`, onclick: () => remove(e)}, 'Remove')));
  }

  async function load() {
    try {
      const page = await api(`/api/v1/suppressions${query({...filter, limit: PAGE, offset})}`);
      error.hidden = true;
      replace(body, page.entries.map(row));
      empty.hidden = page.entries.length > 0;
      where.textContent = page.entries.length === 0 ? ''
        : `Entries ${offset + 1} to ${offset + page.entries.length}${page.more ? ', more after' : ''}.`;
      previous.disabled = offset === 0;
      next.disabled = !page.more;
    } catch (e) {
      error.hidden = false;
      error.textContent = `The list could not be read: ${e.message}`;
    }
  }

  async function remove(e) {
    try {
      await api(`/api/v1/suppressions/${encodeURIComponent(e.id)}`, {method: 'DELETE',
        headers: operatorHeader()});
      tell(`Removed ${e.address} (${e.scope}).`, false);
    } catch (err) {
      tell(`${e.address} was not removed: ${err.message}`, true);
    }
    load();
  }

  filterForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    filter = {address: filterAddress.value.trim(), scope: filterScope.value.trim()};
    offset = 0;
    load();
  });
  previous.addEventListener('click', () => {
    offset = Math.max(0, offset - PAGE);
    load();
  });
  next.addEventListener('click', () => {
    offset += PAGE;
    load();
  });

  addForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const e = await api('/api/v1/suppressions', {method: 'POST', body: {address: addAddress.value.trim(),
        scope: addScope.value.trim(), reason: addReason.value.trim(), operator: session.operator}});
      tell(`Added ${e.address} (${e.scope}), until ${e.expiresAt}.`, false);
      addAddress.value = '';
      addReason.value = '';
    } catch (err) {
      tell(`Not added: ${err.message}`, true);
    }
    load();
  });

  importForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const file = importFile.files[0];
    if (!file) {
      tell('Choose a CSV file to import.', true);
      return;
    }
    try {
      const r = await api('/api/v1/suppressions/import', {method: 'POST', headers: operatorHeader(),
        text: await file.text()});
      tell(`Imported ${file.name}: ${r.added} added, ${r.renewed} renewed.`, false);
      importFile.value = '';
    } catch (err) {
      tell(`Nothing imported from ${file.name}: ${err.message}`, true);
    }
    load();
  });

  load();
  return {unmount() {}};
}
