package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Confidence;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Which evidence fits a row, and how sure that is (docs/design.md §8.4). */
class MatchingTest {
  static final Instant RECEIVED = Instant.parse("2026-12-01T17:12:48Z");
  static final Duration WINDOW = Duration.ofMinutes(15);
  static final UUID ID = UUID.fromString("0193d8a2-0000-7000-8000-000000000001");

  static Candidate row(String messageId, List<String> recipients, String sentSha256) {
    return new Candidate(ID, MessageStatus.UNKNOWN, 2, messageId, "a@example.com", recipients,
        OffsetDateTime.ofInstant(RECEIVED, ZoneOffset.UTC), sentSha256, null, null);
  }

  static Sighting seen(String ref, Sighting.Verdict verdict, Instant at, String messageId, String from, Set<String> recipients,
      boolean all, String sha) {
    return new Sighting("pf", "postfix-log", ref, verdict, at, null, messageId, from, recipients, all,
        recipients.isEmpty() ? null : recipients.size(), sha, "summary " + ref, List.of("line of " + ref));
  }

  static Sighting queued(String ref, String messageId, Instant at) {
    return seen(ref, Sighting.Verdict.ACCEPTED, at, messageId, "a@example.com", Set.of("b@example.net"), true, null);
  }

  @Test
  void messageIdEnvelopeAndTimeAreExact() {
    Optional<Matching.Finding> f = Matching.find(row("<m1@example.com>", List.of("b@example.net"), null),
        List.of(queued("Q1", "<m1@example.com>", RECEIVED.plusSeconds(1))), WINDOW, Set.of());
    assertThat(f).isPresent();
    assertThat(f.get().confidence()).isEqualTo(Confidence.EXACT);
    assertThat(f.get().chosen().matched()).containsExactlyInAnyOrder("time", "message-id", "sender", "recipients");
    assertThat(f.get().ambiguous()).isFalse();
  }

  @Test
  void addressesCompareWithoutCaseAndBracketsAndMessageIdsWithoutBrackets() {
    Sighting s = seen("Q1", Sighting.Verdict.ACCEPTED, RECEIVED, " m1@example.com ", "A@Example.COM", Set.of("<B@example.net>"), true,
        null);
    assertThat(Matching.find(row("<m1@example.com>", List.of("b@example.net"), null), List.of(s), WINDOW, Set.of()).get().confidence())
        .isEqualTo(Confidence.EXACT);
  }

  @Test
  void lessThanThatIsWeak() {
    Candidate c = row("<m1@example.com>", List.of("b@example.net"), null);
    // Only the Message-ID: the log names neither sender nor recipients (a queue id seen as it arrived and refused).
    Sighting idOnly = seen("Q1", Sighting.Verdict.REJECTED, RECEIVED, "<m1@example.com>", null, Set.of(), false, null);
    assertThat(Matching.find(c, List.of(idOnly), WINDOW, Set.of()).get().confidence()).isEqualTo(Confidence.WEAK);
    // Only the envelope: the row has no Message-ID.
    Candidate noId = row(null, List.of("b@example.net"), null);
    assertThat(Matching.find(noId, List.of(queued("Q2", "<other@x>", RECEIVED)), WINDOW, Set.of()).get().confidence())
        .isEqualTo(Confidence.WEAK);
    // The sender alone is nothing.
    Sighting senderOnly = seen("Q3", Sighting.Verdict.ACCEPTED, RECEIVED, null, "a@example.com", Set.of(), false, null);
    assertThat(Matching.find(noId, List.of(senderOnly), WINDOW, Set.of())).isEmpty();
  }

  @Test
  void anythingThatContradictsTheRowOrLiesOutsideTheWindowDoesNotFit() {
    Candidate c = row("<m1@example.com>", List.of("b@example.net"), "ab".repeat(32));
    List<Sighting> none = List.of(
        queued("late", "<m1@example.com>", RECEIVED.plus(WINDOW).plusSeconds(1)),
        queued("early", "<m1@example.com>", RECEIVED.minus(WINDOW).minusSeconds(1)),
        queued("otherId", "<m2@example.com>", RECEIVED),
        seen("otherSender", Sighting.Verdict.ACCEPTED, RECEIVED, "<m1@example.com>", "z@example.com", Set.of("b@example.net"), true, null),
        seen("moreRcpts", Sighting.Verdict.ACCEPTED, RECEIVED, "<m1@example.com>", "a@example.com", Set.of("b@example.net", "x@example.net"),
            true, null),
        seen("otherHash", Sighting.Verdict.ACCEPTED, RECEIVED, "<m1@example.com>", "a@example.com", Set.of("b@example.net"), true,
            "cd".repeat(32)));
    assertThat(Matching.find(c, none, WINDOW, Set.of())).isEmpty();
  }

