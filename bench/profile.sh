#!/usr/bin/env bash
# Where the gateway's CPU goes under a relay load (issue 12): the jar on its embedded PostgreSQL, a warm-up,
# then a measured run of smtp-source into smtp-sink while Java Flight Recorder samples the JVM. Prints the
# run's rate and CPU per message (JVM and PostgreSQL, from /proc), then the hottest methods (self) and the
# gateway's own frames (inclusive), from the recording's execution samples. The recording stays in the
# work directory for `jfr` or JDK Mission Control.
# JFR samples threads that run Java code; time in system calls (socket writes, epoll, fsync) shows better with
# async-profiler (Maven Central: tools.profiler:async-profiler, its linux-x64 library as -agentpath), which
# this script uses instead when ASYNC_PROFILER=/path/to/libasyncProfiler.so is set.
# Usage: bench/profile.sh [messages, default 30000] [size, default 2048] [sessions, default 20]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-30000}
SIZE=${2:-2048}
SESSIONS=${3:-20}
need_postfix_tools
build_jar
work=$(mktemp -d /tmp/ledgerpost-profile.XXXX)
SINK=$(free_port); LP=$(free_port); HTTP=$(free_port)
smtp-sink -u nobody -c "127.0.0.1:$SINK" 2000 > /dev/null 2>&1 &
SINKPID=$!
trap 'kill ${GATEWAY_PID:-} $SINKPID 2>/dev/null || true' EXIT
if [ -n "${ASYNC_PROFILER:-}" ]; then
  PROFILE_OPTS="-agentpath:$ASYNC_PROFILER=start,event=cpu,interval=1ms,file=$work/profile.collapsed,collapsed"
else
  PROFILE_OPTS="-XX:StartFlightRecording=settings=profile,filename=$work/profile.jfr,dumponexit=true"
fi
mkdir -p "$work/lp"
( cd "$work/lp" && LEDGERPOST_SMTP_PORT=$LP LEDGERPOST_HTTP_PORT=$HTTP LEDGERPOST_DOWNSTREAM_PORT=$SINK \
  LEDGERPOST_DOWNSTREAM_STARTTLS=none LEDGERPOST_SMTP_MAXCONNECTIONSPERADDRESS=2000 \
  exec java $PROFILE_OPTS -jar "$OLDPWD/target/ledgerpost.jar" > "$work/gateway.log" 2>&1 ) &
GATEWAY_PID=$!
deadline=$((SECONDS + 180))
until grep -q "Ledgerpost ready" "$work/gateway.log"; do
  (( SECONDS < deadline )) && kill -0 "$GATEWAY_PID" 2>/dev/null || { echo "the gateway did not start"; tail -20 "$work/gateway.log"; exit 1; }
  sleep 0.5
done
PGPID=$(head -1 "$work/lp/data/pg/postmaster.pid")
pg_ticks() {
  local t; t=$(awk '{print $14 + $15 + $16 + $17}' /proc/$PGPID/stat)
  for c in $(pgrep -P "$PGPID"); do t=$((t + $(awk '{print $14 + $15}' /proc/$c/stat 2>/dev/null || echo 0))); done
  echo "$t"
}
echo "warming up (20,000 messages)..."
timeout 300 smtp-source -s "$SESSIONS" -l "$SIZE" -m 20000 -d -f bench@example.com -t sink@example.net "127.0.0.1:$LP"
j0=$(awk '{print $14 + $15}' /proc/$GATEWAY_PID/stat); p0=$(pg_ticks); t0=$(date +%s.%N)
timeout 600 smtp-source -s "$SESSIONS" -l "$SIZE" -m "$N" -d -f bench@example.com -t sink@example.net "127.0.0.1:$LP"
j1=$(awk '{print $14 + $15}' /proc/$GATEWAY_PID/stat); p1=$(pg_ticks); t1=$(date +%s.%N)
kill "$GATEWAY_PID"; wait "$GATEWAY_PID" 2>/dev/null || true   # SIGTERM: the recording is written at exit
python3 -c "print(f'{$N} messages of {$SIZE} bytes over {$SESSIONS} sessions: {$N / ($t1 - $t0):.0f} msg/s; CPU per message: JVM {($j1 - $j0) * 10 / $N:.3f} ms, PostgreSQL {($p1 - $p0) * 10 / $N:.3f} ms (warm-up and start included in the profile below)')"
python3 - "$work" <<'PY'
import collections, json, os, subprocess, sys
work = sys.argv[1]
stacks = collections.Counter()
if os.path.exists(f"{work}/profile.collapsed"):
    for line in open(f"{work}/profile.collapsed"):
        stack, n = line.rstrip("\n").rsplit(" ", 1)
        stacks[tuple(stack.split(";"))] += int(n)
else:
    out = subprocess.run(["jfr", "print", "--json", "--events", "jdk.ExecutionSample", f"{work}/profile.jfr"],
                         capture_output=True, text=True, check=True).stdout
    for e in json.loads(out)["recording"]["events"]:
        st = e["values"].get("stackTrace")
        if st and st["frames"]:
            frames = [f["method"]["type"]["name"] + "." + f["method"]["name"] for f in st["frames"]]
            stacks[tuple(reversed(frames))] += 1
total = sum(stacks.values()) or 1
own, incl = collections.Counter(), collections.Counter()
for frames, n in stacks.items():
    own[frames[-1]] += n
    for f in set(frames):
        incl[f] += n
print(f"\n{total} samples; hottest methods (self):")
for k, c in own.most_common(25):
    print(f"  {c * 100 / total:5.1f}%  {k}")
print("\nthe gateway's own frames (inclusive):")
for k, c in incl.most_common(2000):
    if "ledgerpost" in k and c * 100 / total >= 1.0:
        print(f"  {c * 100 / total:5.1f}%  {k}")
print(f"\nrecording: {work}")
PY
