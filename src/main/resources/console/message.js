// One message's story, drawn as a timeline from its facts: the message detail (GET /api/v1/messages/{id}) and
// the operation status (GET /api/v1/operations/{id}). Nothing is invented: the ledger keeps no headers but the
// Message-ID, and no time for an RCPT reply, so none is shown. A PENDING or UNKNOWN message can be resolved
// here, with a confirmation step; a resolution refused because the message changed first (409) says so plainly.

import {api, ProblemError, session} from './api.js';
import {announce, bytes, h, replace, statusBadge, tagList, throttle, timeEl, words} from './dom.js';
import {evidence, proposalsPanel} from './proposals.js';
import {capturePanel} from './capture.js';

const RESOLVABLE = new Set(['PENDING', 'UNKNOWN']);
const STATE_WORDS = {queued: 'Queued', deferred: 'Deferred', delivered: 'Delivered', bounced: 'Bounced', expired: 'Expired'};

export function mount(container, ctx) {
  const id = ctx.param.toLowerCase();
  const title = h('h1', {}, 'Message');
  const status = h('p', {class: 'message-status', id: 'message-status'});
  const facts = h('dl', {class: 'facts', id: 'message-facts'});
  const timeline = h('ol', {class: 'timeline', id: 'timeline'});
  const resolveArea = h('div', {id: 'resolve-area'});
  const proposals = proposalsPanel(id, () => load(), ctx);
  const error = h('p', {class: 'error', role: 'alert', hidden: true});
  // The story first (left, or on top on a phone), then what can be done about it and the plain facts.
  container.append(
    h('p', {class: 'back'}, h('a', {href: '#/live'}, '← Live ledger'), ' · ', h('a', {href: '#/attention'}, 'Needs attention')),
    title, status, error,
    h('div', {class: 'message-layout'},
      h('section', {'aria-labelledby': 'timeline-title'}, h('h2', {id: 'timeline-title'}, 'Timeline'), timeline),
      h('div', {}, proposals.element, resolveArea,
        h('section', {'aria-labelledby': 'facts-title'}, h('h2', {id: 'facts-title'}, 'Facts'), facts))));

  const captureArea = h('div', {id: 'capture-area'});
  container.append(captureArea);
  let capture = null; // a CAPTURED message's bytes, read once (they do not change)
  let panel = null; // the resolve form while it is on the page
  let shown = null; // the detail last drawn

  async function load() {
    try {
      const [d, op] = await Promise.all([api(`/api/v1/messages/${id}`), api(`/api/v1/operations/${id}`)]);
      error.hidden = true;
      shown = d;
      draw(d, op);
    } catch (e) {
      error.hidden = false;
      error.textContent = e instanceof ProblemError && e.status === 404
        ? `The ledger has no message ${id}.`
        : `The message could not be read: ${e.message}`;
    }
  }

  function draw(d, op) {
    replace(title, 'Message ', h('span', {class: 'mono'}, d.messageId ?? d.id));
    replace(status, statusBadge(d.status), ` version ${d.version}`);
    status.dataset.status = d.status;
    status.dataset.version = String(d.version);
    drawFacts(facts, d, op);
    drawTimeline(timeline, d, op);
    proposals.draw(d);
    if (d.status === 'CAPTURED' && !capture) {
      capture = capturePanel(id);
      captureArea.replaceChildren(capture.element);
      capture.load();
    }
    if (RESOLVABLE.has(d.status)) {
      if (!panel) {
        panel = resolvePanel(d);
        resolveArea.replaceChildren(panel.element);
      }
      panel.current(d);
    } else if (panel) {
      if (panel.touched()) panel.current(d); // keep what the operator typed; say the message changed
      else {
        panel = null;
        resolveArea.replaceChildren();
      }
    }
  }

  function resolvePanel(d) {
    const seen = {status: d.status, version: d.version}; // what the operator is looking at when they resolve
    const outcome = (value, label, hint) => h('label', {class: 'choice'},
      h('input', {type: 'radio', name: 'outcome', value, required: true}), ` ${label} `, h('span', {class: 'hint'}, hint));
    const note = h('textarea', {id: 'resolve-note', name: 'note', rows: 3, maxlength: 2000, required: true,
      'aria-describedby': 'resolve-note-hint'});
    const operator = h('input', {id: 'resolve-operator', name: 'operator', type: 'text', maxlength: 200, required: true,
      value: session.operator, autocomplete: 'name'});
    const changed = h('p', {class: 'notice', id: 'resolve-changed', role: 'status', hidden: true});
    const problem = h('p', {class: 'error', id: 'resolve-error', role: 'alert', hidden: true});
    const done = h('p', {class: 'success', id: 'resolve-done', role: 'status', hidden: true});
    const submit = h('button', {type: 'submit', id: 'resolve-button'}, 'Resolve…');
    const form = h('form', {id: 'resolve-form', novalidate: true},
      h('fieldset', {}, h('legend', {}, 'What happened to it'),
        outcome('DELIVERED', 'Delivered', '(the downstream\'s log or the recipient shows it arrived)'),
        outcome('NOT_DELIVERED', 'Not delivered', '(it did not arrive; the sender must send it again)')),
      h('label', {for: 'resolve-note'}, 'Note'),
      h('p', {class: 'hint', id: 'resolve-note-hint'}, 'Why: what the downstream\'s log or the recipient showed. Required.'),
      note,
      h('label', {for: 'resolve-operator'}, 'Operator'),
      operator,
      changed, problem,
      h('div', {class: 'actions'}, submit));
    const confirmText = h('p', {id: 'resolve-confirm-text'});
    const cancel = h('button', {type: 'button', class: 'secondary', id: 'resolve-cancel'}, 'Cancel');
    const confirm = h('button', {type: 'button', id: 'resolve-confirm', class: 'danger'}, 'Resolve');
    const dialog = h('dialog', {id: 'resolve-dialog', 'aria-labelledby': 'resolve-dialog-title', 'aria-describedby': 'resolve-confirm-text'},
      h('h2', {id: 'resolve-dialog-title'}, 'Confirm the resolution'),
      confirmText,
      h('p', {class: 'hint'}, 'It is recorded with your name, the time and the note, and cannot be undone.'),
      h('div', {class: 'actions'}, cancel, confirm));
    const intro = h('p', {id: 'resolve-intro'},
      'The gateway cannot know what happened to this message; you can, from the downstream\'s log or the recipient.');
    const element = h('section', {class: 'resolve', 'aria-labelledby': 'resolve-title'},
      h('h2', {id: 'resolve-title'}, 'Resolve'),
      intro,
      form, done, dialog);

    form.addEventListener('submit', (e) => {
      e.preventDefault();
      problem.hidden = true;
      const chosen = form.querySelector('input[name="outcome"]:checked');
      const fail = (text, field) => {
        problem.textContent = text;
        problem.hidden = false;
        field?.focus();
      };
      if (!chosen) return fail('Choose what happened to it: delivered or not delivered.', form.querySelector('input[name="outcome"]'));
      if (!note.value.trim()) return fail('Write a note: why you resolve it this way.', note);
      if (!operator.value.trim()) return fail('Name the operator.', operator);
      replace(confirmText, 'Resolve message ', h('strong', {class: 'mono'}, shown?.messageId ?? id), ' as ',
        h('strong', {}, chosen.value === 'DELIVERED' ? 'delivered' : 'not delivered'), ', as ', h('strong', {}, operator.value.trim()),
        `? It is ${words(seen.status)} at version ${seen.version}.`);
      dialog.showModal();
      cancel.focus(); // the safe choice has the focus
    });
    cancel.addEventListener('click', () => {
      dialog.close();
      submit.focus();
    });
    confirm.addEventListener('click', async () => {
      dialog.close();
      submit.disabled = true;
      const body = {
        outcome: form.querySelector('input[name="outcome"]:checked').value,
        note: note.value.trim(),
        operator: operator.value.trim(),
        version: seen.version,
      };
      try {
        const r = await api(`/api/v1/messages/${id}/resolution`, {method: 'POST', body});
        session.setOperator(body.operator);
        form.remove();
        intro.remove(); // it asked for what is now done
        element.querySelector('#resolve-title').textContent = 'Resolved';
        done.hidden = false;
        // words() of a RESOLVED_* status starts with "Resolved:" already
        done.textContent = `${words(r.status)} (version ${r.version}), by ${r.resolution.operator}.`;
        announce(done.textContent);
        ctx.refreshBadge();
        load();
      } catch (e) {
        submit.disabled = false;
        if (e instanceof ProblemError && e.status === 409) {
          const p = e.problem ?? {};
          problem.textContent = `Not recorded: the message changed before your resolution reached the ledger. It is now `
            + `${words(p.messageStatus)} (version ${p.messageVersion}); someone else resolved it, or the gateway settled it. `
            + 'Its timeline shows what happened.';
          problem.dataset.conflict = p.messageStatus ?? '';
          submit.disabled = true;
          load();
        } else {
          problem.textContent = `Not recorded: ${e.message}`;
        }
        problem.hidden = false;
      }
    });
    return {
      element,
      touched: () => dialog.open || note.value.trim() !== '' || !problem.hidden || !done.hidden,
      current(now) {
        const moved = now.version !== seen.version || now.status !== seen.status;
        changed.hidden = !moved || !done.hidden;
        changed.textContent = moved
          ? `This message changed while you were looking: it is now ${words(now.status)} (version ${now.version}). `
            + 'A resolution of what you saw will be refused.'
          : '';
      },
    };
  }

  const refresh = throttle(load, 500);
  const onEvent = (e) => {
    if (e.detail.messageId === id) refresh();
  };
  const view = ctx.socket.follow(onEvent, refresh, refresh.cancel);
  load();
  return view;
}