  @Test
  void theSentBytesHashIsExactOnItsOwnAndTheLedgersOwnFactsAreAboutTheRow() {
    Candidate c = row(null, List.of("b@example.net"), "ab".repeat(32));
    Sighting downstream = seen("d1", Sighting.Verdict.ACCEPTED, RECEIVED.plusSeconds(2), null, null, Set.of(), false, "AB".repeat(32));
    Matching.Finding f = Matching.find(c, List.of(downstream), WINDOW, Set.of()).orElseThrow();
    assertThat(f.confidence()).isEqualTo(Confidence.EXACT);
    assertThat(f.chosen().matched()).contains("sent-sha256");
    Sighting own = new Sighting("ledger", "ledger", ID.toString(), Sighting.Verdict.ACCEPTED, null, ID, (String) null, null, Set.of(), false, null,
        null, "stored", List.of());
    assertThat(Matching.find(c, List.of(own), WINDOW, Set.of()).orElseThrow().confidence()).isEqualTo(Confidence.EXACT);
    Sighting otherRow = new Sighting("ledger", "ledger", "x", Sighting.Verdict.ACCEPTED, null, UUID.randomUUID(), (String) null, null, Set.of(),
        false, null, null, "stored", List.of());
    assertThat(Matching.find(c, List.of(otherRow), WINDOW, Set.of())).isEmpty();
  }

  @Test
  void twoCopiesAtOneSourceAreWeakUnlessTheLedgerSaysWhoseTheOtherIs() {
    Candidate c = row("<m1@example.com>", List.of("b@example.net"), null);
    // The client heard 451 for the lost reply and sent the message again: two queue ids, same Message-ID and envelope.
    List<Sighting> two = List.of(queued("Q1", "<m1@example.com>", RECEIVED.plusSeconds(1)),
        queued("Q2", "<m1@example.com>", RECEIVED.plusSeconds(40)));
    Matching.Finding ambiguous = Matching.find(c, two, WINDOW, Set.of()).orElseThrow();
    assertThat(ambiguous.confidence()).isEqualTo(Confidence.WEAK);
    assertThat(ambiguous.chosen().sighting().ref()).as("the closest in time").isEqualTo("Q1");
    assertThat(ambiguous.alternatives()).extracting(a -> a.sighting().ref()).containsExactly("Q2");
    // The retry's row recorded "250 2.0.0 Ok: queued as Q1": Q1 is its copy, so Q2 is this row's.
    Set<String> claimed = Matching.queuedAs(List.of("250 2.0.0 Ok: queued as Q1"));
    assertThat(claimed).containsExactly("Q1");
    Matching.Finding resolved = Matching.find(c, two, WINDOW, claimed).orElseThrow();
    assertThat(resolved.confidence()).isEqualTo(Confidence.EXACT);
    assertThat(resolved.chosen().sighting().ref()).isEqualTo("Q2");
    // Another row's proposal holds the evidence, by source and ref.
    assertThat(Matching.find(c, two, WINDOW, Set.of("pf:Q1")).orElseThrow().chosen().sighting().ref()).isEqualTo("Q2");
  }

