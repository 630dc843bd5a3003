package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * What an attempt keeps of a receiver's refusal (issue 26, item 10): whole words only, so that an erasure, which
 * finds whole addresses, finds every address in it (docs/design.md §8.6).
 */
class RefusalTextTest {
  @Test
  void aBodyCutInsideAnAddressLosesTheWholeWordNotPartOfIt() {
    String pad = "e".repeat(189) + " ";
    assertThat(Sender.refusal(500, "Internal Server Error", pad + "cut.me@example.org is unknown"))
        .isEqualTo("HTTP 500 Internal Server Error: " + pad.trim());
    assertThat(Sender.refusal(500, "", pad + "<cut.me@example.org>")).isEqualTo("HTTP 500: " + pad + "<");
    String quoted = "e".repeat(185) + " to \"john smith\"@example.net";
    assertThat(Sender.refusal(400, "Bad Request", quoted)).as("a quoted local part holds a space")
        .isEqualTo("HTTP 400 Bad Request: " + "e".repeat(185) + " to");
  }

  @Test
  void aShortBodyIsKeptWholeAndAWordWithCharactersOutsideAsciiGoesWhole() {
    assertThat(Sender.refusal(503, "Service Unavailable", "no mailbox bob@example.com\r\nretry"))
        .isEqualTo("HTTP 503 Service Unavailable: no mailbox bob@example.com  retry");
    assertThat(Sender.refusal(500, null, "unknown <jöhn@example.com>, try later"))
        .as("not hn@example.com, a piece another erasure would not find").isEqualTo("HTTP 500: unknown <?>, try later");
  }
}
