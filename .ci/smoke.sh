#!/usr/bin/env bash
# The README's run command, tried for real: the gateway on its embedded PostgreSQL relays a swaks
# message to a local sink, the API shows it SENT, and SIGTERM stops it cleanly. Loopback only.
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

python3 scripts/smtp_sink.py "$SINK" --dir "$work/sink" > "$work/sink.log" 2>&1 &
pids+=($!)

mvn -q -B -DskipTests package
export LEDGERPOST_DOWNSTREAM_PORT=$SINK LEDGERPOST_SMTP_PORT=$SMTP LEDGERPOST_HTTP_PORT=$HTTP
export LEDGERPOST_LEDGER_DATADIR="$work/data/pg"
java -jar target/ledgerpost.jar > "$work/gateway.log" 2>&1 &
gw=$!
pids+=($gw)

deadline=$((SECONDS + 180))
until grep -q "Ledgerpost ready" "$work/gateway.log"; do
  if (( SECONDS > deadline )) || ! kill -0 "$gw" 2>/dev/null; then
    echo "smoke: the gateway did not start"; cat "$work/gateway.log"; exit 1
  fi
  sleep 1
done

out=$(swaks --server "127.0.0.1:$SMTP" --from alice@example.com --to bob@example.net \
  --header "Subject: smoke test" --body "It works." 2>&1) || { echo "$out"; exit 1; }
echo "$out" | tail -6
id=$(echo "$out" | grep -o 'queued as [0-9a-f-]\{36\}' | head -1 | cut -d' ' -f3)
[ -n "$id" ] || { echo "smoke: no ledger id in the reply"; exit 1; }
grep -q "^Received: from " "$work/sink/000001.eml" || { echo "smoke: the sink has no message"; exit 1; }

token=$(cat "$work/data/admin-token")
status=$(python3 - "$HTTP" "$token" "$id" <<'PY'
import json, sys, urllib.request
port, token, mid = sys.argv[1:4]
req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/messages/{mid}", headers={"Authorization": f"Bearer {token}"})
print(json.load(urllib.request.urlopen(req, timeout=10))["status"])
PY
)
[ "$status" = "SENT" ] || { echo "smoke: ledger status is $status, expected SENT"; exit 1; }

# The operator CLI of the same jar, against the running gateway: nothing is stale.
stale=$(java -jar target/ledgerpost.jar messages stale --api "http://127.0.0.1:$HTTP" --token-file "$work/data/admin-token")
echo "$stale" | grep -q "^0 stale\|, 0 stale" || { echo "smoke: messages stale said: $stale"; exit 1; }

kill -TERM "$gw"
deadline=$((SECONDS + 60))
while kill -0 "$gw" 2>/dev/null; do
  (( SECONDS > deadline )) && { echo "smoke: the gateway did not stop on SIGTERM"; exit 1; }
  sleep 1
done
grep -q "Ledgerpost stopped" "$work/gateway.log" || { echo "smoke: no clean stop"; tail -20 "$work/gateway.log"; exit 1; }
echo "smoke test OK: swaks -> gateway ($id SENT) -> sink; SIGTERM stopped it cleanly"