  @Test
  void twoSourcesSeeingTheSameMessageAgreeButDisagreeingOnesAreWeak() {
    Candidate c = row("<m1@example.com>", List.of("b@example.net"), null);
    Sighting log = queued("Q1", "<m1@example.com>", RECEIVED);
    Sighting other = new Sighting("pf2", "postfix-log", "Z9", Sighting.Verdict.ACCEPTED, RECEIVED, null, "<m1@example.com>",
        "a@example.com", Set.of("b@example.net"), true, 1, null, "s", List.of());
    assertThat(Matching.find(c, List.of(log, other), WINDOW, Set.of()).orElseThrow().confidence()).isEqualTo(Confidence.EXACT);
    Sighting refused = new Sighting("pf2", "postfix-log", "Z9", Sighting.Verdict.REJECTED, RECEIVED, null, "<m1@example.com>",
        "a@example.com", Set.of("b@example.net"), false, null, null, "s", List.of());
    assertThat(Matching.find(c, List.of(log, refused), WINDOW, Set.of()).orElseThrow().confidence()).isEqualTo(Confidence.WEAK);
  }

  @Test
  void aCopyWithoutAVerdictIsNoEvidenceButKeepsAnotherCopysVerdictFromBeingExact() {
    // Issue 26, item 1: this row's transaction reached Postfix (Q1: a Message-ID, never queued) and the gateway died;
    // the client's second copy, with the same Message-ID and envelope, was queued as Q2.
    Candidate c = row("<m1@example.com>", List.of("b@example.net"), null);
    Sighting lost = seen("Q1", Sighting.Verdict.NONE, RECEIVED, "<m1@example.com>", null, Set.of(), false, null);
    Sighting second = queued("Q2", "<m1@example.com>", RECEIVED.plusSeconds(30));
    assertThat(Matching.find(c, List.of(lost), WINDOW, Set.of())).as("no verdict, no proposal").isEmpty();
    Matching.Finding f = Matching.find(c, List.of(lost, second), WINDOW, Set.of()).orElseThrow();
    assertThat(f.chosen().sighting().ref()).isEqualTo("Q2");
    assertThat(f.confidence()).as("Q1 may be this row's own attempt").isEqualTo(Confidence.WEAK);
    assertThat(f.alternatives()).extracting(a -> a.sighting().ref()).containsExactly("Q1");
    // The second copy's row recorded "queued as Q2": nothing is left to propose.
    assertThat(Matching.find(c, List.of(lost, second), WINDOW, Matching.queuedAs(List.of("250 2.0.0 Ok: queued as Q2")))).isEmpty();
    // Without a rival the same sighting would be exact: that is why the job always asks whose evidence is whose.
    assertThat(Matching.find(c, List.of(second), WINDOW, Set.of()).orElseThrow().confidence()).isEqualTo(Confidence.EXACT);
    // A rival at another source is another hop's business.
    Sighting elsewhere = new Sighting("pf2", "postfix-log", "Z1", Sighting.Verdict.NONE, RECEIVED, null, "<m1@example.com>", null,
        Set.of(), false, null, null, "s", List.of());
    assertThat(Matching.find(c, List.of(elsewhere, second), WINDOW, Set.of()).orElseThrow().confidence()).isEqualTo(Confidence.EXACT);
  }

  @Test
  void everyMessageIdTheSourceSawMatchesAndNoneOfThemContradicts() {
    Sighting twoHeaders = new Sighting("pf", "postfix-log", "Q1", Sighting.Verdict.ACCEPTED, RECEIVED, null,
        List.of("<first@example.com>", "<second@example.com>"), "a@example.com", Set.of("b@example.net"), true, 1, null, "s", List.of());
    for (String header : List.of("<first@example.com>", "<second@example.com>")) {
      Matching.Finding f = Matching.find(row(header, List.of("b@example.net"), null), List.of(twoHeaders), WINDOW, Set.of()).orElseThrow();
      assertThat(f.confidence()).isEqualTo(Confidence.EXACT);
      assertThat(f.chosen().matched()).contains("message-id");
    }
    assertThat(Matching.find(row("<third@example.com>", List.of("b@example.net"), null), List.of(twoHeaders), WINDOW, Set.of()))
        .isEmpty();
  }

  @Test
  void queueIdsAreReadFromRepliesOfPostfixAndOfLedgerpost() {
    assertThat(Matching.queuedAs(List.of("250 2.0.0 Ok: queued as 80F7023416C",
        "250 2.0.0 Ok: queued as 0193d8a2-1111-7000-8000-000000000001 (downstream: Ok: queued as DS4)", "550 5.7.1 no")))
        .containsExactlyInAnyOrder("80F7023416C", "0193d8a2-1111-7000-8000-000000000001", "DS4");
  }
}
