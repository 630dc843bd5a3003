package dev.ledgerpost.relay.smarthost;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Race;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class DownstreamSlotsTest {

  @Test
  void theCapHoldsAndAReleasedSlotComesBackOnce() {
    DownstreamSlots slots = new DownstreamSlots(2);
    DownstreamSlots.Slot a = slots.tryAcquire();
    DownstreamSlots.Slot b = slots.tryAcquire();
    assertThat(a).isNotNull();
    assertThat(b).isNotNull();
    assertThat(slots.full()).isTrue();
    assertThat(slots.tryAcquire()).isNull();
    a.release();
    a.release(); // a close and a failed open may both report the same slot
    assertThat(slots.inUse()).isEqualTo(1);
    assertThat(slots.tryAcquire()).isNotNull();
    assertThat(slots.tryAcquire()).isNull();
  }

  @Test
  void eventLoopsRacingNeverHoldMoreThanTheCap() throws Exception {
    DownstreamSlots slots = new DownstreamSlots(3);
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger maxSeen = new AtomicInteger();
    Race.run(8, 20_000, () -> {
      DownstreamSlots.Slot s = slots.tryAcquire();
      if (s != null) {
        maxSeen.accumulateAndGet(inside.incrementAndGet(), Math::max);
        inside.decrementAndGet();
        s.release();
      }
    });
    assertThat(maxSeen.get()).isBetween(1, 3);
    assertThat(slots.inUse()).isZero();
  }

  /** A command's bytes, written byte by byte for ASCII since issue 33, are the line and CRLF in UTF-8 as before. */
  @Test
  void aCommandsBytesAreItsLineAndCrlfInUtf8() {
    for (String line : new String[] {"MAIL FROM:<a@example.com> SIZE=2048", "RCPT TO:<ü@exämple.de>", "", "DATA",
        "RCPT TO:<\uD83D\uDE00@x.example>", "\u007f\u0000"}) {
      assertThat(DownstreamConnection.commandBytes(line).getBytes())
          .isEqualTo((line + "\r\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
  }
}
