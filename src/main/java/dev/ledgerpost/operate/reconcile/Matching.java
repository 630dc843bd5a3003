package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Confidence;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Which evidence describes a ledger row, and how sure that is (docs/design.md §8.4). Pure: no I/O, no clock.
 *
 * <p>A sighting fits a row when its time is within the window around the row's received_at and nothing it knows
 * contradicts the row (another Message-ID, another sender, a recipient the row does not have, another hash of the
 * sent bytes). It is then {@code exact} when the Message-ID and the envelope (sender and recipients) match, or the
 * hash of the bytes the smarthost was sent matches, or the source knows the row for certain; {@code weak} when only
 * the Message-ID, or only the envelope, matches. Evidence another row holds is never this row's: {@code claimed}
 * holds the queue ids other rows' recorded replies name ("queued as ...") and the evidence of other rows' proposals,
 * and the job always passes them (a client that heard 451 and sent the message again has two rows and two queue ids,
 * and a single sighting left after the other row's is no proof that it is this row's). Two different pieces of
 * evidence that still fit one row equally well make the finding weak, and so does a rival at the chosen one's source
 * that has no verdict (a copy that reached the smarthost and was never queued: it may be this row's own attempt).
 */
final class Matching {
  static final String MESSAGE_ID = "message-id";
  static final String SENDER = "sender";
  static final String RECIPIENTS = "recipients";
  static final String TIME = "time";
  static final String SHA256 = "sent-sha256";
  static final String ROW = "row";
  private static final Pattern QUEUED_AS = Pattern.compile("queued as ([A-Za-z0-9][A-Za-z0-9._-]*)");

  private Matching() {}

  /** A sighting that fits a row, what matched, and how sure that makes it. */
  record Fit(Sighting sighting, Confidence confidence, List<String> matched) {}

  /** The evidence chosen for a row; {@code alternatives} are the others that fit as well (then it is weak). */
  record Finding(Fit chosen, Confidence confidence, List<Fit> alternatives) {
    boolean ambiguous() {
      return !alternatives.isEmpty();
    }
  }

  /** The queue ids a smarthost named in replies ("250 2.0.0 Ok: queued as 80F7023416C"). */
  static Set<String> queuedAs(List<String> replies) {
    java.util.HashSet<String> ids = new java.util.HashSet<>();
    for (String r : replies) {
      java.util.regex.Matcher m = QUEUED_AS.matcher(r == null ? "" : r);
      while (m.find()) {
        ids.add(m.group(1));
      }
    }
    return ids;
  }

  static Optional<Finding> find(Candidate c, List<Sighting> sightings, Duration window, Set<String> claimed) {
    List<Fit> fits = new ArrayList<>();
    List<Fit> open = new ArrayList<>();
    for (Sighting s : sightings) {
      if (claimed.contains(s.ref()) || claimed.contains(s.source() + ":" + s.ref())) {
        continue;
      }
      fit(c, s, window).ifPresent(f -> (s.verdict() == Sighting.Verdict.NONE ? open : fits).add(f));
    }
    if (fits.isEmpty()) {
      return Optional.empty(); // a copy without a verdict says nothing of what became of it
    }
    Confidence best = fits.stream().anyMatch(f -> f.confidence() == Confidence.EXACT) ? Confidence.EXACT : Confidence.WEAK;
    // One piece of evidence per source and ref: the same queue id seen twice is one sighting.
    Map<String, Fit> top = new LinkedHashMap<>();
    fits.stream()
        .filter(f -> f.confidence() == best)
        .sorted(Comparator.comparing((Fit f) -> distance(c, f.sighting())))
        .forEach(f -> top.putIfAbsent(f.sighting().source() + ":" + f.sighting().ref(), f));
    List<Fit> ranked = List.copyOf(top.values());
    Fit chosen = ranked.get(0);
    // Several sources seeing the same message agree; several messages fitting one row at one source do not.
    List<Fit> others = ranked.subList(1, ranked.size()).stream()
        .filter(f -> f.sighting().source().equals(chosen.sighting().source()) || f.sighting().verdict() != chosen.sighting().verdict())
        .collect(Collectors.toList());
    // A copy that reached the same smarthost and went no further, whatever its fit: it may be this row's attempt.
    open.stream().filter(f -> f.sighting().source().equals(chosen.sighting().source())).forEach(others::add);
    return Optional.of(new Finding(chosen, others.isEmpty() ? best : Confidence.WEAK, List.copyOf(others)));
  }

  /** Whether one sighting fits the row, and how well; empty when it does not or something contradicts it. */
  static Optional<Fit> fit(Candidate c, Sighting s, Duration window) {
    List<String> matched = new ArrayList<>();
    if (s.row() != null) {
      return s.row().equals(c.id()) ? Optional.of(new Fit(s, Confidence.EXACT, List.of(ROW))) : Optional.empty();
    }
    Instant received = c.receivedAt().toInstant();
    if (s.at() == null || Duration.between(received, s.at()).abs().compareTo(window) > 0) {
      return Optional.empty();
    }
    matched.add(TIME);
    boolean messageId = false;
    if (!s.messageIds().isEmpty() && c.messageIdHeader() != null) {
      if (!anyMessageId(s, c.messageIdHeader())) {
        return Optional.empty();
      }
      messageId = true;
      matched.add(MESSAGE_ID);
    }
    boolean sha = false;
    if (s.sha256() != null && c.sentSha256() != null) {
      if (!s.sha256().equalsIgnoreCase(c.sentSha256())) {
        return Optional.empty(); // another copy: its Received: line (our ledger id) or its body differs
      }
      sha = true;
      matched.add(SHA256);
    }
    boolean sender = false;
    if (s.from() != null) {
      if (!address(s.from()).equals(address(c.mailFrom()))) {
        return Optional.empty();
      }
      sender = true;
      matched.add(SENDER);
    }
    Set<String> ours = c.recipients().stream().map(Matching::address).collect(Collectors.toSet());
    boolean recipients = false;
    if (!s.recipients().isEmpty()) {
      Set<String> seen = s.recipients().stream().map(Matching::address).collect(Collectors.toSet());
      if (!ours.containsAll(seen) || (s.allRecipients() && seen.size() != ours.size())) {
        return Optional.empty();
      }
      recipients = true;
    } else if (s.recipientCount() != null && !ours.isEmpty()) {
      recipients = s.recipientCount() == ours.size();
    }
    if (recipients) {
      matched.add(RECIPIENTS);
    }
    boolean envelope = sender && recipients;
    if (sha || (messageId && envelope)) {
      return Optional.of(new Fit(s, Confidence.EXACT, List.copyOf(matched)));
    }
    if (messageId || envelope) {
      return Optional.of(new Fit(s, Confidence.WEAK, List.copyOf(matched)));
    }
    return Optional.empty();
  }

  private static Duration distance(Candidate c, Sighting s) {
    return s.at() == null ? Duration.ZERO : Duration.between(c.receivedAt().toInstant(), s.at()).abs();
  }

  /** Whether the source saw this Message-ID on the message, as any of the ones it logged. */
  static boolean anyMessageId(Sighting s, String messageId) {
    String wanted = bare(messageId);
    return s.messageIds().stream().anyMatch(m -> bare(m).equals(wanted));
  }

  /** A Message-ID without its angle brackets and surrounding blanks. */
  static String bare(String messageId) {
    String t = messageId.trim();
    if (t.startsWith("<") && t.endsWith(">")) {
      t = t.substring(1, t.length() - 1).trim();
    }
    return t;
  }

  /** An envelope address as compared: without angle brackets, in lower case ("<>" and "" are the null sender). */
  static String address(String a) {
    String t = a == null ? "" : a.trim();
    if (t.startsWith("<") && t.endsWith(">")) {
      t = t.substring(1, t.length() - 1);
    }
    return t.toLowerCase(Locale.ROOT);
  }
}
