package dev.ledgerpost.platform.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.testing.GatewayHarnessDirs;
import dev.ledgerpost.testing.SendClient;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ApiKeysTest {
  static Path file(String content) throws Exception {
    Path f = GatewayHarnessDirs.fresh("keys-").resolve("keys");
    Files.writeString(f, content);
    return f;
  }

  @Test
  void keysAreFoundByTheirHashWithTheirUserAndRate() throws Exception {
    ApiKeys keys = ApiKeys.load(file("# comment\n\nalice:" + SendClient.sha256("k1") + "\nbob:"
        + SendClient.sha256("k2").toUpperCase() + ":2.5\n").toString(), 10);
    assertThat(keys.authenticate("k1")).hasValueSatisfying(k -> {
      assertThat(k.user()).isEqualTo("alice");
      assertThat(k.rate()).isEqualTo(10);
      assertThat(k.id()).isEqualTo(SendClient.sha256("k1"));
    });
    assertThat(keys.authenticate("k2")).hasValueSatisfying(k -> assertThat(k.rate()).isEqualTo(2.5));
    assertThat(keys.authenticate("k3")).isEmpty();
    assertThat(keys.authenticate("")).isEmpty();
    assertThat(keys.authenticate(null)).isEmpty();
  }

  @Test
  void aMalformedLineStopsTheStartNamingEveryBadLine() throws Exception {
    String good = SendClient.sha256("k1");
    Path f = file("alice:" + good + "\nbob:nothex\ncarol:" + good.substring(1) + "x:0\ndave\n");
    assertThatThrownBy(() -> ApiKeys.load(f.toString(), 1))
        .hasMessageContaining("line 2").hasMessageContaining("line 3").hasMessageContaining("line 4");
    assertThatThrownBy(() -> ApiKeys.load(file("a:" + good + ":-1\n").toString(), 1)).hasMessageContaining("rate");
    assertThatThrownBy(() -> ApiKeys.load(file("a:" + good + "\nb:" + good + "\n").toString(), 1))
        .hasMessageContaining("twice");
  }

  @Test
  void aTrailingCaptureMarksACapturingKeyAndOldLinesStayPlain() throws Exception {
    ApiKeys keys = ApiKeys.load(file("alice:" + SendClient.sha256("k1") + ":capture\nbob:" + SendClient.sha256("k2")
        + ":2.5:capture\ncarol:" + SendClient.sha256("k3") + ":3\n").toString(), 10);
    assertThat(keys.authenticate("k1")).hasValueSatisfying(k -> {
      assertThat(k.capture()).isTrue();
      assertThat(k.rate()).isEqualTo(10);
    });
    assertThat(keys.authenticate("k2")).hasValueSatisfying(k -> {
      assertThat(k.capture()).isTrue();
      assertThat(k.rate()).isEqualTo(2.5);
    });
    assertThat(keys.authenticate("k3")).hasValueSatisfying(k -> assertThat(k.capture()).isFalse());
    assertThat(ApiKeys.line("dave", "k4", null, true)).isEqualTo("dave:" + SendClient.sha256("k4") + ":capture");
    assertThatThrownBy(() -> ApiKeys.parse("erin:" + SendClient.sha256("k5") + ":capture:2", 1))
        .hasMessageContaining("[:capture]");
    assertThatThrownBy(() -> ApiKeys.parse("erin:" + SendClient.sha256("k5") + ":keep", 1))
        .hasMessageContaining("positive number");
  }

  @Test
  void noFileMeansNoKeys() throws Exception {
    assertThat(ApiKeys.load("", 1).authenticate("anything")).isEmpty();
  }
}
