package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import dev.ledgerpost.testing.WebhookReceiver;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SelfSignedCertificate;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An API-made endpoint over real HTTPS (docs/design.md §6.6, issue 32): the gateway resolves the URL's host itself and
 * connects to the address it checked, yet the TLS handshake still names the URL's host (SNI), the request carries it
 * as Host, and the receiver's certificate is verified against it. The gateway is a child JVM whose default trust store
 * (javax.net.ssl.trustStore) holds the receivers' self-signed certificates: the webhook client uses the JVM's trust.
 */
class WebhookHttpsTest {
  static final Duration WAIT = Duration.ofSeconds(120);
  static final String ALICE = "alice-https-key";

  /** A Vert.x and a scripted smarthost for the child gateway; no gateway in this JVM. */
  @RegisterExtension
  final GatewayHarness harness = GatewayHarness.extension().manual();

  /** One request as the HTTPS receiver saw it: the SNI its connection indicated, its headers and body. */
  record Seen(String sni, String path, Map<String, List<String>> headers, String body) {}

  /** An HTTPS receiver on loopback, port 0, with {@code certificate}; records every request and answers 200. */
  static final class TlsReceiver implements AutoCloseable {
    final HttpServer server;
    final List<Seen> seen = new CopyOnWriteArrayList<>();

    TlsReceiver(Vertx vertx, SelfSignedCertificate certificate) throws Exception {
      server = vertx.createHttpServer(new HttpServerOptions().setHost("127.0.0.1").setPort(0)
          .setSsl(true).setSni(true).setKeyCertOptions(certificate.keyCertOptions()));
      server.requestHandler(req -> req.body().onSuccess(body -> {
        Map<String, List<String>> headers = new HashMap<>();
        req.headers().forEach(e -> headers.computeIfAbsent(e.getKey().toLowerCase(java.util.Locale.ROOT),
            k -> new ArrayList<>()).add(e.getValue()));
        seen.add(new Seen(req.connection().indicatedServerName(), req.path(), headers, body.toString()));
        req.response().setStatusCode(200).end("ok");
      }));
      GatewayHarness.await(server.listen());
    }

    int port() {
      return server.actualPort();
    }

    @Override
    public void close() throws Exception {
      GatewayHarness.await(server.close());
    }
  }

