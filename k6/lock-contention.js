// Sends while repeatedly asking the gateway (chaos.enabled: true) to hold ledger table locks.
// Every response must be 200 (sent and recorded) or 503 (not recorded, nothing sent); at the end every
// 200 is checked through the API to be SENT (or still PENDING while its settle is retried).
// k6 run -e BASE=http://127.0.0.1:8080 -e API_KEY=... -e ADMIN_TOKEN=... k6/lock-contention.js
// 20 VUs send faster than the default api.rateLimit (10/s per key): give the key its own rate,
//   API_KEY=$(java -jar target/ledgerpost.jar keys add k6 --rate 200)   and   kill -HUP <gateway PID>
// A 429 (the key's bucket was empty) is counted as rate_limited, not as an unexpected status.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { uuidv4 } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';

const unexpected = new Counter('unexpected_status');
const rateLimited = new Counter('rate_limited');
http.setResponseCallback(http.expectedStatuses(200, 503, 429));

export const options = {
  scenarios: {
    senders: { executor: 'constant-vus', vus: 20, duration: '1m', exec: 'send' },
    chaos: { executor: 'constant-vus', vus: 1, duration: '1m', exec: 'lock' },
  },
  thresholds: { unexpected_status: ['count==0'], rate_limited: ['count==0'], checks: ['rate==1'] },
};

const BASE = __ENV.BASE || 'http://127.0.0.1:8080';
const KEY = __ENV.API_KEY;
const ADMIN = __ENV.ADMIN_TOKEN;
const TABLE_SETS = [['messages'], ['recipients'], ['outbox'], ['messages', 'recipients', 'outbox']];

export function send() {
  const res = http.post(`${BASE}/api/v1/messages`,
    JSON.stringify({ from: 'k6@example.com', to: ['sink@example.net'], subject: 'contention', text: 'x' }),
    { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}`, 'Idempotency-Key': uuidv4() } });
  if (res.status === 429) {
    rateLimited.add(1); // not the locks' doing: the key's rate is below what 20 VUs offer
  } else if (res.status !== 200 && res.status !== 503) {
    unexpected.add(1);
  }
  if (res.status === 200) {
    const op = http.get(`${BASE}${res.headers['Location']}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    check(op, { 'a 200 is recorded': (r) => ['SENT', 'PENDING'].includes(r.json('message.status')) });
  }
}

export function lock() {
  const tables = TABLE_SETS[Math.floor(Math.random() * TABLE_SETS.length)];
  const millis = 100 + Math.floor(Math.random() * 1400);
  http.post(`${BASE}/api/v1/chaos/locks`, JSON.stringify({ tables, millis }),
    { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ADMIN}` } });
  sleep(millis / 1000 + 0.3);
}
