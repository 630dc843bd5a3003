package dev.ledgerpost.operate.archive;

import dev.ledgerpost.ledger.LedgerPart;

import static dev.ledgerpost.testing.GatewayHarness.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 26, item 12: an export holds addresses, so its files are created 0600 and the directories it makes 0700, from
 * the first byte (the data directory is 0700; an export beside it was 0644 until now).
 */
class ExportFileModesTest {
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension();

  @Test
  void anExportsFilesAreOwnerOnlyAndTheDirectoriesItMakesToo() throws Exception {
    Instant start = Instant.now().minus(Duration.ofHours(1));
    LedgerRows.insert(gateway.databaseUrl(), LedgerIds.lowest(start.plusSeconds(60)), "SENT", "ACCEPTED", start, null);
    Path archive = GatewayHarness.tempDir("export-modes-").resolve("archive").resolve("ledger");
    UUID from = LedgerIds.lowest(start);
    UUID to = LedgerIds.lowest(Instant.now());
    Manifest m = await(LedgerArchive.export(gateway.vertx(), gateway.gateway().part(LedgerPart.class).target(), LedgerArchiveTest.KEY, archive, from, to, "modes", "n"));
    assertThat(m.totalRows()).as("an address is in it").isPositive();

    for (String name : new String[] {"modes" + Manifest.DATA_SUFFIX, "modes" + Manifest.SUFFIX,
        "modes" + Manifest.SUPPRESSIONS_SUFFIX}) {
      assertThat(Files.getPosixFilePermissions(archive.resolve(name))).as(name)
          .isEqualTo(PosixFilePermissions.fromString("rw-------"));
    }
    assertThat(Files.getPosixFilePermissions(archive)).isEqualTo(PosixFilePermissions.fromString("rwx------"));
    assertThat(Files.getPosixFilePermissions(archive.getParent())).isEqualTo(PosixFilePermissions.fromString("rwx------"));
  }
}
