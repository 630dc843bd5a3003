package dev.ledgerpost.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/** Calls the HTTP send API of a gateway under test, and writes the keys file it reads. */
public final class SendClient {
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final int port;

  public SendClient(int port) {
    this.port = port;
  }

  /** A keys file with user:sha256(key)[:rate] lines; {@code keys} maps key to "user" or "user:rate". */
  public static Path keysFile(Map<String, String> keys) {
    StringBuilder sb = new StringBuilder("# test keys\n");
    keys.forEach((key, userAndRate) -> {
      String[] parts = userAndRate.split(":");
      sb.append(parts[0]).append(':').append(sha256(key));
      if (parts.length > 1) {
        sb.append(':').append(parts[1]);
      }
      sb.append('\n');
    });
    return Credentials.write("keys-", "api-keys", sb.toString());
  }

  public static String sha256(String s) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  public HttpResponse<String> send(String apiKey, String idempotencyKey, String body) throws Exception {
    return http.send(request(apiKey, idempotencyKey, body, "application/json"), HttpResponse.BodyHandlers.ofString());
  }

  public HttpResponse<String> send(String apiKey, String idempotencyKey, JsonObject body) throws Exception {
    return send(apiKey, idempotencyKey, body.encode());
  }

  public CompletableFuture<HttpResponse<String>> sendAsync(String apiKey, String idempotencyKey, JsonObject body) {
    return http.sendAsync(request(apiKey, idempotencyKey, body.encode(), "application/json"),
        HttpResponse.BodyHandlers.ofString());
  }

  public HttpResponse<String> send(String apiKey, String idempotencyKey, String body, String contentType) throws Exception {
    return http.send(request(apiKey, idempotencyKey, body, contentType), HttpResponse.BodyHandlers.ofString());
  }

  public HttpResponse<String> post(String path, String token, String json) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  public HttpResponse<String> get(String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(30));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** A problem+json answer (RFC 9457) with this status, a title and a detail; 401 names its scheme. */
  public static void assertProblem(HttpResponse<String> r, int status, String... what) {
    String as = what.length > 0 ? what[0] + ": " + r.body() : r.body();
    assertThat(r.statusCode()).as(as).isEqualTo(status);
    assertThat(r.headers().firstValue("Content-Type")).as(as).hasValue("application/problem+json");
    JsonObject problem = new JsonObject(r.body());
    assertThat(problem.getInteger("status")).as(as).isEqualTo(status);
    assertThat(problem.getString("title")).as(as).isNotBlank();
    assertThat(problem.getString("detail")).as(as).isNotBlank();
    if (status == 401) {
      assertThat(r.headers().firstValue("WWW-Authenticate")).as(as).isPresent();
    }
  }

  private HttpRequest request(String apiKey, String idempotencyKey, String body, String contentType) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/v1/messages"))
        .timeout(Duration.ofSeconds(60))
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (contentType != null) {
      b.header("Content-Type", contentType);
    }
    if (apiKey != null) {
      b.header("Authorization", "Bearer " + apiKey);
    }
    if (idempotencyKey != null) {
      b.header("Idempotency-Key", idempotencyKey);
    }
    return b.build();
  }
}
