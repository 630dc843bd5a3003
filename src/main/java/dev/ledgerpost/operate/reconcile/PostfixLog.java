package dev.ledgerpost.operate.reconcile;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/**
 * A Postfix mail log as evidence (docs/design.md §8.4). Reads the two line formats Postfix's logs come in: syslog's
 * ({@code Dec  1 17:12:49 host postfix/cleanup[21285]: ...}, or with an RFC 3339 time stamp as rsyslog writes it
 * by default on Debian) and Postfix's own {@code maillog_file} ({@code Dec 01 17:12:49 host postfix/cleanup[21285]:
 * ...}), from the file and its rotated siblings ({@code mail.log.1}, {@code mail.log.2.gz}, {@code
 * maillog.20241201-101010.gz}). Per queue id it keeps: the {@code cleanup} line with the Message-ID, the {@code qmgr}
 * line with the sender, size and recipient count (the message was queued: the smarthost accepted it), the delivery
 * lines of {@code smtp}, {@code lmtp}, {@code local} and the other delivery agents ({@code to=<...>, status=...}),
 * and a {@code reject}/{@code milter-reject} after the final dot (the smarthost refused it).
 *
 * <p>The line grammar ({@link #parse}, {@link #delivery}, {@link #queued}) is also what downstream tracking's follower
 * reads the log with (docs/design.md §8.13): one grammar for both readers.
 *
 * <p>Blocking: called on a worker. Only queue ids that concern the rows asked about are collected (their Message-ID
 * or sender), in two passes over the files, so memory stays small whatever the size of the log.
 */
public final class PostfixLog {
  /** Lines kept per queue id: a message deferred for days logs an attempt every few minutes. */
  static final int MAX_LINES = 50;
  /** Files read at most: the live one and its most recent rotations. */
  static final int MAX_FILES = 20;
  private static final int MAX_LINE = 8192;

  private static final Pattern ISO = Pattern.compile(
      "^(\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:[.,]\\d+)?(?:Z|[+-]\\d{2}:?\\d{2})?) (\\S+) (\\S+?)(?:\\[\\d+])?: (.*)$");
  private static final Pattern BSD = Pattern.compile(
      "^([A-Z][a-z]{2}) {1,2}(\\d{1,2}) (\\d{2}:\\d{2}:\\d{2})(?:\\.\\d+)? (\\S+) (\\S+?)(?:\\[\\d+])?: (.*)$");
  /** Short queue ids are hex; long ones (enable_long_queue_ids) use digits and consonants only, so no word is one. */
  private static final Pattern QUEUE_ID = Pattern.compile("^([0-9A-F]{6,}|[0-9BCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz]{10,}): (.*)$");
  private static final Pattern MESSAGE_ID = Pattern.compile("^message-id=(.*)$");
  private static final Pattern QUEUED = Pattern.compile("^from=<([^>]*)>, size=(\\d+), nrcpt=(\\d+)");
  private static final Pattern DELIVERY = Pattern.compile("^to=<([^>]*)>,(?: orig_to=<([^>]*)>,)?.* status=(\\w+)(?: \\((.*)\\))?$");
  private static final Pattern REJECT = Pattern.compile("^(?:milter-)?reject: (.*)$");
  private static final Pattern ACTION = Pattern.compile("^(discard|hold|redirect|filter): (.*)$");
  private static final Pattern FROM = Pattern.compile("\\bfrom=<([^>]*)>");
  private static final Pattern TO = Pattern.compile("\\bto=<([^>]*)>");
  private static final DateTimeFormatter BSD_TIME = DateTimeFormatter.ofPattern("yyyy MMM d HH:mm:ss", Locale.ENGLISH);

  private PostfixLog() {}

  /** One parsed line: when, which Postfix program, the queue id (null for lines without one) and what follows it. */
  public record Line(Instant at, String program, String queueId, String text, String raw) {}

  /**
   * A delivery agent's line about one recipient: {@code to=<...>} (and {@code orig_to=<...>} when the address was
   * rewritten), the {@code relay=} that answered ({@code none}: null), {@code dsn=} and {@code status=} (sent, deferred,
   * bounced, expired...), and the parenthesised account after the status (the remote reply or Postfix's own words).
   */
  public record Delivery(String to, String origTo, String relay, String dsn, String status, String detail) {}

