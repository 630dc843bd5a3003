// The console's one connection to the notify hub (GET /api/v1/events). It authenticates with its first frame
// (browsers cannot send headers on a WebSocket, and the token must not go in the URL), remembers the seq of
// the last event it saw, and after a drop reconnects with since=<that seq>: the hub replays what happened
// meanwhile from the ledger's history, then goes live, so a dropped connection misses nothing.
//
// Events it dispatches:
//   state   {detail: {state: 'connecting'|'live'|'reconnecting', since, retryIn}}
//   event   {detail: <the hub's event frame>}
//   resync  the views must re-read from the API: a first connection, a reconnect with nothing to resume
//           from, or the hub's "reset" (since is older than the retained history)
//   unauthorized  the hub refused the token (close 4401)

const CLIENT = 'console';
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 5000;

export class LiveSocket extends EventTarget {
  constructor(token) {
    super();
    this.token = token;
    this.seq = null;
    this.ws = null;
    this.retries = 0;
    this.timer = null;
    this.stopped = false;
    this.state = 'connecting';
  }

  start() {
    this.connect();
  }

  // A view's subscription while it is shown: onEvent for each event, onResync when it must re-read everything.
  // Returns the view's {unmount()}: it ends both, then runs each clean-up given (a throttled loader's cancel...).
  follow(onEvent, onResync, ...cleanUps) {
    this.addEventListener('event', onEvent);
    this.addEventListener('resync', onResync);
    return {
      unmount: () => {
        this.removeEventListener('event', onEvent);
        this.removeEventListener('resync', onResync);
        cleanUps.forEach((f) => f());
      },
    };
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) {
      this.ws.onclose = null;
      this.ws.close(1000, 'signed out');
    }
  }

  connect() {
    const since = this.seq;
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const params = new URLSearchParams({client: CLIENT});
    if (since !== null) params.set('since', String(since));
    this.setState(this.retries === 0 ? 'connecting' : 'reconnecting', {since});
    const ws = new WebSocket(`${scheme}://${location.host}/api/v1/events?${params}`);
    this.ws = ws;
    ws.onopen = () => ws.send(JSON.stringify({type: 'auth', token: this.token}));
    ws.onmessage = (m) => this.frame(m.data, since);
    ws.onclose = (e) => this.closed(e);
  }

  frame(text, since) {
    let f;
    try {
      f = JSON.parse(text);
    } catch {
      return;
    }
    if (f.type === 'hello') {
      this.retries = 0;
      this.setState('live', {since});
      if (since === null) this.dispatchEvent(new Event('resync'));
    } else if (f.type === 'event') {
      if (this.seq === null || f.seq > this.seq) this.seq = f.seq;
      this.dispatchEvent(new CustomEvent('event', {detail: f}));
    } else if (f.type === 'reset') {
      this.seq = f.seq;
      this.dispatchEvent(new Event('resync'));
    }
  }

  closed(e) {
    this.ws = null;
    if (this.stopped) return;
    if (e.code === 4401) {
      this.stopped = true;
      this.dispatchEvent(new Event('unauthorized'));
      return;
    }
    // 4008 (read too slowly), 1011 (history unavailable), a cut connection: all resume from this.seq.
    const base = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** this.retries);
    const wait = Math.round(base * (0.8 + Math.random() * 0.4));
    this.retries++;
    this.setState('reconnecting', {since: this.seq, retryIn: wait});
    this.timer = setTimeout(() => this.connect(), wait);
  }

  setState(state, detail = {}) {
    this.state = state;
    this.dispatchEvent(new CustomEvent('state', {detail: {state, ...detail}}));
  }
}
