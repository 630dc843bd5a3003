"""Summarise a JFR recording per relayed message (bench/throughput-profile.sh): usage jfr_summary.py RECORDING MESSAGES.
Execution samples (Java code) by thread, by method (self), by package (self) and by the nearest gateway class on the
stack (self and everything it called, so a library's time counts for the gateway class that called it); native samples
(threads in system calls) by thread and method; allocation per message (jdk.ObjectAllocationSample weights) by class
and by allocating gateway method; GC and monitor counts. Lambda frames ($$Lambda) are skipped: the lambda$ method
below one names the code."""
import collections, json, subprocess, sys

path, n = sys.argv[1], int(sys.argv[2])


def events(name):
    out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "96", "--events", name, path],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["recording"]["events"]


def frames_of(e):
    st = e["values"].get("stackTrace")
    if not st:
        return []
    out = []
    for f in st["frames"]:
        t = f["method"]["type"]["name"].replace("/", ".")
        if "$$Lambda" in t:
            continue
        out.append(t + "." + f["method"]["name"])
    return out


def klass(frame):
    return frame.rsplit(".", 1)[0].split("$")[0]


def package(frame):
    parts = klass(frame).split(".")[:-1]
    return ".".join(parts[:4]) if parts[:2] == ["dev", "ledgerpost"] else ".".join(parts[:3])


def runtime(frames):
    """A sample without a gateway frame: which library's work it was."""
    joined = " ".join(frames)
    for key, name in (("io.vertx.pgclient", "(pg client, no gateway frame)"), ("io.vertx.sqlclient", "(pg client, no gateway frame)"),
                      ("io.micrometer", "(metrics, no gateway frame)"), ("ch.qos.logback", "(logging, no gateway frame)"),
                      ("io.vertx.core.http", "(vert.x http)"), ("io.netty", "(netty/vert.x event loop, no gateway frame)"),
                      ("io.vertx", "(vert.x, no gateway frame)")):
        if key in joined:
            return name
    return "(other: " + (package(frames[-1]) if frames else "?") + ")"


def show(title, counter, total, k=25, per=None):
    print(title)
    for key, c in counter.most_common(k):
        extra = f"  {c / per:7.2f}" if per else ""
        print(f"  {c * 100 / total:5.1f}%{extra}  {key}")


def sample_report(name, label):
    samples = [e for e in events(name) if frames_of(e)]
    total = len(samples) or 1
    own, pkg, near, thread = (collections.Counter() for _ in range(4))
    incl = collections.Counter()
    for e in samples:
        frames = frames_of(e)
        own[frames[0]] += 1
        pkg[package(frames[0])] += 1
        gw = next((klass(f) for f in frames if f.startswith("dev.ledgerpost")), None)
        near[gw or runtime(frames)] += 1
        for f in set(frames):
            if f.startswith("dev.ledgerpost"):
                incl[f] += 1
        t = e["values"].get("sampledThread") or {}
        thread[(t.get("javaName") or t.get("osName") or "?").rstrip("0123456789-")] += 1
    print(f"\n== JFR {label}: {len(samples)} samples ({len(samples) / n * 1000:.0f} per 1000 messages) ==")
    show("threads:", thread, total, 8)
    show("hottest methods (self):", own, total, 30)
    if name == "jdk.ExecutionSample":
        show("packages (self):", pkg, total, 25)
        show("nearest gateway class on the stack (self + what it called):", near, total, 30)
        show("the gateway's methods (inclusive, top 40):", incl, total, 40)
    if name == "jdk.ExecutionSample":
        themes = collections.Counter()
        for e in samples:
            joined = " ".join(frames_of(e))
            for theme, keys in THEMES:
                if any(k in joined for k in keys):
                    themes[theme] += 1
        show("themes (inclusive: a sample with the theme anywhere on its stack; they overlap):", themes, total, 30)
    return samples


THEMES = [
    ("SMTP intake (dev.ledgerpost.intake.smtp)", ["dev.ledgerpost.intake.smtp"]),
    ("smarthost client (dev.ledgerpost.relay.smarthost)", ["dev.ledgerpost.relay.smarthost"]),
    ("ledger writes (OpenBatch, SettleBatch, GroupCommit)", ["dev.ledgerpost.ledger."]),
    ("pg client (io.vertx.pgclient / sqlclient)", ["io.vertx.pgclient", "io.vertx.sqlclient"]),
    ("outbox publisher and hub (dev.ledgerpost.publish)", ["dev.ledgerpost.publish"]),
    ("outcome journal (dev.ledgerpost.relay.retry)", ["dev.ledgerpost.relay.retry"]),
    ("SHA-256 (MessageDigest)", ["java.security.MessageDigest", "sun.security.provider"]),
    ("metrics (io.micrometer)", ["io.micrometer"]),
    ("logging (slf4j, logback)", ["org.slf4j", "ch.qos.logback"]),
    ("JSON (jackson, vertx json)", ["com.fasterxml.jackson", "io.vertx.core.json"]),
    ("regex (java.util.regex)", ["java.util.regex"]),
    ("event bus (io.vertx.core.eventbus, platform.bus)", ["io.vertx.core.eventbus", "dev.ledgerpost.platform.bus.Bus"]),
    ("resubmission fingerprint", ["dev.ledgerpost.relay.resubmission"]),
    ("suppression", ["dev.ledgerpost.suppression", "Suppression"]),
    ("netty socket write/flush", ["io.netty.channel.nio.AbstractNioByteChannel.doWrite", "sun.nio.ch.SocketChannelImpl.write"]),
    ("netty socket read", ["sun.nio.ch.SocketChannelImpl.read"]),
    ("time (java.time)", ["java.time."]),
]


sample_report("jdk.ExecutionSample", "Java execution samples (1 ms)")
sample_report("jdk.NativeMethodSample", "native samples (5 ms; threads in system calls or parked in native)")

alloc = events("jdk.ObjectAllocationSample")
weight = sum(e["values"]["weight"] for e in alloc) or 1
by_class, by_site = collections.Counter(), collections.Counter()
for e in alloc:
    w = e["values"]["weight"]
    by_class[e["values"]["objectClass"]["name"].replace("/", ".")] += w
    frames = frames_of(e)
    site = next((f for f in frames if f.startswith("dev.ledgerpost")), None) or runtime(frames) + " " + (frames[0] if frames else "")
    by_site[site] += w
print(f"\n== allocation (jdk.ObjectAllocationSample weights): {weight / n / 1024:.1f} KiB per message ==")
print("by class (share, KiB per message):")
for k, w in by_class.most_common(15):
    print(f"  {w * 100 / weight:5.1f}%  {w / n / 1024:6.2f}  {k}")
print("by the first gateway method of the allocating stack (else the library and top frame):")
for k, w in by_site.most_common(30):
    print(f"  {w * 100 / weight:5.1f}%  {w / n / 1024:6.2f}  {k}")
gcs = events("jdk.GarbageCollection")
print(f"\nGC: {len(gcs)} collections ({len(gcs) / n * 1000:.2f} per 1000 messages): " +
      ", ".join(f"{k} {v}" for k, v in collections.Counter(e['values']['name'] for e in gcs).items()))
mon = events("jdk.JavaMonitorEnter")
print(f"monitor enters blocked over the profile threshold (20 ms): {len(mon)}")
for k, c in collections.Counter(e["values"]["monitorClass"]["name"] for e in mon).most_common(5):
    print(f"  {c}  {k}")
park = events("jdk.ThreadPark")
print(f"thread parks over the profile threshold (20 ms): {len(park)}")