  /** A PKCS12 trust store holding these certificates (PEM files), for the child's javax.net.ssl.trustStore. */
  static Path trustStore(Path dir, String password, SelfSignedCertificate... certificates) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    CertificateFactory x509 = CertificateFactory.getInstance("X.509");
    for (int i = 0; i < certificates.length; i++) {
      try (InputStream in = Files.newInputStream(Path.of(certificates[i].certificatePath()))) {
        store.setCertificateEntry("receiver-" + i, x509.generateCertificate(in));
      }
    }
    Path file = dir.resolve("webhook-trust.p12");
    try (OutputStream out = Files.newOutputStream(file)) {
      store.store(out, password.toCharArray());
    }
    return file;
  }

  @Test
  void aDeliveryToTheCheckedAddressNamesTheUrlsHostAsSniAndHostAndVerifiesTheCertificateAgainstIt() throws Exception {
    SelfSignedCertificate forLocalhost = SelfSignedCertificate.create("localhost");
    SelfSignedCertificate forOther = SelfSignedCertificate.create("other.test");
    TlsReceiver right = harness.closeAfter(new TlsReceiver(harness.vertx(), forLocalhost));
    TlsReceiver wrong = harness.closeAfter(new TlsReceiver(harness.vertx(), forOther));

    Path dir = GatewayHarness.tempDir("webhook-https-");
    // Both certificates trusted: the second receiver's fails on its name alone, not on an unknown issuer.
    Path trust = trustStore(dir, "changeit", forLocalhost, forOther);
    Path keys = SendClient.keysFile(Map.of(ALICE, "alice:1000"));
    String yaml = ChildGateway.config(dir, harness.downstream().port(), TestDatabase.newDatabase()) + String.join("\n",
        "  keysFile: \"" + keys + "\"", // under api:, the configuration's last section
        "notify:", "  pollInterval: 100ms",
        "webhooks:", "  allowHttp: false", "  allowPrivateNetworks: true", "  pollInterval: 50ms",
        "  retrySchedule: 0s, 1h", "  timeout: 20s", "");
    try (ChildGateway child = ChildGateway.start(dir, yaml, null, List.of(
        "-Djavax.net.ssl.trustStore=" + trust, "-Djavax.net.ssl.trustStorePassword=changeit",
        "-Djavax.net.ssl.trustStoreType=PKCS12")).awaitReady(WAIT)) {
      SendClient api = new SendClient(child.httpPort());

      // The certificate for the URL's name: delivered, and the receiver saw that name as SNI and Host.
      String url = "https://localhost:" + right.port() + "/hook";
      JsonObject made = created(api.post("/api/v1/webhooks/endpoints", ALICE, settledOnly(url).encode()));
      String id = made.getString("id");
      String sent = send(api);
      JsonObject delivered = awaitDelivery(api, id, d -> d.getString("eventId").equals(sent + ":2")
          && "DELIVERED".equals(d.getString("state")));
      assertThat(delivered.getInteger("attempts")).isEqualTo(1);
      assertThat(right.seen).hasSize(1);
      Seen s = right.seen.get(0);
      assertThat(s.sni()).as("SNI").isEqualTo("localhost");
      assertThat(s.headers().get("host")).containsExactly("localhost:" + right.port());
      assertThat(s.path()).isEqualTo("/hook");
      assertThat(s.headers().get("webhook-id")).containsExactly(sent + ":2");
      assertThat(s.headers().get("webhook-signature")).singleElement().asString().startsWith("v1,");
      WebhookReceiver.verify(made.getString("secret"), new WebhookReceiver.Request(s.path(), sent + ":2",
          s.headers().get("webhook-timestamp").get(0), s.headers().get("webhook-signature").get(0), s.body(), s.headers(), 1,
          Instant.now()));

      // A trusted certificate for another name, reached by the same name: the handshake fails, no request is sent.
      String other = "https://localhost:" + wrong.port() + "/hook";
      String otherId = created(api.post("/api/v1/webhooks/endpoints", ALICE, settledOnly(other).encode())).getString("id");
      String second = send(api);
      JsonObject failed = awaitDelivery(api, otherId, d -> d.getString("eventId").equals(second + ":2")
          && d.getInteger("attempts") == 1 && !d.getBoolean("inFlight"));
      System.out.println("refused handshake: " + failed.encode());
      assertThat(failed.getString("state")).isEqualTo("ATTEMPTED");
      assertThat(failed.getValue("lastStatus")).isNull();
      assertThat(failed.getString("lastError")).startsWith("SSLHandshakeException").contains("CertificateException")
          .containsPattern("(?i)no (subject alternative (DNS )?)?name matching localhost");
      assertThat(wrong.seen).isEmpty();
      // The first endpoint got the second event as well, as before: its receiver saw nothing else.
      awaitDelivery(api, id, d -> d.getString("eventId").equals(second + ":2") && "DELIVERED".equals(d.getString("state")));
      assertThat(right.seen).hasSize(2).allMatch(x -> "localhost".equals(x.sni()));
    }
  }

  @Test
  void anAttemptsErrorSaysTheInnermostCauseWhenItSaysMore() {
    Exception handshake = new javax.net.ssl.SSLHandshakeException("Failed to create SSL connection");
    Exception middle = new javax.net.ssl.SSLHandshakeException("No name matching localhost found");
    middle.initCause(new java.security.cert.CertificateException("No name matching localhost found"));
    handshake.initCause(middle);
    assertThat(Sender.describe(handshake)).isEqualTo(
        "SSLHandshakeException: Failed to create SSL connection (CertificateException: No name matching localhost found)");
    // Without a cause, or with one that says nothing more, as it was.
    assertThat(Sender.describe(new java.net.ConnectException("Connection refused")))
        .isEqualTo("ConnectException: Connection refused");
    assertThat(Sender.describe(new IllegalStateException("closed: reset", new RuntimeException("reset"))))
        .isEqualTo("IllegalStateException: closed: reset");
    assertThat(Sender.describe(new IllegalStateException(new RuntimeException()))).startsWith("IllegalStateException");
  }

  static JsonObject settledOnly(String url) {
    return new JsonObject().put("url", url).put("events", new JsonArray().add("message.settled"));
  }

  static JsonObject created(HttpResponse<String> r) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    return new JsonObject(r.body());
  }

  /** One message through the send API; answers its ledger id. */
  static String send(SendClient api) throws Exception {
    HttpResponse<String> r = api.send(ALICE, null, new JsonObject()
        .put("from", "app@example.com").put("to", new JsonArray().add("someone@example.net"))
        .put("subject", "hello").put("text", "Hello.\n"));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return new JsonObject(r.body()).getString("operationId");
  }

  static JsonObject awaitDelivery(SendClient api, String endpoint, Predicate<JsonObject> condition) throws Exception {
    JsonObject[] found = new JsonObject[1];
    Poll.until(WAIT, "a delivery of " + endpoint, () -> {
      HttpResponse<String> r = api.get("/api/v1/webhooks/" + endpoint + "/deliveries", ALICE);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      for (Object o : new JsonObject(r.body()).getJsonArray("items")) {
        if (condition.test((JsonObject) o)) {
          found[0] = (JsonObject) o;
          return true;
        }
      }
      return false;
    });
    return found[0];
  }
}
