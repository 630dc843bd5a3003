// The console's shell: sign-in, the header (connection state, attention badge), and a hash router over the
// views. Routes: #/live[?filters], #/attention, #/message/<id>, #/bulk, #/endpoints, #/quotas, #/usage,
// #/suppressions, #/bounces.

import {api, onUnauthorized, ProblemError, session, Unreachable} from './api.js';
import {announce, throttle} from './dom.js';
import {LiveSocket} from './socket.js';
import * as live from './live.js';
import * as attention from './attention.js';
import * as message from './message.js';
import * as bulk from './bulk.js';
import * as endpoints from './endpoints.js';
import * as quotas from './quotas.js';
import * as usage from './usage.js';
import * as suppressions from './suppressions.js';
import * as bounces from './bounces.js';

const $ = (id) => document.getElementById(id);
const BADGE_EVERY_MS = 5000;

let socket = null;
let view = null; // {unmount()} of the view on screen
let badgeTimer = null;

const refreshBadge = throttle(async () => {
  try {
    const a = await api('/api/v1/attention?limit=1');
    showBadge(a.gauges);
  } catch {
    // The header keeps its last count; the connection state says when the gateway cannot be reached.
  }
}, 1000);

/** The badge counts what the gauges count: stale PENDING plus UNKNOWN (ledgerpost_pending_stale_messages + ledgerpost_unknown_messages). */
export function showBadge(gauges) {
  const n = gauges.stale + gauges.unknown;
  const badge = $('attention-badge');
  badge.textContent = String(n);
  badge.dataset.count = String(n);
  badge.setAttribute('aria-label', `${n} message${n === 1 ? '' : 's'} need${n === 1 ? 's' : ''} attention`);
  badge.classList.toggle('badge-zero', n === 0);
}

function showSignIn(message) {
  stopSession();
  $('nav').hidden = true;
  $('session').hidden = true;
  $('view').hidden = true;
  $('sign-in').hidden = false;
  const error = $('sign-in-error');
  error.hidden = !message;
  error.textContent = message ?? '';
  $('token').value = '';
  $('operator').value = session.operator || $('operator').value;
  document.title = 'Sign in · Ledgerpost console';
  $('token').focus();
}

async function signIn(e) {
  e.preventDefault();
  const token = $('token').value.trim();
  const operator = $('operator').value.trim();
  const error = $('sign-in-error');
  const fail = (text) => {
    error.textContent = text;
    error.hidden = false;
  };
  if (!token) return fail('Enter the admin token.');
  if (!operator) return fail('Enter your name: it is recorded with the resolutions you make.');
  $('sign-in-button').disabled = true;
  try {
    await api('/api/v1/attention?limit=1', {token});
    session.set(token, operator);
    startSession();
  } catch (err) {
    if (err instanceof ProblemError && err.status === 401) {
      fail('That token was refused: it is not this gateway\'s admin token.');
      $('token').select();
    } else if (err instanceof Unreachable) {
      fail('The gateway did not answer. Is it running?');
    } else {
      fail(`Sign-in failed: ${err.message}`);
    }
  } finally {
    $('sign-in-button').disabled = false;
  }
}

function startSession() {
  // The token lives in sessionStorage only: the hidden form must not keep a copy in the page.
  $('token').value = '';
  $('sign-in').hidden = true;
  $('nav').hidden = false;
  $('session').hidden = false;
  $('view').hidden = false;
  $('operator-name').textContent = session.operator;
  socket = new LiveSocket(session.token);
  socket.addEventListener('state', (e) => showConnection(e.detail));
  socket.addEventListener('unauthorized', () => showSignIn('The gateway refused the token: sign in again.'));
  socket.addEventListener('event', refreshBadge);
  socket.start();
  refreshBadge();
  badgeTimer = setInterval(refreshBadge, BADGE_EVERY_MS);
  route();
}

function stopSession() {
  socket?.stop();
  socket = null;
  clearInterval(badgeTimer);
  view?.unmount();
  view = null;
}

function showConnection({state, since, retryIn}) {
  const el = $('connection');
  el.dataset.state = state;
  if (since !== null && since !== undefined) el.dataset.since = String(since);
  else delete el.dataset.since;
  if (state === 'live') {
    el.textContent = 'Live';
    el.title = since !== null && since !== undefined ? `resumed after event ${since}` : 'receiving events as they happen';
  } else if (state === 'reconnecting') {
    el.textContent = 'Reconnecting…';
    el.title = retryIn ? `connection lost; next try in ${Math.round(retryIn / 100) / 10} s` : 'connection lost';
  } else {
    el.textContent = 'Connecting…';
    el.title = '';
  }
}

const ROUTES = [
  {pattern: /^#\/live(?:\?(.*))?$/, nav: 'live', view: live},
  {pattern: /^#\/attention$/, nav: 'attention', view: attention},
  {pattern: /^#\/message\/([0-9a-fA-F-]{36})$/, nav: null, view: message},
  {pattern: /^#\/bulk$/, nav: 'bulk', view: bulk},
  {pattern: /^#\/endpoints$/, nav: 'endpoints', view: endpoints},
  {pattern: /^#\/quotas$/, nav: 'quotas', view: quotas},
  {pattern: /^#\/usage$/, nav: 'usage', view: usage},
  {pattern: /^#\/suppressions$/, nav: 'suppressions', view: suppressions},
  {pattern: /^#\/bounces$/, nav: 'bounces', view: bounces},
];

function route() {
  if (!socket) return;
  const hash = location.hash || '#/live';
  if (!hash.startsWith('#/')) return; // the skip link's #main, not a route
  const match = ROUTES.map((r) => ({r, m: hash.match(r.pattern)})).find((x) => x.m);
  if (!match) {
    location.replace('#/live');
    return;
  }
  view?.unmount();
  const container = $('view');
  container.replaceChildren();
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === match.r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  view = match.r.view.mount(container, {socket, refreshBadge, showBadge, param: match.m[1] ?? ''});
  // Focus the new view's heading, so keyboard and screen-reader users start where the page changed.
  const heading = container.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({preventScroll: true});
    document.title = `${heading.textContent} · Ledgerpost console`;
  }
}

function init() {
  $('sign-in-form').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', () => {
    session.clear();
    showSignIn(null);
    announce('Signed out');
  });
  $('skip').addEventListener('click', (e) => {
    e.preventDefault();
    $('main').focus();
  });
  onUnauthorized(() => {
    session.clear();
    showSignIn('The gateway refused the token: sign in again.');
  });
  window.addEventListener('hashchange', route);
  if (session.token) startSession();
  else showSignIn(null);
}

init();
