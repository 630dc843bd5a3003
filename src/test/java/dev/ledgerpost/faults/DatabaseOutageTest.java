package dev.ledgerpost.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.db.EmbeddedDatabase;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Vertx;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The PostgreSQL server itself goes away (a real stop of a real server) while mail arrives: the client
 * hears 451 4.3.0 and nothing reaches the downstream; once the server is back the gateway serves again.
 */
class DatabaseOutageTest {

  @Test
  void serverStoppedMeans451ThenServiceResumesWithoutARestart() throws Exception {
    Path dir = Files.createTempDirectory(Path.of("target"), "outage-pg-");
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    EmbeddedDatabase db = EmbeddedDatabase.start(dir, port);
    Vertx vertx = Vertx.vertx();
    try {
      ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
      Map<String, Object> o = GatewayHarness.defaults(downstream.port());
      o.put("ledger.url", "postgresql://postgres@localhost:" + port + "/postgres");
      o.put("ledger.lockTimeout", "250ms");
      try (GatewayHarness gateway = GatewayHarness.start(vertx, o)) {
        assertThat(send(gateway)).startsWith("250 2.0.0");

        db.close();
        assertThat(send(gateway)).isEqualTo("451 4.3.0 Temporary local persistence failure");
        assertThat(gateway.get("/health/ready", null).statusCode()).isEqualTo(503);
        assertThat(downstream.dataCommands()).isEqualTo(1);

        db = EmbeddedDatabase.start(dir, port);
        assertThat(send(gateway)).startsWith("250 2.0.0");
        assertThat(gateway.get("/health/ready", null).statusCode()).isEqualTo(200);
        assertThat(downstream.messages()).hasSize(2);
      }
    } finally {
      GatewayHarness.await(vertx.close());
      db.close();
    }
  }

  @Test
  void connectionsKilledByTheServerDoNotCostAMessage() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      ScriptedSmtpServer downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx));
      try (GatewayHarness gateway = GatewayHarness.start(vertx, GatewayHarness.defaults(downstream.port()))) {
        assertThat(send(gateway)).startsWith("250 2.0.0");
        String url = gateway.databaseUrl();
        String db = url.substring(url.lastIndexOf('/') + 1);
        try (Connection c = dev.ledgerpost.testing.TestDatabase.connect(url); Statement st = c.createStatement();
            java.sql.ResultSet rs = st.executeQuery("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                + "FROM pg_stat_activity WHERE datname = '" + db + "' AND application_name = 'ledgerpost'")) {
          rs.next();
          assertThat(rs.getInt(1)).as("the gateway's pooled connections terminated").isPositive();
        }
        // The pool notices the dead connections; the next message still gets one that works.
        assertThat(send(gateway)).startsWith("250 2.0.0");
        assertThat(downstream.messages()).hasSize(2);
      }
    } finally {
      GatewayHarness.await(vertx.close());
    }
  }

  private static String send(GatewayHarness gateway) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      return c.sendMail("a@example.com", List.of("b@example.net"), "Subject: outage\r\n\r\nbody");
    }
  }
}