  private static final Pattern RELAY = Pattern.compile("\\brelay=([^,\\s]+)");
  private static final Pattern DSN = Pattern.compile("\\bdsn=([245]\\.\\d{1,3}\\.\\d{1,3}),");

  /** What a delivery agent's line says, or null when {@code l} is no such line. */
  public static Delivery delivery(Line l) {
    if (l.queueId() == null) {
      return null;
    }
    Matcher d = DELIVERY.matcher(l.text());
    if (!d.matches()) {
      return null;
    }
    // Only what precedes the status: the reply after it may hold anything, "relay=" and "dsn=" too.
    String head = l.text().substring(0, d.start(3));
    Matcher relay = RELAY.matcher(head);
    Matcher dsn = DSN.matcher(head);
    String r = relay.find() ? relay.group(1) : null;
    return new Delivery(d.group(1), d.group(2) == null || d.group(2).isEmpty() ? null : d.group(2),
        r == null || r.equals("none") ? null : r, dsn.find() ? dsn.group(1) : null, d.group(3), d.group(4));
  }

  /** Whether {@code l} is qmgr's line of a message that entered the queue ({@code from=<...>, size=..., nrcpt=...}). */
  public static boolean queued(Line l) {
    return l.queueId() != null && QUEUED.matcher(l.text()).find();
  }

  /** Everything one queue id's lines say. */
  static final class Record {
    final String queueId;
    Instant firstAt;
    Instant queuedAt;
    Instant rejectedAt;
    /** Every message-id= cleanup logged (one per Message-ID header: a message may carry two), in order. */
    final Set<String> messageIds = new LinkedHashSet<>();
    String from;
    Integer nrcpt;
    boolean queued;
    boolean delivered;
    String action;
    String reject;
    final Set<String> recipients = new LinkedHashSet<>();
    final List<String> deliveries = new ArrayList<>();
    final List<String> lines = new ArrayList<>();

    Record(String queueId) {
      this.queueId = queueId;
    }

    /**
     * ACCEPTED once queued (or delivered, or taken and discarded); REJECTED when refused after the dot; else NONE: it
     * arrived and went no further (its connection was lost before the final dot, or it is still arriving).
     */
    Sighting.Verdict verdict() {
      if (queued || delivered || action != null) {
        return Sighting.Verdict.ACCEPTED;
      }
      return reject != null ? Sighting.Verdict.REJECTED : Sighting.Verdict.NONE;
    }

    Sighting sighting(String source) {
      Sighting.Verdict v = verdict();
      Instant at = v == Sighting.Verdict.REJECTED ? rejectedAt : queuedAt != null ? queuedAt : firstAt;
      String summary = v == Sighting.Verdict.REJECTED
          ? "rejected after the final dot: " + reject
          : v == Sighting.Verdict.NONE ? "arrived as " + queueId + " but was neither queued nor refused"
          : (queued ? "queued as " + queueId : action != null ? action + " (" + queueId + ")" : "delivered (" + queueId + ")")
              + (deliveries.isEmpty() ? "" : "; " + String.join("; ", deliveries));
      boolean all = nrcpt != null && recipients.size() == nrcpt && !recipients.isEmpty();
      return new Sighting(source, "postfix-log", queueId, v, at, null, List.copyOf(messageIds), from, Set.copyOf(recipients), all, nrcpt,
          null, summary, List.copyOf(lines));
    }
  }

  /** What to look for: queue ids whose Message-ID or sender is one of these, in this time range. */
  record Wanted(Set<String> messageIds, Set<String> senders, Instant from, Instant to) {}

  /** Parses one line; null when it is not a Postfix line (or not one this reader understands). */
  public static Line parse(String raw, ZoneId zone, ZonedDateTime reference) {
    if (raw.length() > MAX_LINE) {
      return null;
    }
    Instant at;
    String tag;
    String text;
    Matcher iso = ISO.matcher(raw);
    if (iso.matches()) {
      at = isoTime(iso.group(1), zone);
      tag = iso.group(3);
      text = iso.group(4);
    } else {
      Matcher bsd = BSD.matcher(raw);
      if (!bsd.matches()) {
        return null;
      }
      at = bsdTime(bsd.group(1), bsd.group(2), bsd.group(3), zone, reference);
      tag = bsd.group(5);
      text = bsd.group(6);
    }
    int slash = tag.lastIndexOf('/');
    if (at == null || slash <= 0) {
      return null; // not "postfix/cleanup" (or "postfix-out/smtp"): another program's line
    }
    String program = tag.substring(slash + 1);
    Matcher q = QUEUE_ID.matcher(text);
    if (q.matches()) {
      return new Line(at, program, q.group(1), q.group(2), raw);
    }
    return new Line(at, program, null, text, raw);
  }

