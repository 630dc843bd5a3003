package dev.ledgerpost.platform.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Haproxy;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The HAProxy configuration the README's deployment guide ships is one HAProxy accepts, and it speaks PROXY v2. */
class DeployConfigTest {
  static final Path CFG = Path.of("deploy/haproxy.cfg");

  @Test
  void theShippedHaproxyConfigurationIsValidAndSendsProxyV2ToEveryNode() throws Exception {
    assertThat(Haproxy.check(CFG)).contains("Configuration file is valid");
    String cfg = Files.readString(CFG);
    assertThat(cfg).contains("mode tcp").contains("send-proxy-v2").contains("check-send-proxy");
  }
}
