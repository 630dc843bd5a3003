// Webhook endpoints and their health (docs/design.md §6.6): every endpoint, configured or made through the API, with
// its state (and why it is disabled), its failed attempts in a row and since when, its last errors, its deliveries
// and its rate limit. An operator enables a disabled endpoint (nothing is replayed by that) and replays a range of
// events to one, after the pub_seq it names: the enable's answer fills in the range the endpoint missed. Read again
// on events (at most once a second) and every 5 s. Nothing here sends mail.

import {api, ProblemError, query} from './api.js';
import {announce, h, replace, throttle, timeEl} from './dom.js';

const EVERY_MS = 5000;

const KIND_WORDS = {
  gone: 'it answered 410 Gone; its deliveries wait',
  failing: 'every attempt failed for webhooks.disableAfter; nothing is recorded for it meanwhile',
  manual: 'its owner disabled it; nothing is recorded for it meanwhile',
};

export function mount(container, ctx) {
  const list = h('div', {class: 'endpoints', id: 'endpoints'});
  const empty = h('p', {class: 'empty', hidden: true},
    'No webhook endpoint: configure webhooks.endpoints, or make one with POST /api/v1/webhooks/endpoints.');
  const error = h('p', {class: 'error', role: 'alert', hidden: true});
  const done = h('p', {class: 'success', id: 'endpoint-done', role: 'status', hidden: true});
  const schedule = h('p', {class: 'where', id: 'endpoints-schedule'});
  container.append(
    h('h1', {}, 'Webhook endpoints'),
    h('p', {class: 'lead'}, 'Each endpoint\'s health: an endpoint every attempt of which fails for webhooks.disableAfter ',
      'is disabled. Enabling it sends nothing of the past; replay what it missed when it is ready for it.'),
    schedule, error, done, list, empty);
  // Replay ranges typed or filled in by an enable survive the redraws, by endpoint.
  const ranges = new Map();
  let drawn = null;

  async function load() {
    try {
      const l = await api('/api/v1/webhooks');
      error.hidden = true;
      schedule.textContent = `Retry schedule ${l.retrySchedule.join(', ')}; ${l.concurrency} in flight per endpoint; `
        + `each attempt within ${l.timeout}.`;
      draw(l.endpoints);
    } catch (e) {
      error.hidden = false;
      error.textContent = `Could not read the endpoints: ${e.message}`;
    }
  }

  function draw(endpoints) {
    const signature = JSON.stringify(endpoints);
    if (signature === drawn) return; // a button never moves under the pointer for nothing
    drawn = signature;
    empty.hidden = endpoints.length > 0;
    replace(list, endpoints.map(card));
  }

  function card(e) {
    const health = e.health ?? {};
    const disabled = e.state === 'DISABLED';
    const range = ranges.get(e.name) ?? {since: disabled && health.disabledKind !== 'gone' ? String(e.recordedThrough) : '', until: ''};
    ranges.set(e.name, range);
    const since = h('input', {type: 'number', min: 0, step: 1, class: 'replay-since', id: `replay-since-${e.name}`,
      value: range.since, oninput: (ev) => { range.since = ev.target.value; }});
    const until = h('input', {type: 'number', min: 1, step: 1, class: 'replay-until', id: `replay-until-${e.name}`,
      value: range.until, placeholder: 'latest', oninput: (ev) => { range.until = ev.target.value; }});
    const errors = Array.isArray(health.lastErrors) ? health.lastErrors : [];
    const d = e.deliveries ?? {};
    return h('section', {class: 'endpoint', 'data-name': e.name, 'data-state': e.state, 'aria-labelledby': `endpoint-${e.name}`},
      h('h2', {id: `endpoint-${e.name}`}, e.name, ' ',
        h('span', {class: `status endpoint-state ${disabled ? 'status-failed_perm' : 'status-sent'}`},
          disabled ? 'Disabled' : 'Enabled')),
      h('p', {class: 'mono endpoint-url'}, e.url),
      h('dl', {class: 'facts'},
        h('dt', {}, 'Messages of'), h('dd', {}, e.user ?? 'every user'),
        disabled ? [h('dt', {}, 'Disabled'), h('dd', {class: 'endpoint-disabled'}, timeEl(e.disabledAt), ': ',
          KIND_WORDS[health.disabledKind] ?? '', e.disabledReason ? ` (${e.disabledReason})` : '')] : '',
        h('dt', {}, 'Failures in a row'), h('dd', {class: 'endpoint-failures'}, String(health.consecutiveFailures ?? 0)),
        h('dt', {}, 'Failing since'), h('dd', {class: 'endpoint-failing-since'},
          health.failingSince ? timeEl(health.failingSince) : '–'),
        h('dt', {}, 'Deliveries'), h('dd', {class: 'endpoint-deliveries'},
          `${d.pending ?? 0} pending, ${d.attempted ?? 0} retrying, ${d.failed ?? 0} failed, ${d.inFlight ?? 0} in flight`),
        h('dt', {}, 'Rate limit'), h('dd', {}, health.rateLimit ? `${health.rateLimit} requests a second` : 'none'),
        h('dt', {}, 'Recorded through'), h('dd', {}, `event ${e.recordedThrough}`)),
      errors.length === 0 ? '' : [h('h3', {}, 'Last errors'),
        h('ol', {class: 'endpoint-errors'}, errors.map((x) => h('li', {}, timeEl(x.at), ' ',
          h('span', {class: 'mono'}, x.eventId ?? ''), ': ', x.error ?? (x.status ? `HTTP ${x.status}` : 'failed'))))],
      h('div', {class: 'actions'},
        disabled ? h('button', {type: 'button', class: 'endpoint-enable', onclick: () => enable(e)}, 'Enable') : '',
        h('label', {for: `replay-since-${e.name}`}, 'Replay events after'), since,
        h('label', {for: `replay-until-${e.name}`}, 'up to'), until,
        h('button', {type: 'button', class: 'secondary endpoint-replay', onclick: () => replay(e, range)}, 'Replay')));
  }

  function tell(text, failed) {
    done.hidden = false;
    done.textContent = text;
    done.classList.toggle('error', failed);
    announce(text);
  }

  async function enable(e) {
    try {
      const r = await api(`/api/v1/webhooks/${encodeURIComponent(e.name)}/enable`, {method: 'POST'});
      if (r.skipped) {
        ranges.set(e.name, {since: String(r.skipped.since), until: String(r.skipped.until)});
        tell(`${e.name} enabled. It missed events ${r.skipped.since + 1} to ${r.skipped.until} while disabled: `
          + 'Replay sends them.', false);
      } else {
        tell(`${e.name} enabled.`, false);
      }
      drawn = null;
    } catch (err) {
      tell(`${e.name} was not enabled: ${err.message}`, true);
    }
    load();
  }

  async function replay(e, range) {
    if (range.since === '') {
      tell(`Name the event to replay after (its pub_seq) for ${e.name}.`, true);
      return;
    }
    try {
      const r = await api(`/api/v1/webhooks/${encodeURIComponent(e.name)}/replay${query({since: range.since, until: range.until})}`,
        {method: 'POST'});
      tell(`Replay to ${e.name} of events ${r.since + 1} to ${r.until}: ${r.recorded} recorded, ${r.rearmed} sent again.`, false);
    } catch (err) {
      const p = err instanceof ProblemError ? err.problem ?? {} : {};
      tell(p.oldestAvailableSeq !== undefined
        ? `Not replayed: events before ${p.oldestAvailableSeq} are gone (notify.retention).`
        : `Not replayed: ${err.message}`, true);
    }
    load();
  }

  const refresh = throttle(load, 1000);
  const timer = setInterval(refresh, EVERY_MS);
  const view = ctx.socket.follow(refresh, refresh, () => clearInterval(timer), refresh.cancel);
  load();
  return view;
}
