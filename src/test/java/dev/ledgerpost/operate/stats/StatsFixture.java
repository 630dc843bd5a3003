package dev.ledgerpost.operate.stats;

import dev.ledgerpost.operate.stats.StatsMessages.Dimension;
import dev.ledgerpost.operate.stats.StatsMessages.RolledUp;
import dev.ledgerpost.operate.stats.StatsMessages.Rollup;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * What the stats tests share: a ledger generated once per test class by the benchmark's own generator
 * (bench/stats-generate.sql) over the 70 hours before the class's {@link #now}, the roll-up run at that instant, the
 * API asked over a window of four whole days around it, and the plain query's rows read as the API's lines are.
 */
final class StatsFixture {
  /** A test's own changes to the generated rows, run once after the generator. */
  interface Setup {
    void run(Statement st) throws Exception;
  }

  final Instant now = Instant.now();
  final Instant until = now.truncatedTo(ChronoUnit.DAYS).plus(Duration.ofDays(1));
  final Instant since = until.minus(Duration.ofDays(4));
  private final GatewayHarness gateway;
  private final int messages;
  private final HttpClient http = HttpClient.newHttpClient();
  private boolean generated;

  StatsFixture(GatewayHarness gateway, int messages) {
    this.gateway = gateway;
    this.messages = messages;
  }

  /** Generates the ledger and runs {@code setup} on it, the first time only. */
  synchronized void generate(Setup setup) throws Exception {
    if (generated) {
      return;
    }
    long to = now.toEpochMilli();
    long from = now.minus(Duration.ofHours(70)).toEpochMilli();
    String sql = Files.readString(Path.of("bench/stats-generate.sql"))
        .replace(":v_messages", String.valueOf(messages)).replace(":v_first", "1").replace(":v_total", String.valueOf(messages))
        .replace(":v_from_ms", String.valueOf(from)).replace(":v_to_ms", String.valueOf(to)).replace(":v_users", "5");
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement()) {
      st.execute(sql);
      setup.run(st);
    }
    generated = true;
  }

  RolledUp rollup() throws Exception {
    return GatewayHarness.await(Bus.of(gateway.vertx()).request(StatsMessages.ROLLUP, new Rollup(now, 1000), RolledUp.class));
  }

  /** The API's path for the window, a bucket of {@code hours} (1 or 24) and a grouping. */
  String query(int hours, List<Dimension> by) {
    return "/api/v1/stats?since=" + since + "&until=" + until + "&bucket=" + (hours == 1 ? "1h" : "1d") + "&groupBy="
        + String.join(",", by.stream().map(Dimension::label).toList());
  }

  /** GETs a path with a bearer token and an Accept header (either may be null: none sent). */
  HttpResponse<String> get(String path, String token, String accept) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.httpPort() + path))
        .timeout(Duration.ofSeconds(20));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    if (accept != null) {
      b.header("Accept", accept);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * The plain query's rows as lines: its bucket, one column per dimension, then {@code counts} numbers, joined by '|'.
   * The query takes since and until, then the user when one is given.
   */
  List<String> rows(String sql, Instant since, Instant until, String user, int dimensions, int counts) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, since.toString());
      ps.setString(2, until.toString());
      if (user != null) {
        ps.setString(3, user);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          StringBuilder line = new StringBuilder(rs.getString(1));
          for (int i = 0; i < dimensions; i++) {
            line.append('|').append(rs.getString(2 + i));
          }
          for (int i = 0; i < counts; i++) {
            line.append('|').append(rs.getLong(2 + dimensions + i));
          }
          out.add(line.toString());
        }
      }
    }
    return out;
  }

  /** The SQL's bucket column: received_at's UTC bucket of {@code hours}, as the API writes it. */
  static String bucket(String receivedAt, int hours) {
    return "to_char(to_timestamp(floor(extract(epoch FROM " + receivedAt + ") / " + hours * 3600 + ") * " + hours * 3600
        + ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS bucket";
  }

  static long count(Statement st, String sql) throws SQLException {
    try (ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