function drawFacts(dl, d, op) {
  const row = (term, ...value) => [h('dt', {}, term), h('dd', {}, ...value)];
  replace(dl,
    row('Ledger id', h('span', {class: 'mono'}, d.id)),
    row('Message-ID', h('span', {class: 'mono'}, d.messageId ?? '(none)')),
    row('From', d.mailFrom === '' ? '<> (a bounce)' : d.mailFrom),
    row('Recipients', String(d.recipientCount)),
    row('Size', bytes(d.size)),
    row('Intake', d.intake),
    row('Client', d.clientIp ?? '(not recorded)', d.helo ? ` (HELO ${d.helo})` : ''),
    row('Authenticated as', d.authUser ?? '(not authenticated)'),
    row('Route', h('span', {class: 'mono'}, d.route)),
    // What the sending application said the message is about (docs/data-model.md §5.17).
    row('Tags', (d.tags ?? []).length ? tagList(d.tags) : '(none)'),
    row('Metadata', Object.keys(d.metadata ?? {}).length
      ? h('ul', {class: 'metadata'}, Object.entries(d.metadata).map(([k, v]) => h('li', {}, h('span', {class: 'mono'}, k), ' = ', v)))
      : '(none)'),
    // The gateway node that opened it (several nodes on one ledger, docs/design.md §9); null on rows from before nodes.
    row('Node', d.node ?? '(not recorded)'),
    row('Body SHA-256', h('span', {class: 'mono hash'}, d.sha256)),
    row('Read from', `${op.readSource}, as of `, timeEl(op.asOf)));
}

