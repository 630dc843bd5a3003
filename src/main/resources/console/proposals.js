// The reconcile job's proposals for one message (docs/design.md §8.4): what the smarthost's own record says became
// of it, with the evidence (its queue id, its log lines, what matched). An open proposal can be accepted (the message
// is resolved as it says, by this operator, through the resolution path) or rejected (never proposed again), each
// after a confirmation step. Nothing here sends mail.

import {api, ProblemError, session} from './api.js';
import {announce, h, replace, timeEl, words} from './dom.js';

/** The evidence of one proposal: its summary, what matched, and the source's own lines, as text. */
export function evidence(p) {
  const e = p.evidence ?? {};
  const lines = Array.isArray(e.lines) ? e.lines : [];
  return h('div', {class: 'evidence'},
    h('p', {}, e.summary ?? ''),
    h('p', {class: 'hint'}, `Matched: ${(Array.isArray(e.matched) ? e.matched : []).join(', ') || 'nothing'}.`
      + (Array.isArray(e.alternatives) && e.alternatives.length > 0
        ? ` Other evidence fits as well: ${e.alternatives.map((a) => `${a.source} ${a.ref}`).join(', ')}.` : '')),
    lines.length === 0 ? '' : h('pre', {class: 'evidence-lines mono'}, lines.join('\n')));
}

/**
 * The proposals panel. `reload()` is called after a decision, so the page shows the message as it now is.
 * Returns {element, draw(detail)}.
 */
export function proposalsPanel(id, reload, ctx) {
  const list = h('ol', {class: 'proposals', id: 'proposals'});
  const problem = h('p', {class: 'error', id: 'proposal-error', role: 'alert', hidden: true});
  const done = h('p', {class: 'success', id: 'proposal-done', role: 'status', hidden: true});
  const confirmText = h('p', {id: 'proposal-confirm-text'});
  const operator = h('input', {id: 'proposal-operator', type: 'text', maxlength: 200, required: true, autocomplete: 'name'});
  const note = h('input', {id: 'proposal-note', type: 'text', maxlength: 2000});
  const cancel = h('button', {type: 'button', class: 'secondary', id: 'proposal-cancel'}, 'Cancel');
  const confirm = h('button', {type: 'button', id: 'proposal-confirm', class: 'danger'}, 'Confirm');
  const dialog = h('dialog', {id: 'proposal-dialog', 'aria-labelledby': 'proposal-dialog-title', 'aria-describedby': 'proposal-confirm-text'},
    h('h2', {id: 'proposal-dialog-title'}, 'Confirm'),
    confirmText,
    h('label', {for: 'proposal-operator'}, 'Operator'), operator,
    h('label', {for: 'proposal-note'}, 'Note (optional)'), note,
    h('p', {class: 'hint'}, 'It is recorded with your name and the time, and cannot be undone.'),
    h('div', {class: 'actions'}, cancel, confirm));
  const element = h('section', {class: 'resolve reconcile', 'aria-labelledby': 'proposals-title', hidden: true},
    h('h2', {id: 'proposals-title'}, 'Reconciliation'),
    h('p', {}, 'What the smarthost\'s own record says became of this message.'),
    list, problem, done, dialog);
  let pending = null; // {proposal, verb} while the dialog is open
  let drawn = null; // what the list shows: redrawn only when that changes, so a button never moves under the pointer

  function ask(p, verb) {
    problem.hidden = true;
    pending = {proposal: p, verb};
    operator.value = session.operator;
    note.value = '';
    replace(confirmText, verb === 'accept'
      ? ['Accept proposal ', h('strong', {}, String(p.id)), ' and resolve this message as ',
        h('strong', {}, p.outcome === 'DELIVERED' ? 'delivered' : 'not delivered'), '?']
      : ['Reject proposal ', h('strong', {}, String(p.id)), '? The message stays as it is, and this evidence is not proposed for it again.']);
    confirm.textContent = verb === 'accept' ? 'Accept and resolve' : 'Reject';
    dialog.showModal();
    cancel.focus(); // the safe choice has the focus
  }

  cancel.addEventListener('click', () => {
    dialog.close();
    pending = null;
  });
  confirm.addEventListener('click', async () => {
    if (!operator.value.trim()) {
      operator.focus();
      return;
    }
    dialog.close();
    const {proposal, verb} = pending;
    pending = null;
    const body = {operator: operator.value.trim()};
    if (note.value.trim()) body.note = note.value.trim();
    try {
      const r = await api(`/api/v1/reconcile/proposals/${proposal.id}/${verb}`, {method: 'POST', body});
      session.setOperator(body.operator);
      done.hidden = false;
      done.textContent = verb === 'accept'
        ? `Proposal ${proposal.id} accepted: ${words(r.message.status)} (version ${r.message.version}), by ${r.message.resolution.operator}.`
        : `Proposal ${proposal.id} rejected by ${r.proposal.decidedBy}.`;
      announce(done.textContent);
      ctx.refreshBadge();
    } catch (e) {
      const p = e instanceof ProblemError ? e.problem ?? {} : {};
      problem.textContent = e instanceof ProblemError && e.status === 409
        ? `Not recorded: the proposal is ${String(p.proposalState ?? 'no longer open').toLowerCase()}`
          + (p.messageStatus ? `; the message is now ${words(p.messageStatus)} (version ${p.messageVersion}).` : '.')
        : `Not recorded: ${e.message}`;
      problem.dataset.conflict = p.proposalState ?? '';
      problem.hidden = false;
    }
    reload();
  });

  return {
    element,
    draw(d) {
      const proposals = Array.isArray(d.proposals) ? d.proposals : [];
      const signature = JSON.stringify([d.status, proposals.map((p) => [p.id, p.state])]);
      if (signature === drawn) return;
      drawn = signature;
      element.hidden = proposals.length === 0;
      replace(list, proposals.map((p) => h('li', {class: 'proposal', 'data-id': String(p.id), 'data-state': p.state},
        h('h3', {}, `Proposal ${p.id}: ${p.outcome === 'DELIVERED' ? 'delivered' : 'not delivered'} (${p.confidence})`),
        h('p', {}, `From ${p.source}, evidence ${p.evidenceRef}; proposed `, timeEl(p.proposedAt),
          p.proposedBy ? ` by node ${p.proposedBy}` : '', '. ',
          p.state === 'OPEN' ? 'Open.' : [`${p.state.toLowerCase()[0].toUpperCase()}${p.state.toLowerCase().slice(1)}`,
            p.decidedBy ? ` by ${p.decidedBy}` : '', p.decidedAt ? [' at ', timeEl(p.decidedAt)] : '', '.']),
        evidence(p),
        p.state === 'OPEN' && ['PENDING', 'UNKNOWN'].includes(d.status)
          ? h('div', {class: 'actions'},
            h('button', {type: 'button', class: 'proposal-accept', onclick: () => ask(p, 'accept')}, 'Accept…'),
            h('button', {type: 'button', class: 'secondary proposal-reject', onclick: () => ask(p, 'reject')}, 'Reject…'))
          : '')));
    },
  };
}
