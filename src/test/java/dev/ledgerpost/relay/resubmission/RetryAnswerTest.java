package dev.ledgerpost.relay.resubmission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.ledger.LedgerMessages.Earlier;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.GatewayConfig.UnknownResubmission;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.relay.DeliveryOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The answer a retry gets from the earlier row that holds its claim (docs/contract.md §1.13), for every status the row can
 * have, held by a live node or not, under either smtp.resubmission.unknown. The expectation is the table written
 * out row by row, not derived: a status added to {@link MessageStatus} has no row and fails here until it is decided.
 */
class RetryAnswerTest {
  /** status, held by a live node, answer with unknown=hold, answer with unknown=relay. */
  static final String TABLE = """
      PENDING                 true   IN_PROGRESS      IN_PROGRESS
      PENDING                 false  HELD             RELAYED
      UNKNOWN                 true   HELD             RELAYED
      UNKNOWN                 false  HELD             RELAYED
      SENT                    true   ALREADY_RELAYED  ALREADY_RELAYED
      SENT                    false  ALREADY_RELAYED  ALREADY_RELAYED
      RESOLVED_DELIVERED      true   ALREADY_RELAYED  ALREADY_RELAYED
      RESOLVED_DELIVERED      false  ALREADY_RELAYED  ALREADY_RELAYED
      FAILED_TEMP             true   RELAYED          RELAYED
      FAILED_TEMP             false  RELAYED          RELAYED
      FAILED_PERM             true   RELAYED          RELAYED
      FAILED_PERM             false  RELAYED          RELAYED
      RESOLVED_NOT_DELIVERED  true   RELAYED          RELAYED
      RESOLVED_NOT_DELIVERED  false  RELAYED          RELAYED
      CAPTURED                true   ALREADY_RELAYED  ALREADY_RELAYED
      CAPTURED                false  ALREADY_RELAYED  ALREADY_RELAYED
      """;

  static Map<String, RetryAnswer> table() {
    Map<String, RetryAnswer> answers = new HashMap<>();
    for (String line : TABLE.strip().split("\n")) {
      String[] c = line.trim().split("\\s+");
      answers.put(c[0] + " " + c[1] + " HOLD", RetryAnswer.valueOf(c[2]));
      answers.put(c[0] + " " + c[1] + " RELAY", RetryAnswer.valueOf(c[3]));
    }
    return answers;
  }

  /** Every status × held × unknown: the product of the enums, so no case is left out by a list that forgot one. */
  static Stream<Arguments> everyCase() {
    List<Arguments> cases = new ArrayList<>();
    for (MessageStatus s : MessageStatus.values()) {
      for (boolean held : new boolean[] {true, false}) {
        for (UnknownResubmission u : UnknownResubmission.values()) {
          cases.add(Arguments.of(s, held, u));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0}, held {1}, unknown {2}")
  @MethodSource("everyCase")
  void theAnswerIsTheTables(MessageStatus status, boolean held, UnknownResubmission unknown) {
    RetryAnswer expected = table().get(status + " " + held + " " + unknown);
    assertThat(expected).as("the table has a row for %s, held %s, unknown %s", status, held, unknown).isNotNull();
    assertThat(RetryAnswer.of(new Earlier(UUID.randomUUID(), status, held), unknown)).isEqualTo(expected);
  }

  /**
   * What a retry that was not relayed hears (Resubmissions.answer): the table's, except that a row the retry would
   * relay over but whose claim it did not get (another retry took it over first) is answered as one in progress; and
   * each answer is counted under its own outcome.
   */
  @ParameterizedTest(name = "{0}, held {1}, unknown {2}")
  @MethodSource("everyCase")
  void aRetryNotRelayedHearsTheTablesAnswerOrInProgressAndIsCounted(MessageStatus status, boolean held,
      UnknownResubmission unknown) {
    List<GatewayMetrics.Resubmission> counted = new ArrayList<>();
    GatewayMetrics metrics = new GatewayMetrics() {
      @Override
      public void resubmission(GatewayMetrics.Resubmission outcome) {
        counted.add(outcome);
      }
    };
    Resubmissions resubmissions = new Resubmissions(new GatewayConfig.Resubmission(GatewayConfig.ResubmissionMode.DETECT,
        Duration.ofDays(5), unknown), null, "node-a", metrics);
    RetryAnswer table = table().get(status + " " + held + " " + unknown);

    RetryAnswer answer = resubmissions.answer(new Earlier(UUID.randomUUID(), status, held));
    assertThat(answer).isEqualTo(table == RetryAnswer.RELAYED ? RetryAnswer.IN_PROGRESS : table);
    assertThat(counted).containsExactly(GatewayMetrics.Resubmission.valueOf(answer.name()));
  }

  @Test
  void eachAnswerNamesItsOwnOutcome() {
    assertThat(List.of(RetryAnswer.values())).extracting(RetryAnswer::metric)
        .containsExactly("already_relayed", "in_progress", "held", "relayed");
  }

  /** A relayed retry is new mail: it ends with its own delivery's outcome, never as a resubmission answered unsent. */
  @Test
  void aRelayedRetryIsNotAnOutcomeOfItsOwn() {
    assertThatThrownBy(() -> new DeliveryOutcome.Resubmitted(UUID.randomUUID(), UUID.randomUUID(), RetryAnswer.RELAYED))
        .isInstanceOf(IllegalArgumentException.class);
    for (RetryAnswer a : List.of(RetryAnswer.ALREADY_RELAYED, RetryAnswer.IN_PROGRESS, RetryAnswer.HELD)) {
      assertThat(new DeliveryOutcome.Resubmitted(UUID.randomUUID(), UUID.randomUUID(), a).answer()).isEqualTo(a);
    }
  }
}
