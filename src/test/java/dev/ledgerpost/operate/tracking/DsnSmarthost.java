package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.testing.ScriptedSmtpServer;
import io.vertx.core.Future;
import java.util.List;

/**
 * The DSN tests' scripted smarthost: it offers DSN in its EHLO (so the gateway passes NOTIFY and ORCPT on) and queues
 * the n-th message as Postfix would say it, under {@code ABCDEF0<n>}. A test overrides what it scripts beyond that.
 */
interface DsnSmarthost extends ScriptedSmtpServer.Script {
  @Override
  default List<String> ehloKeywords() {
    return List.of("PIPELINING", "SIZE 52428800", "8BITMIME", "ENHANCEDSTATUSCODES", "DSN");
  }

  @Override
  default Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
    return Future.succeededFuture("250 2.0.0 Ok: queued as ABCDEF0" + n);
  }
}
