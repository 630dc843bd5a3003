// The HTTP API as the console calls it. The admin token lives in this tab's sessionStorage only and goes out
// as a bearer header: never in a URL (no query parameter, no hash), never in a log.

const TOKEN = 'ledgerpost.token';
const OPERATOR = 'ledgerpost.operator';

export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN);
  },
  get operator() {
    return sessionStorage.getItem(OPERATOR) ?? '';
  },
  set(token, operator) {
    sessionStorage.setItem(TOKEN, token);
    sessionStorage.setItem(OPERATOR, operator);
  },
  setOperator(operator) {
    sessionStorage.setItem(OPERATOR, operator);
  },
  clear() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(OPERATOR);
  },
};

/** An answer other than 2xx: `status` and the RFC 9457 problem the API sent (or null). */
export class ProblemError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? problem?.title ?? `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

/** The gateway could not be reached (network down, connection cut). */
export class Unreachable extends Error {}

const listeners = new Set();

/** fn() is called when the API refuses the token (401): the session is over. */
export function onUnauthorized(fn) {
  listeners.add(fn);
}

/** body: sent as JSON; text: sent as text/plain (the suppression list's CSV import). */
export async function api(path, {method = 'GET', body, text, headers = {}, token = session.token} = {}) {
  const init = {
    method,
    cache: 'no-store',
    headers: {Accept: 'application/json', Authorization: `Bearer ${token}`, ...headers},
  };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  } else if (text !== undefined) {
    init.headers['Content-Type'] = 'text/plain'; // as the contract lists it, without a charset
    init.body = text;
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new Unreachable('the gateway did not answer');
  }
  const data = await res.json().catch(() => null);
  if (res.status === 401 && token === session.token) {
    listeners.forEach((fn) => fn());
  }
  if (!res.ok) throw new ProblemError(res.status, data);
  return data;
}

/** A query string from the non-empty values of `params`. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
