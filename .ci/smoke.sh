#!/usr/bin/env bash
# The README's five-minute tour, tried for real: the jar on its embedded PostgreSQL, with a copy of the shipped
# conf/gateway.yaml (api.keysFile uncommented, as the tour says), relays a swaks message to a local sink; the API
# shows it SENT; a key made by `ledgerpost keys add` sends over HTTP; a key added while the gateway runs works
# after SIGHUP; a restarted sink numbers on; a stopped sink means 451 4.4.1; SIGTERM stops it cleanly.
# Loopback only, free ports (the tour's fixed ports may be taken), everything under one temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v swaks >/dev/null 2>&1; then
  echo "installing swaks"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq swaks >/dev/null
fi

work=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
SINK=$(free_port); SMTP=$(free_port); HTTP=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
fail() { echo "smoke: $*"; tail -30 "$work/gateway.log" 2>/dev/null || true; exit 1; }
wait_for() { # wait_for SECONDS FILE PATTERN: the pattern appears in the file within the time
  local deadline=$((SECONDS + $1))
  until grep -q "$3" "$2" 2>/dev/null; do
    (( SECONDS > deadline )) && return 1
    sleep 1
  done
}
sinks=0
start_sink() { # each start logs to its own file, so "listening" is this start's
  sinks=$((sinks + 1))
  python3 scripts/smtp_sink.py "$SINK" --dir "$work/sink" > "$work/sink-$sinks.log" 2>&1 &
  sink=$!
  pids+=($sink)
  wait_for 20 "$work/sink-$sinks.log" "listening on 127.0.0.1:$SINK" || fail "the sink did not start"
}
send_http() { # send_http KEY: prints the HTTP status, the body into $work/http.json
  curl -s -o "$work/http.json" -w '%{http_code}' -H "Authorization: Bearer $1" \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" -H 'Content-Type: application/json' \
    "http://127.0.0.1:$HTTP/api/v1/messages" \
    -d '{"from": "alice@example.com", "to": ["bob@example.net"], "subject": "over HTTP", "text": "It works."}'
}
cli() { java -jar target/ledgerpost.jar "$@"; }

# 1. The sink.
start_sink

# The tour's configuration: the shipped file with api.keysFile uncommented. Its relative paths resolve against
# its own directory: ../data/pg is $work/data/pg, api-keys is $work/conf/api-keys.
mkdir -p "$work/conf"
# The shipped file as git holds it (the tour edits the working copy), or the working copy outside a checkout.
{ git show :conf/gateway.yaml 2>/dev/null || cat conf/gateway.yaml; } \
  | sed 's/^  # keysFile: api-keys /  keysFile: api-keys   /' > "$work/conf/gateway.yaml"
grep -q '^  keysFile: api-keys' "$work/conf/gateway.yaml" || fail "conf/gateway.yaml has no commented keysFile line"

[ -n "${SMOKE_JAR_BUILT:-}" ] || mvn -q -B -DskipTests package   # SMOKE_JAR_BUILT=1: the jar was just built
export LEDGERPOST_DOWNSTREAM_PORT=$SINK LEDGERPOST_SMTP_PORT=$SMTP LEDGERPOST_HTTP_PORT=$HTTP

# 5 (first half). A key made before the start, as the tour says: printed once, only its hash in the file.
KEY=$(cli keys add app --config "$work/conf/gateway.yaml" 2> "$work/keys.err") || { cat "$work/keys.err"; fail "keys add failed"; }
grep -q "^app:" "$work/conf/api-keys" || fail "keys add wrote no line for app"
grep -q -- "$KEY" "$work/conf/api-keys" && fail "the keys file holds the key itself"

# 2. The gateway.
java -jar target/ledgerpost.jar --config "$work/conf/gateway.yaml" > "$work/gateway.log" 2>&1 &
gw=$!
pids+=($gw)
deadline=$((SECONDS + 180))
until grep -q "Ledgerpost ready" "$work/gateway.log"; do
  if (( SECONDS > deadline )) || ! kill -0 "$gw" 2>/dev/null; then fail "the gateway did not start"; fi
  sleep 1
done
grep -q "configuration from $work/conf/gateway.yaml; relative paths resolve against $work/conf" "$work/gateway.log" \
  || fail "the start-up log does not say which configuration it read"
grep -q "(PID $gw;" "$work/gateway.log" || fail "the ready line does not name the PID"

