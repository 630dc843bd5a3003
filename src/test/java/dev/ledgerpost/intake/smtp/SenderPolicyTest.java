package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.ConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SenderPolicyTest {
  @TempDir
  Path dir;

  private final SenderPolicy own = SenderPolicy.parse("senders", List.of(
      "# who may send as whom",
      "alice: alice@example.com, Billing@Example.com, @alice.example",
      "",
      "bob: bob@example.net"));

  @Test
  void aUserMayUseItsAddressesAndDomainsIgnoringCase() {
    assertThat(own.mayUse("alice", "alice@example.com")).isTrue();
    assertThat(own.mayUse("alice", "ALICE@example.COM")).isTrue();
    assertThat(own.mayUse("alice", "billing@example.com")).isTrue();
    assertThat(own.mayUse("alice", "anyone@alice.example")).isTrue();
    assertThat(own.mayUse("alice", "anyone@sub.alice.example")).isFalse();
    assertThat(own.mayUse("alice", "bob@example.net")).isFalse();
    assertThat(own.mayUse("bob", "alice@example.com")).isFalse();
  }

  @Test
  void unknownUsersAndTheNullSenderOwnNothingUnauthenticatedClientsAreNotChecked() {
    assertThat(own.mayUse("carol", "carol@example.com")).isFalse();
    assertThat(own.mayUse("alice", "")).isFalse();
    assertThat(own.mayUse(null, "alice@example.com")).isTrue();
    assertThat(SenderPolicy.ANY.mayUse("carol", "alice@example.com")).isTrue();
  }

  @Test
  void badLinesStopTheStartNamingTheFileAndEveryLine() throws Exception {
    Path file = dir.resolve("senders");
    Files.writeString(file, String.join("\n",
        "alice: alice@example.com",
        "no colon here",
        "bob: bob@example.net, not an address",
        "carol:",
        "alice: again@example.com",
        "dave: @"));
    assertThatThrownBy(() -> SenderPolicy.load(file))
        .isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).problems()).containsExactly(
            "auth.sendersFile " + file + " line 2: expected `user: addr, addr, @domain`",
            "auth.sendersFile " + file + " line 3: 'not an address' is neither an address nor @domain",
            "auth.sendersFile " + file + " line 4: '' is neither an address nor @domain",
            "auth.sendersFile " + file + " line 5: user 'alice' is listed twice",
            "auth.sendersFile " + file + " line 6: '@' is neither an address nor @domain"));
  }

  @Test
  void aMissingFileIsOneConfigurationError() {
    assertThatThrownBy(() -> SenderPolicy.load(dir.resolve("absent")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("auth.sendersFile " + dir.resolve("absent") + ": cannot read");
  }
}
