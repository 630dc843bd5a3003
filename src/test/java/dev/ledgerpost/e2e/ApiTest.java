package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The HTTP API answers with JSON, pages newest first, and every error is problem JSON. */
class ApiTest {
  /** '%' is an atext character (RFC 5321): valid senders whose search once decoded the value twice. */
  static final List<String> PERCENT_SENDERS = List.of("a%b@example.com", "a%41b@example.com", "aAb@example.com");

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().afterStart(g -> {
    try (SmtpTestClient c = new SmtpTestClient(g.smtpPort())) {
      c.reply();
      for (int i = 0; i < 5; i++) {
        assertThat(c.sendMail("pager@example.com", List.of("x@example.net"), "Subject: " + i + "\r\n\r\nbody"))
            .startsWith("250");
      }
      for (String sender : PERCENT_SENDERS) {
        assertThat(c.sendMail(sender, List.of("x@example.net"), "Subject: percent\r\n\r\nbody")).startsWith("250");
      }
    }
  });

  @Test
  void healthEndpointsNeedNoToken() throws Exception {
    assertThat(gateway.get("/health/live", null).statusCode()).isEqualTo(200);
    HttpResponse<String> ready = gateway.get("/health/ready", null);
    assertThat(ready.statusCode()).isEqualTo(200);
    assertThat(new JsonObject(ready.body()).getString("ledger")).isEqualTo("UP");
  }

  @Test
  void missingOrWrongTokenIs401ProblemJson() throws Exception {
    for (String token : new String[] {null, "wrong"}) {
      HttpResponse<String> r = gateway.get("/api/v1/messages", token);
      assertThat(r.statusCode()).isEqualTo(401);
      assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(r.headers().firstValue("WWW-Authenticate")).isPresent();
      assertThat(new JsonObject(r.body()).getInteger("status")).isEqualTo(401);
    }
  }

  @Test
  void badParametersAre400ProblemJson() throws Exception {
    for (String query : List.of("status=NOPE", "limit=0", "limit=9999", "limit=x", "since=yesterday", "cursor=garbage")) {
      HttpResponse<String> r = gateway.get("/api/v1/messages?" + query);
      assertThat(r.statusCode()).as(query).isEqualTo(400);
      assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(new JsonObject(r.body()).getString("detail")).as(query).isNotBlank();
    }
    assertThat(gateway.get("/api/v1/messages/not-a-uuid").statusCode()).isEqualTo(400);
  }

  @Test
  void unknownMessageAndUnknownPathAre404() throws Exception {
    HttpResponse<String> r = gateway.get("/api/v1/messages/" + UUID.randomUUID());
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(new JsonObject(r.body()).getString("title")).isEqualTo("Not Found");
    assertThat(gateway.get("/api/v1/nothing-here").statusCode()).isEqualTo(404);
  }

  @Test
  void pagesWalkEveryMessageOnceNewestFirst() throws Exception {
    Set<String> seen = new HashSet<>();
    String cursor = null;
    String previousReceived = null;
    int pages = 0;
    do {
      HttpResponse<String> r = gateway.get("/api/v1/messages?sender=pager@example.com&limit=2"
          + (cursor == null ? "" : "&cursor=" + cursor));
      assertThat(r.statusCode()).isEqualTo(200);
      JsonObject page = new JsonObject(r.body());
      JsonArray items = page.getJsonArray("items");
      for (int i = 0; i < items.size(); i++) {
        JsonObject item = items.getJsonObject(i);
        assertThat(seen.add(item.getString("id"))).isTrue();
        if (previousReceived != null) {
          assertThat(item.getString("receivedAt").compareTo(previousReceived)).isLessThanOrEqualTo(0);
        }
        previousReceived = item.getString("receivedAt");
      }
      cursor = page.getString("next");
      pages++;
    } while (cursor != null && pages < 10);
    assertThat(seen).hasSize(5);
    assertThat(pages).isEqualTo(3);
  }

  @Test
  void aSenderWithPercentIsSearchableAsWritten() throws Exception {
    for (String sender : PERCENT_SENDERS) {
      String encoded = java.net.URLEncoder.encode(sender, java.nio.charset.StandardCharsets.UTF_8);
      HttpResponse<String> r = gateway.get("/api/v1/messages?sender=" + encoded);
      assertThat(r.statusCode()).as(sender + ": " + r.body()).isEqualTo(200);
      JsonArray items = new JsonObject(r.body()).getJsonArray("items");
      assertThat(items.size()).as(sender + ": " + r.body()).isEqualTo(1);
      assertThat(items.getJsonObject(0).getString("mailFrom")).isEqualTo(sender);
    }
  }
}