# 3. swaks.
out=$(swaks --server "127.0.0.1:$SMTP" --from alice@example.com --to bob@example.net \
  --header "Subject: smoke test" --body "It works." 2>&1) || { echo "$out"; exit 1; }
echo "$out" | tail -6
id=$(echo "$out" | grep -o 'queued as [0-9a-f-]\{36\}' | sed -n 1p | cut -d' ' -f3)
[ -n "$id" ] || fail "no ledger id in the reply"
grep -q "^Received: from " "$work/sink/000001.eml" || fail "the sink has no message"

# 4. The ledger through the API, with the generated admin token.
token=$(cat "$work/data/admin-token")
status=$(python3 - "$HTTP" "$token" "$id" <<'PY'
import json, sys, urllib.request
port, token, mid = sys.argv[1:4]
req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/messages/{mid}", headers={"Authorization": f"Bearer {token}"})
m = json.load(urllib.request.urlopen(req, timeout=10))
r = m["recipients"][0]
assert r["rcptReply"].startswith("250") and r["reply"].startswith("250"), r
print(m["status"])
PY
)
[ "$status" = "SENT" ] || fail "ledger status is $status, expected SENT"

# The operator CLI of the same jar, against the running gateway: nothing is stale, the message shows.
stale=$(cli messages stale --api "http://127.0.0.1:$HTTP" --token-file "$work/data/admin-token")
echo "$stale" | grep -q "^0 stale\|, 0 stale" || fail "messages stale said: $stale"
cli messages show "$id" --api "http://127.0.0.1:$HTTP" --token-file "$work/data/admin-token" | grep -q "status:  *SENT" \
  || fail "messages show does not say SENT"

# 5. HTTP with the key made by keys add.
code=$(send_http "$KEY")
[ "$code" = 200 ] && grep -q '"status":"SENT"' "$work/http.json" || { cat "$work/http.json"; fail "HTTP send answered $code"; }
[ -f "$work/sink/000002.eml" ] || fail "the HTTP send is not in the sink"

# A key added while the gateway runs: refused until SIGHUP, then taken.
KEY2=$(cli keys add app2 --config "$work/conf/gateway.yaml" 2>/dev/null)
code=$(send_http "$KEY2")
[ "$code" = 401 ] || fail "a key not yet reloaded answered $code, expected 401"
kill -HUP "$gw"
wait_for 30 "$work/gateway.log" "SIGHUP: .* credential source(s) reloaded" || fail "no reload logged after SIGHUP"
code=$(send_http "$KEY2")
[ "$code" = 200 ] || { cat "$work/http.json"; fail "after SIGHUP the new key answered $code"; }

# A restarted sink numbers on from the files it finds: nothing overwritten.
kill "$sink"; wait "$sink" 2>/dev/null || true
first=$(sha256sum "$work/sink/000001.eml")
start_sink
swaks --server "127.0.0.1:$SMTP" --from alice@example.com --to bob@example.net --body "after a sink restart" >/dev/null 2>&1 \
  || fail "no 250 after the sink restarted"
[ -f "$work/sink/000004.eml" ] || { ls "$work/sink"; fail "the restarted sink did not number on"; }
[ "$(sha256sum "$work/sink/000001.eml")" = "$first" ] || fail "the restarted sink overwrote 000001.eml"

# 6. A stopped sink: 451 4.4.1, and the log says why (once).
kill "$sink"; wait "$sink" 2>/dev/null || true
out=$(swaks --server "127.0.0.1:$SMTP" --from alice@example.com --to bob@example.net --body "nobody listens" 2>&1 || true)
echo "$out" | grep -q "451 4.4.1" || { echo "$out" | tail -5; fail "a stopped sink did not mean 451 4.4.1"; }
grep -q "downstream 127.0.0.1:$SINK unreachable" "$work/gateway.log" || fail "the unreachable downstream is not logged"

kill -TERM "$gw"
deadline=$((SECONDS + 60))
while kill -0 "$gw" 2>/dev/null; do
  (( SECONDS > deadline )) && fail "the gateway did not stop on SIGTERM"
  sleep 1
done
grep -q "Ledgerpost stopped" "$work/gateway.log" || fail "no clean stop"
echo "smoke test OK: swaks -> gateway ($id SENT) -> sink; HTTP with keys add; a key taken on SIGHUP; sink restart numbered on; 451 4.4.1 with the sink down; SIGTERM stopped it cleanly"
