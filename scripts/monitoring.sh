#!/usr/bin/env bash
# Prometheus against a running gateway, in one command, on loopback: Debian's prometheus with the shipped
# scrape configuration and alert rules (grafana/prometheus/). Installs the package when it is missing (as
# root), checks and unit-tests the rules with promtool, then runs Prometheus in the foreground: Ctrl-C stops it.
#
#   scripts/monitoring.sh [GATEWAY]        GATEWAY: host:port of the gateway's HTTP API (default 127.0.0.1:8080)
#
#   PROMETHEUS_PORT=9090                   where Prometheus listens (127.0.0.1 only)
#   PROMETHEUS_DIR=data/prometheus         its configuration copy and time series
#   METRICS_TOKEN_FILE=data/admin-token    with metrics.access: token, the file of the admin token to scrape with
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-127.0.0.1:8080}
port=${PROMETHEUS_PORT:-9090}
work=${PROMETHEUS_DIR:-data/prometheus}

if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "prometheus is not installed: run this as root once, or: sudo apt-get install --no-install-recommends prometheus" >&2
    exit 1
  fi
  echo "installing Debian's prometheus"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

promtool check rules grafana/prometheus/ledgerpost-rules.yml
promtool test rules grafana/prometheus/ledgerpost-rules.test.yml

mkdir -p "$work"
work=$(cd "$work" && pwd)
cp grafana/prometheus/ledgerpost-rules.yml "$work/"
sed "s/127\.0\.0\.1:8080/$target/" grafana/prometheus/prometheus.yml > "$work/prometheus.yml"
if [ -n "${METRICS_TOKEN_FILE:-}" ]; then
  token=$(readlink -f "$METRICS_TOKEN_FILE")
  sed -i "s|^    metrics_path: /metrics|    metrics_path: /metrics\n    authorization: {credentials_file: \"$token\"}|" "$work/prometheus.yml"
fi
promtool check config "$work/prometheus.yml" >/dev/null

echo "Prometheus on http://127.0.0.1:$port, scraping http://$target/metrics every 15 s (files in $work); Ctrl-C stops it"
exec prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$port" --storage.tsdb.retention.time=15d
