// Many WebSocket subscribers watching delivery events; each acknowledges what it reads.
// k6 run -e WS=ws://127.0.0.1:8080 -e ADMIN_TOKEN=... k6/ws-watchers.js
import ws from 'k6/ws';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const events = new Counter('events_received');

export const options = {
  scenarios: { watchers: { executor: 'constant-vus', vus: 200, duration: '1m' } },
  thresholds: { events_received: ['count>0'], checks: ['rate>0.99'] },
};

const WS = __ENV.WS || 'ws://127.0.0.1:8080';
const TOKEN = __ENV.ADMIN_TOKEN;

export default function () {
  const res = ws.connect(`${WS}/api/v1/events?client=k6-${__VU}`, { headers: { Authorization: `Bearer ${TOKEN}` } }, (socket) => {
    socket.on('message', (text) => {
      const frame = JSON.parse(text);
      if (frame.type === 'event') {
        events.add(1);
        socket.send(JSON.stringify({ ack: frame.seq, state: 'RECEIVED' }));
      }
    });
    socket.setTimeout(() => socket.close(), 55000);
  });
  check(res, { 'upgraded (101)': (r) => r && r.status === 101 });
}