  /** rsyslog's RFC 3339 stamp; one without an offset is in {@code zone}. */
  private static Instant isoTime(String s, ZoneId zone) {
    String t = s.replace(',', '.');
    try {
      return OffsetDateTime.parse(t).toInstant();
    } catch (DateTimeParseException e) {
      try {
        return OffsetDateTime.parse(t.replaceFirst("([+-]\\d{2})(\\d{2})$", "$1:$2")).toInstant();
      } catch (DateTimeParseException e2) {
        try {
          return LocalDateTime.parse(t).atZone(zone).toInstant();
        } catch (DateTimeParseException e3) {
          return null;
        }
      }
    }
  }

  /**
   * "Dec  1 17:12:49" has no year and no zone: the zone is the source's, the year the one that puts the line at most a
   * day after {@code reference} (the file's last change: its lines are not later than that).
   */
  private static Instant bsdTime(String month, String day, String time, ZoneId zone, ZonedDateTime reference) {
    try {
      int year = reference.getYear();
      ZonedDateTime t = LocalDateTime.parse(year + " " + month + " " + day + " " + time, BSD_TIME).atZone(zone);
      if (t.isAfter(reference.plusDays(1))) {
        t = LocalDateTime.parse((year - 1) + " " + month + " " + day + " " + time, BSD_TIME).atZone(zone);
      }
      return t.toInstant();
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  /**
   * The log files to read, newest first: {@code path} and its rotated siblings (same directory, its name followed by
   * "." or "-"), without those last changed before {@code notBefore} (no line of theirs can be that late).
   */
  static List<Path> files(Path path, Instant notBefore) throws IOException {
    Path dir = path.toAbsolutePath().getParent();
    String name = path.getFileName().toString();
    List<Path> found = new ArrayList<>();
    if (dir == null || !Files.isDirectory(dir)) {
      return found;
    }
    try (var stream = Files.list(dir)) {
      stream.filter(p -> {
        String n = p.getFileName().toString();
        return n.equals(name) || ((n.startsWith(name + ".") || n.startsWith(name + "-")) && readable(n));
      }).forEach(found::add);
    }
    Map<Path, Instant> modified = new HashMap<>();
    for (Path p : found) {
      modified.put(p, Files.getLastModifiedTime(p).toInstant());
    }
    return found.stream()
        .filter(p -> !modified.get(p).isBefore(notBefore))
        .sorted((a, b) -> modified.get(b).compareTo(modified.get(a)))
        .limit(MAX_FILES)
        .toList();
  }

  /** Plain or gzip; other compressions (.xz, .bz2, .zst) are not read. */
  private static boolean readable(String name) {
    return !(name.endsWith(".xz") || name.endsWith(".bz2") || name.endsWith(".zst") || name.endsWith(".lz4"));
  }

  /**
   * The queue ids that concern {@code wanted}, with all their lines in {@code files}. Two passes: the first finds the
   * queue ids (a Message-ID or sender asked for, at a time in range), the second collects their lines, wherever they
   * are (a message queued just before a rotation is delivered in the next file).
   */
  static Map<String, Record> scan(List<Path> files, ZoneId zone, Wanted wanted) throws IOException {
    Set<String> interesting = new LinkedHashSet<>();
    for (Path f : files) {
      ZonedDateTime reference = Files.getLastModifiedTime(f).toInstant().atZone(zone);
      try (BufferedReader r = reader(f)) {
        for (String raw = r.readLine(); raw != null; raw = r.readLine()) {
          Line l = parse(raw, zone, reference);
          if (l == null || l.queueId() == null || l.at().isBefore(wanted.from()) || l.at().isAfter(wanted.to())) {
            continue;
          }
          if (concerns(l, wanted)) {
            interesting.add(l.queueId());
          }
        }
      }
    }
    Map<String, Record> records = new LinkedHashMap<>();
    if (interesting.isEmpty()) {
      return records;
    }
    // Oldest file first, so each record's lines are in the order Postfix wrote them.
    List<Path> oldestFirst = new ArrayList<>(files);
    java.util.Collections.reverse(oldestFirst);
    for (Path f : oldestFirst) {
      ZonedDateTime reference = Files.getLastModifiedTime(f).toInstant().atZone(zone);
      try (BufferedReader r = reader(f)) {
        for (String raw = r.readLine(); raw != null; raw = r.readLine()) {
          Line l = parse(raw, zone, reference);
          if (l != null && l.queueId() != null && interesting.contains(l.queueId())) {
            add(records.computeIfAbsent(l.queueId(), Record::new), l);
          }
        }
      }
    }
    return records;
  }

  private static boolean concerns(Line l, Wanted wanted) {
    Matcher m = MESSAGE_ID.matcher(l.text());
    if (m.matches()) {
      return wanted.messageIds().contains(Matching.bare(m.group(1)));
    }
    Matcher q = QUEUED.matcher(l.text());
    if (q.find()) {
      return wanted.senders().contains(Matching.address(q.group(1)));
    }
    if (REJECT.matcher(l.text()).matches()) {
      Matcher f = FROM.matcher(l.text());
      return f.find() && wanted.senders().contains(Matching.address(f.group(1)));
    }
    return false;
  }

  /** What one line says about its queue id. */
  static void add(Record rec, Line l) {
    if (rec.firstAt == null) {
      rec.firstAt = l.at();
    }
    if (rec.lines.size() < MAX_LINES) {
      rec.lines.add(l.raw());
    }
    String text = l.text();
    Matcher m = MESSAGE_ID.matcher(text);
    if (m.matches()) {
      rec.messageIds.add(m.group(1).trim()); // every one: the ledger keeps the first header, Postfix logs each
      return;
    }
    Matcher q = QUEUED.matcher(text);
    if (q.find()) {
      rec.queued = true;
      rec.from = q.group(1);
      rec.nrcpt = Integer.parseInt(q.group(3));
      if (rec.queuedAt == null) {
        rec.queuedAt = l.at();
      }
      return;
    }
    Matcher d = DELIVERY.matcher(text);
    if (d.matches()) {
      rec.delivered = true;
      String to = d.group(2) != null && !d.group(2).isEmpty() ? d.group(2) : d.group(1);
      rec.recipients.add(to);
      if (rec.deliveries.size() < 10) {
        rec.deliveries.add(d.group(3) + " to " + to + (d.group(4) == null ? "" : " (" + d.group(4) + ")"));
      }
      return;
    }
    Matcher r = REJECT.matcher(text);
    if (r.matches() && afterTheDot(l, r.group(1))) {
      rec.reject = r.group(1);
      rec.rejectedAt = l.at();
      Matcher f = FROM.matcher(text);
      if (f.find()) {
        rec.from = f.group(1);
      }
      Matcher t = TO.matcher(text);
      if (t.find()) {
        rec.recipients.add(t.group(1));
      }
      return;
    }
    Matcher a = ACTION.matcher(text);
    if (a.matches() && !a.group(1).equals("filter")) {
      rec.action = a.group(1);
      Matcher f = FROM.matcher(text);
      if (f.find() && rec.from == null) {
        rec.from = f.group(1);
      }
    }
  }

  /**
   * A refusal of the message itself: cleanup's header and body checks, or a refusal at END-OF-MESSAGE (a milter, the
   * end-of-data restrictions). smtpd's refusal of one RCPT in a transaction that already has a queue id is not one.
   */
  private static boolean afterTheDot(Line l, String what) {
    return l.program().equals("cleanup") || what.startsWith("END-OF-MESSAGE");
  }

  private static BufferedReader reader(Path f) throws IOException {
    InputStream in = Files.newInputStream(f);
    if (f.getFileName().toString().endsWith(".gz")) {
      in = new GZIPInputStream(in, 64 * 1024);
    }
    // A log line in another encoding is read with replacement characters, never refused.
    return new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 64 * 1024);
  }
}
