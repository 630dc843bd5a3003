package dev.ledgerpost.operate.archive;

import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.operate.archive.ArchiveMessages;
import dev.ledgerpost.operate.archive.ArchiveMessages.Export;
import dev.ledgerpost.operate.archive.ArchiveMessages.Exported;
import dev.ledgerpost.operate.archive.ArchiveRefused;
import dev.ledgerpost.platform.bus.Bus;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.time.Instant;

/**
 * Ledger exports on demand (docs/data-model.md §5.13): every ledger row of the messages received in a time range, into
 * {@code ledger.archiveDir}, answered with the export's manifest once the file is written and fsynced.
 */
public record ArchiveApi(Bus bus) {
  /** An export streams the whole range before it answers; the bus must wait as long as a large one takes. */
  static final Duration EXPORT_TIMEOUT = Duration.ofHours(1);

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ArchiveApi.class);

  public void mount(Router router) {
    router.post("/api/v1/ledger/exports").handler(this::export);
  }

  /** The contract has checked the body's members; the times are parsed here. */
  private void export(RoutingContext ctx) {
    JsonObject body = Input.of(ctx).body();
    Instant from;
    Instant to;
    try {
      from = Input.parseTime("from", body.getString("from")).toInstant(); // required by the contract
      to = Input.parseTime("to", body.getString("to")).toInstant();
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    if (!from.isBefore(to)) {
      Problem.send(ctx, 400, "Bad Request", "from (" + from + ") must be before to (" + to + ")");
      return;
    }
    bus.request(ArchiveMessages.EXPORT, new Export(from, to), Exported.class, EXPORT_TIMEOUT).onComplete(ar -> {
      if (ar.succeeded()) {
        Exported e = ar.result();
        Problem.json(ctx, 201, e.manifest().toJson().put("path", e.data().toString())
            .put("manifestPath", e.manifestFile().toString()));
      } else if (ar.cause() instanceof ArchiveRefused r) {
        boolean caller = r.callersMistake();
        Problem.send(ctx, caller ? 400 : 409, caller ? "Bad Request" : "Conflict", r.getMessage(),
            new JsonObject().put("reason", r.reason().name()));
      } else {
        // The database or the archive directory failed (a full disk, no permission): the partial files are removed.
        LOG.error("ledger export {} to {} failed", from, to, ar.cause());
        Problem.send(ctx, 503, "Service Unavailable", "the export failed, nothing was kept: " + ar.cause().getMessage());
      }
    });
  }

}
