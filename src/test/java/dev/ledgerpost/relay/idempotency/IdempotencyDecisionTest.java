package dev.ledgerpost.relay.idempotency;


import static dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision.BUSY;
import static dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision.CLAIMED;
import static dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision.DERIVED;
import static dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision.MISMATCH;
import static dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision.REPLAY;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.MessageStatus;

import org.junit.jupiter.api.Test;

/** What an existing key means for a new request carrying it (IdempotencyStore.decide). */
class IdempotencyDecisionTest {
  @Test
  void anExpiredKeyIsFreeWhateverItHolds() {
    for (String state : new String[] {"IN_FLIGHT", "OPENED", "COMPLETED"}) {
      assertThat(IdempotencyStore.decide(true, false, state, true, MessageStatus.SENT)).isEqualTo(CLAIMED);
    }
  }

  @Test
  void anotherBodyWithTheSameKeyIsAMismatchInEveryState() {
    for (String state : new String[] {"IN_FLIGHT", "OPENED", "COMPLETED"}) {
      assertThat(IdempotencyStore.decide(false, false, state, true, null)).isEqualTo(MISMATCH);
    }
    assertThat(IdempotencyStore.decide(false, false, "OPENED", false, MessageStatus.SENT)).isEqualTo(MISMATCH);
  }

  @Test
  void aDeadClaimThatNeverOpenedAnythingIsFreeForAnyBody() {
    assertThat(IdempotencyStore.decide(false, false, "IN_FLIGHT", false, null)).isEqualTo(CLAIMED);
  }

  @Test
  void aLiveClaimIsBusyAndADeadOneIsTakenOver() {
    assertThat(IdempotencyStore.decide(false, true, "IN_FLIGHT", true, null)).isEqualTo(BUSY);
    assertThat(IdempotencyStore.decide(false, true, "IN_FLIGHT", false, null)).isEqualTo(CLAIMED);
    assertThat(IdempotencyStore.decide(false, true, "OPENED", true, MessageStatus.PENDING)).isEqualTo(BUSY);
  }

  @Test
  void anOpenedKeyWithoutAnswerIsAnsweredFromTheLedgerAndNeverResentUnlessNothingWasDelivered() {
    for (MessageStatus s : new MessageStatus[] {MessageStatus.PENDING, MessageStatus.SENT, MessageStatus.UNKNOWN,
        MessageStatus.FAILED_PERM, MessageStatus.RESOLVED_DELIVERED, MessageStatus.RESOLVED_NOT_DELIVERED}) {
      assertThat(IdempotencyStore.decide(false, true, "OPENED", false, s)).as(s.name()).isEqualTo(DERIVED);
    }
    assertThat(IdempotencyStore.decide(false, true, "OPENED", false, MessageStatus.FAILED_TEMP)).isEqualTo(CLAIMED);
  }

  @Test
  void aCompletedKeyIsReplayed() {
    assertThat(IdempotencyStore.decide(false, true, "COMPLETED", false, MessageStatus.SENT)).isEqualTo(REPLAY);
    assertThat(IdempotencyStore.decide(false, true, "COMPLETED", true, MessageStatus.FAILED_TEMP)).isEqualTo(REPLAY);
  }
}
