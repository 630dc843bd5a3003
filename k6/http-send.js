// Sends mail through the HTTP API with idempotency keys; thresholds on error rate and latency.
// k6 run -e BASE=http://127.0.0.1:8080 -e API_KEY=... k6/http-send.js
// 50 requests/s is above the default api.rateLimit (10/s per key): make the key with its own rate,
//   API_KEY=$(java -jar target/ledgerpost.jar keys add k6 --rate 100)   and   kill -HUP <gateway PID>
// A 429 is counted as what it is (rate_limited: the key's bucket was empty), not as a failed send.
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';
import { uuidv4 } from 'https://jslib.k6.io/k6-utils/1.4.0/index.js';

export const options = {
  scenarios: {
    send: { executor: 'constant-arrival-rate', rate: 50, timeUnit: '1s', duration: '1m', preAllocatedVUs: 50, maxVUs: 200 },
  },
  thresholds: {
    rate_limited: ['count==0'],
    http_req_failed: ['rate<0.01'],
    'http_req_duration{expected_response:true}': ['p(95)<500', 'p(99)<1000'],
    checks: ['rate>0.99'],
  },
};

const BASE = __ENV.BASE || 'http://127.0.0.1:8080';
const KEY = __ENV.API_KEY;
const rateLimited = new Counter('rate_limited');
// 429 is an expected answer of a rate limit, reported by its own counter rather than as a failed request.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 399 }, 429));

export default function () {
  const body = JSON.stringify({
    from: 'k6@example.com',
    to: ['sink@example.net'],
    subject: 'k6 load ' + __VU + '-' + __ITER,
    text: 'Sent by k6 through Ledgerpost.',
  });
  const res = http.post(`${BASE}/api/v1/messages`, body, {
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${KEY}`, 'Idempotency-Key': uuidv4() },
  });
  if (res.status === 429) {
    rateLimited.add(1); // the key's token bucket was empty: raise its rate (keys add --rate), or offer less
    return;
  }
  check(res, {
    'accepted (200)': (r) => r.status === 200,
    'has an operation': (r) => r.headers['Location'] !== undefined,
  });
}
