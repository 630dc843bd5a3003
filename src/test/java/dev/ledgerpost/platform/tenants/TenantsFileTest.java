package dev.ledgerpost.platform.tenants;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.ConfigException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tenants file (docs/design.md §8.9): defaults, per-user entries over them, every problem named with its line. */
class TenantsFileTest {
  @TempDir
  Path dir;

  private Path write(String content) throws Exception {
    return Files.writeString(dir.resolve("tenants.yaml"), content, StandardCharsets.UTF_8);
  }

  @Test
  void aUserWithoutAnEntryGetsTheDefaultsAndAnEntryOverridesOnlyWhatItNames() throws Exception {
    Tenants tenants = Tenants.load(write("""
        defaults:
          messagesPerHour: 1000
          messagesPerDay: 10000
          recipientsPerMessage: 50
          messageSize: 10MB
        users:
          shop:
            messagesPerHour: 50
            capture: true
          quiet:
        """).toString());

    assertThat(tenants.policy("stranger")).isEqualTo(new TenantPolicy(1000, 10000, 50, 10L << 20, false));
    assertThat(tenants.policy(null)).as("mail without a user").isEqualTo(tenants.policy("stranger"));
    assertThat(tenants.policy("shop")).isEqualTo(new TenantPolicy(50, 10000, 50, 10L << 20, true));
    assertThat(tenants.policy("quiet")).isEqualTo(tenants.policy("stranger"));
    assertThat(tenants.table().users()).containsOnlyKeys("shop", "quiet");
  }

  @Test
  void noFileAndAnEmptyFileLimitNothing() throws Exception {
    assertThat(Tenants.load("").policy("anyone")).isEqualTo(TenantPolicy.UNLIMITED);
    assertThat(Tenants.load("").reloadable()).isEmpty();
    assertThat(Tenants.load(write("# nobody yet\n").toString()).policy("anyone")).isEqualTo(TenantPolicy.UNLIMITED);
  }

  @Test
  void everyProblemIsNamedWithItsLineAndNoneIsSkipped() throws Exception {
    Path file = write("""
        defaults:
          messagesPerHour: -1
        users:
          shop:
            messagesPerHr: 50
            messageSize: lots
          shop:
            capture: yes please
          "bad user":
            messagesPerDay: 1
        """);

    assertThatThrownBy(() -> Tenants.load(file.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "tenants.file " + file + " line 2: defaults.messagesPerHour: '-1' is not a whole number >= 0 (0: no limit)",
            "tenants.file " + file + " line 7: users.shop: listed twice",
            "tenants.file " + file + " line 9: users: 'bad user' is not a user name (no spaces, ':' or '#'; at most 128)",
            "tenants.file " + file + " line 5: users.shop.messagesPerHr: unknown setting (known: messagesPerHour, "
                + "messagesPerDay, recipientsPerMessage, messageSize, capture, faults, faultSeed)",
            "tenants.file " + file + " line 6: users.shop.messageSize: 'lots' is not a size (use e.g. 26214400, 512KB, "
                + "25MB); 0: no limit"));
  }

  @Test
  void notYamlOrNotAMappingIsOneProblem() throws Exception {
    Path broken = write("users: [\n");
    assertThatThrownBy(() -> Tenants.load(broken.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).singleElement().asString()
            .startsWith("tenants.file " + broken + ": not YAML: "));
    Path list = Files.writeString(dir.resolve("list.yaml"), "- shop\n");
    assertThatThrownBy(() -> Tenants.load(list.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "tenants.file " + list + " line 1: the file: expected a mapping of defaults, users"));
  }

  @Test
  void aReloadWithABadFileKeepsThePreviousTable() throws Exception {
    Path file = write("users:\n  shop:\n    messagesPerHour: 50\n");
    Tenants tenants = Tenants.load(file.toString());
    Files.writeString(file, "users:\n  shop:\n    messagesPerHour: 500\n");
    assertThat(tenants.reloadable().orElseThrow().reload()).isTrue();
    assertThat(tenants.policy("shop").messagesPerHour()).isEqualTo(500);

    Files.writeString(file, "users:\n  shop:\n    messagesPerHour: many\n");
    assertThat(tenants.reloadable().orElseThrow().reload()).isFalse();
    assertThat(tenants.policy("shop").messagesPerHour()).isEqualTo(500);
  }
}
