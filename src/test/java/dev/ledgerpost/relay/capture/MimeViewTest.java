package dev.ledgerpost.relay.capture;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The parsed form of a captured message (docs/design.md §8.10): what it shows, and that it never refuses a message. */
class MimeViewTest {

  @Test
  void aMultipartMessageGivesItsHeadersTextHtmlAndAttachments() {
    MimeView v = MimeView.parse(CaptureTest.message("Grüße").getBytes(StandardCharsets.UTF_8));
    assertThat(v.header("subject")).isEqualTo("Grüße");
    assertThat(v.text()).isEqualTo("Grüße, plain text.\r\n.a line that starts with a dot");
    assertThat(v.html()).startsWith("<p id=\"greeting\">");
    assertThat(v.attachments()).containsExactly(new MimeView.Attachment("invoice.pdf", "application/pdf", 300));
  }

  @Test
  void aPlainMessageIsItsText() {
    MimeView v = MimeView.parse("Subject: =?ISO-8859-1?Q?caf=E9?= ok\nFrom: a@example.com\n\nline 1\nline 2\n"
        .getBytes(StandardCharsets.ISO_8859_1));
    assertThat(v.header("Subject")).isEqualTo("café ok");
    assertThat(v.text()).isEqualTo("line 1\nline 2\n");
    assertThat(v.html()).isNull();
    assertThat(v.attachments()).isEmpty();
  }

  @Test
  void anRfc2231NameAndBrokenBase64AreShownNotRefused() {
    String m = "Content-Type: multipart/mixed; boundary=b\r\n\r\npreamble\r\n--b\r\n"
        + "Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.bin\r\n"
        + "Content-Transfer-Encoding: base64\r\n\r\n!!not base64!!\r\n--b--\r\nepilogue\r\n";
    MimeView v = MimeView.parse(m.getBytes(StandardCharsets.US_ASCII));
    assertThat(v.text()).isNull();
    assertThat(v.attachments()).containsExactly(new MimeView.Attachment("résumé.bin", "application/octet-stream", 14));
  }

  @Test
  void headersWithoutABodyAndEightBitHeadersAreRead() {
    MimeView v = MimeView.parse("Subject: Grüße\r\n".getBytes(StandardCharsets.UTF_8));
    assertThat(v.header("Subject")).isEqualTo("Grüße");
    assertThat(v.text()).isEmpty();
  }
}
