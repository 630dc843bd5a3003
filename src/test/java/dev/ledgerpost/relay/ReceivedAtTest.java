package dev.ledgerpost.relay;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * An open's received_at, made with its date kept for the day since issue 33, is the instant in UTC exactly as
 * OffsetDateTime.ofInstant made it: to the nanosecond, across midnights, going back in time and before the epoch.
 */
class ReceivedAtTest {

  @Test
  void theInstantInUtcAsOfInstantHasIt() {
    Random random = new Random(33);
    Instant[] starts = {Instant.parse("2026-12-04T23:59:59.999999999Z"), Instant.parse("1969-12-31T23:59:59.5Z"),
        Instant.parse("2024-02-29T00:00:00Z"), Instant.EPOCH};
    for (Instant start : starts) {
      Instant at = start;
      for (int i = 0; i < 2_000; i++) {
        assertThat(RelayContract.utc(at)).as(at.toString()).isEqualTo(OffsetDateTime.ofInstant(at, ZoneOffset.UTC));
        at = at.plusNanos(random.nextLong(-3_000_000_000_000L, 90_000_000_000_000L));
      }
    }
    Instant now = Instant.now();
    assertThat(RelayContract.utc(now)).isEqualTo(OffsetDateTime.ofInstant(now, ZoneOffset.UTC));
  }
}