/** " of node a" (or "s a, b"): the live nodes whose retry part holds an outcome for it, as the operation status names them. */
function heldOn(op) {
  const nodes = Array.isArray(op.ledger.retryingOn) ? op.ledger.retryingOn : [];
  return nodes.length === 0 ? '' : ` of node${nodes.length === 1 ? '' : 's'} ${nodes.join(', ')}`;
}

/** The facts in the order they happened; each says where it comes from. */
function drawTimeline(ol, d, op) {
  const items = [];
  const item = (kind, when, heading, ...body) => items.push(h('li', {class: `event event-${kind}`, 'data-kind': kind},
    h('div', {class: 'event-when'}, when ? timeEl(when) : ''),
    h('div', {class: 'event-what'}, h('h3', {}, heading), ...body)));

  const via = [`Over ${d.intake}`];
  if (d.clientIp) via.push(`from ${d.clientIp}${d.helo ? ` (HELO ${d.helo})` : ''}`);
  if (d.authUser) via.push(`authenticated as ${d.authUser}`);
  if (d.node) via.push(`by node ${d.node}`);
  item('opened', d.receivedAt, 'Received; the ledger opened it',
    h('p', {}, `${via.join(', ')}. Written PENDING (version 1) before the body went to the downstream.`),
    // A client's retry of a row that did not deliver it is new mail that names that row (docs/contract.md §1.13).
    d.resubmissionOf ? h('p', {}, 'A client\'s retry of ', h('a', {href: `#/message/${d.resubmissionOf}`, class: 'mono'},
      d.resubmissionOf), ', which did not deliver it: relayed as new mail.') : '');

  item('rcpt', null, 'The downstream answered each RCPT TO',
    h('ul', {class: 'replies'}, op.recipients.map((r) => h('li', {},
      h('span', {class: 'addr'}, r.address), ': ', h('span', {class: 'mono'}, r.rcptReply ?? '(no reply recorded)')))));

  if (d.downstreamReply) {
    item('reply', null, 'The downstream\'s final reply', h('p', {class: 'mono'}, d.downstreamReply));
  } else if (d.status === 'UNKNOWN' || (d.status.startsWith('RESOLVED') && d.settledAt && d.resolution
      && Date.parse(d.settledAt) !== Date.parse(d.resolution.at))) {
    item('reply', null, 'No final reply',
      h('p', {}, 'The connection was lost after the final dot: the downstream may or may not have delivered it.'));
  } else if (d.status === 'PENDING') {
    item('reply', null, 'No final reply recorded yet', h('p', {}, 'The ledger has no verdict for it.'));
  }
  if (d.lastError) item('error', null, 'Last error', h('p', {class: 'mono'}, d.lastError));

  if (d.status === 'PENDING') {
    const held = op.ledger.retrying;
    const on = heldOn(op);
    item('settle', null, 'Not settled',
      h('p', {}, held === true
        ? `The retry part${on} holds its known outcome (journaled on disk) and is writing it to the ledger.`
        : held === false
          ? 'No live node holds an outcome for it: it is PENDING in the ledger only. Past the stale threshold the stale watch raises it.'
          : 'The retry part did not answer: whether it holds an outcome is not known.'));
  } else {
    const resolvedFromPending = d.resolution && d.settledAt && Date.parse(d.settledAt) === Date.parse(d.resolution.at);
    if (!resolvedFromPending) {
      const settledAs = d.status.startsWith('RESOLVED') ? 'UNKNOWN' : d.status;
      item('settle', d.settledAt, `Settled: ${words(settledAs)}`,
        h('ul', {class: 'replies'}, op.recipients.map((r) => h('li', {},
          h('span', {class: 'addr'}, r.address), ': ', statusBadge(r.status),
          r.reply ? [' ', h('span', {class: 'mono'}, r.reply)] : ''))),
        op.ledger.retrying ? h('p', {}, `The retry part${heldOn(op)} still holds an outcome for it.`) : '');
    }
  }

  // What happened after the smarthost's 250, per recipient (docs/design.md §8.13): its tracking facts in time order.
  const tracked = (Array.isArray(d.recipients) ? d.recipients : []).filter((r) => Array.isArray(r.delivery) && r.delivery.length > 0);
  if (tracked.length > 0) {
    item('delivery', null, 'After the smarthost: each recipient\'s delivery',
      h('ul', {class: 'delivery', id: 'delivery'}, tracked.map((r) => h('li', {class: 'delivery-recipient', 'data-address': r.address},
        h('span', {class: 'addr'}, r.address),
        h('ol', {class: 'delivery-facts'}, [...r.delivery].sort((a, b) => Date.parse(a.at) - Date.parse(b.at)).map((f) =>
          h('li', {class: `delivery-fact delivery-${f.state}`, 'data-state': f.state},
            h('strong', {class: 'delivery-state'}, STATE_WORDS[f.state] ?? f.state), ' ', timeEl(f.at),
            f.remoteHost ? [' by ', h('span', {class: 'mono delivery-host'}, f.remoteHost)] : '',
            f.dsn ? [' ', h('span', {class: 'mono delivery-dsn'}, f.dsn)] : '',
            f.category ? [' ', h('span', {class: 'delivery-category'}, f.category),
              f.rule ? [' ', h('span', {class: 'hint'}, `(rule ${f.rule})`)] : ''] : '',
            f.reply ? h('p', {class: 'mono delivery-reply'}, f.reply) : '',
            h('p', {class: 'hint delivery-source'}, `From ${f.source}${f.queueId ? `, queue id ${f.queueId}` : ''}.`))))))));
  }

  const pub = op.publish;
  item('outbox', null, `Outbox: ${pub.published} of ${pub.events} event${pub.events === 1 ? '' : 's'} published`,
    h('p', {}, pub.published > 0 ? `The last one as seq ${pub.lastSeq} to the notify hub.`
      : 'Not published yet: the outbox relay publishes committed events within moments.'));

  const receipts = op.notify.receipts;
  item('notify', null, `Notify: ${op.notify.attempted} frame${op.notify.attempted === 1 ? '' : 's'} sent by this process`,
    receipts.length === 0
      // The console is a subscriber too, but a view: it acknowledges nothing (docs/design.md §8.3), so "none" is normal.
      ? h('p', {}, 'No receipts: receipts come from subscribers that acknowledge events (an application acting on them); '
        + 'this console only shows them.')
      : h('ul', {class: 'replies'}, receipts.map((r) => h('li', {},
        `${r.subscriber}: ${r.state} (seq ${r.seq}) at `, timeEl(r.at)))));

  // The reconcile job's proposals (docs/design.md §8.4), when it made them.
  for (const p of (Array.isArray(d.proposals) ? [...d.proposals].reverse() : [])) {
    item('proposed', p.proposedAt, `Reconcile proposed: ${p.outcome === 'DELIVERED' ? 'delivered' : 'not delivered'} (${p.confidence})`,
      h('p', {}, `From ${p.source}, evidence ${p.evidenceRef}. ${p.state === 'OPEN' ? 'Open.' : `${words(p.state)}.`}`));
  }

  // Client retries answered from this row without relaying it (docs/contract.md §1.13).
  const retryHeard = {
    already_relayed: 'heard 250 already relayed; nothing was sent again',
    in_progress: 'heard 451 4.3.0 still in progress; nothing was sent',
    held: 'heard 451 4.4.2 outcome not yet known; nothing was sent until the row is resolved',
  };
  for (const r of (Array.isArray(d.resubmissions) ? d.resubmissions : [])) {
    item('resubmitted', r.at, 'A client resubmitted it',
      h('p', {}, `From ${r.clientIp ?? '(unknown address)'}${r.helo ? ` (HELO ${r.helo})` : ''}`
        + `${r.authUser ? `, authenticated as ${r.authUser}` : ''}${r.node ? `, at node ${r.node}` : ''}: `
        + `${retryHeard[r.outcome] ?? r.outcome}.`));
  }
  if (op.message && op.message.waiting) {
    item('waiting', null, 'A client is waiting on this row', h('p', {}, op.message.waiting));
  }

  if (d.resolution) {
    const r = d.resolution;
    item('resolved', r.at, `Resolved ${r.outcome === 'DELIVERED' ? 'as delivered' : 'as not delivered'} by ${r.operator}`,
      h('blockquote', {class: 'note'}, r.note),
      r.proposal ? evidence(r.proposal) : '',
      h('p', {}, `Now ${words(d.status)}, version ${d.version}.`));
  }
  replace(ol, items);
}
