#!/usr/bin/env bash
# The README's test command: installs what the test suite needs and is missing, then runs `mvn -B test`.
#
# The suite runs real programs where users have them: HAProxy (PROXY protocol, cluster and deploy tests),
# Postfix (interop and reconcile tests, private instances on loopback), Chromium with its chromedriver (the
# console's browser tests), promtool from Debian's prometheus (the alert rules' unit test), openssl, Python 3,
# strace (it watches a child JVM create the generated secrets), nodemailer from npm (client library test), and the
# HA ledger of deploy/ha/: PostgreSQL 15's server programs (also a streaming standby of its own for the standby
# check's test), Patroni and etcd (the fail-over test).
# On Debian or Ubuntu, run as root (or with sudo), it installs the missing ones with apt-get and npm; elsewhere
# it prints what to install and stops (exit 2).
#
#   scripts/test.sh                      install what is missing, then the whole suite
#   scripts/test.sh -Dtest=ApiTest       arguments go to Maven
#   scripts/test.sh --install-only       install what is missing, run no test
#   scripts/test.sh --check              list what is missing, install nothing (exit 2 if anything is)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=test
case "${1:-}" in
  --install-only) mode=install; shift ;;
  --check) mode=check; shift ;;
esac

# name of the Debian package | the file or command that shows it is installed
requirements=(
  "haproxy|haproxy"
  "postfix|/usr/sbin/postfix"
  "chromium|/usr/bin/chromium"
  "chromium-driver|/usr/bin/chromedriver"
  "prometheus|promtool"
  "openssl|openssl"
  "python3|python3"
  "nodejs|node"
  "npm|npm"
  "strace|strace"
  "postgresql-15|/usr/lib/postgresql/15/bin/postgres"
  "patroni|/usr/bin/patroni"
  "etcd-server|/usr/bin/etcd"
)

# A path may be a pattern (PostgreSQL's programs live under its version): any match will do.
present() {
  if [[ $1 == /* ]]; then
    local f
    for f in $1; do [ -x "$f" ] && return 0; done
    return 1
  fi
  command -v "$1" >/dev/null 2>&1
}

missing=()
for r in "${requirements[@]}"; do
  present "${r#*|}" || missing+=("${r%%|*}")
done
node_missing=0
[ -d src/test/node/node_modules/nodemailer ] || node_missing=1

if (( ${#missing[@]} == 0 && node_missing == 0 )); then
  echo "test tools: all present"
elif [[ $mode == check ]]; then
  (( ${#missing[@]} )) && echo "missing Debian packages: ${missing[*]}"
  (( node_missing )) && echo "missing npm packages: npm ci --prefix src/test/node"
  exit 2
else
  if (( ${#missing[@]} )); then
    if ! command -v apt-get >/dev/null 2>&1; then
      echo "scripts/test.sh installs with apt-get (Debian, Ubuntu); on this system install: ${missing[*]}" \
           "(the packages' own names may differ), then run: npm ci --prefix src/test/node && mvn -B test" >&2
      exit 2
    fi
    sudo=()
    if (( EUID != 0 )); then
      command -v sudo >/dev/null 2>&1 || { echo "installing ${missing[*]} needs root: run as root or install sudo" >&2; exit 2; }
      sudo=(sudo)
    fi
    echo "installing: ${missing[*]} (apt-get, a few minutes the first time)"
    export DEBIAN_FRONTEND=noninteractive
    # Postfix without a system instance of its own: the tests start private instances on loopback.
    echo "postfix postfix/main_mailer_type select No configuration" | "${sudo[@]}" debconf-set-selections
    "${sudo[@]}" apt-get update -qq >/dev/null
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if (( node_missing )); then
    echo "installing nodemailer (npm ci --prefix src/test/node)"
    npm ci --prefix src/test/node --no-audit --no-fund >/dev/null
  fi
  echo "test tools: installed"
fi

[[ $mode == test ]] || exit 0
exec mvn -B test "$@"
