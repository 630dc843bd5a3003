#!/usr/bin/env bash
# The README's pictures of the operator console, regenerated: runs the console's browser test (headless chromium
# through chromedriver, a gateway on loopback with its own test database), which saves screenshots of the main
# pages under target/console-screenshots/, then copies two of them into docs/ for the README:
#
#   target/console-screenshots/live.png     -> docs/console-live.png     (the live ledger, 1280x800)
#   target/console-screenshots/message.png  -> docs/console-message.png  (an UNKNOWN message: timeline, resolve form)
#
# Installs chromium and chromium-driver when missing (as root). The other screenshots (needs attention, bulk
# resolve, reconnecting, dark, a phone's width) stay under target/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "chromium is not installed: run this as root once, or: sudo apt-get install --no-install-recommends chromium chromium-driver" >&2
    exit 1
  fi
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi

rm -rf target/console-screenshots
mvn -B -q test -Dtest=ConsoleBrowserTest -Dsurefire.failIfNoSpecifiedTests=false
for page in live message; do
  cp "target/console-screenshots/$page.png" "docs/console-$page.png"
  echo "docs/console-$page.png"
done
