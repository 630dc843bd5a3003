package dev.ledgerpost.cli;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/** The running gateway's HTTP API as the CLI sees it: blocking calls, bearer token, JSON in and out. */
final class ApiClient {
  /** A reply of the API: its status and its JSON body (a problem document when it is an error). */
  record Reply(int status, JsonObject body) {
    boolean ok() {
      return status / 100 == 2;
    }

    /** "409 Conflict: message ... is SENT at version 2" */
    String problem() {
      String title = body.getString("title", "HTTP " + status);
      String detail = body.getString("detail");
      return status + " " + title + (detail == null ? "" : ": " + detail);
    }
  }

  private final URI base;
  private final String token;
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(CONNECT_TIMEOUT).build();

  ApiClient(URI base, String token) {
    this.base = base;
    this.token = token;
  }

  /** No token to present: a usage problem (exit 2), not an unreachable gateway. */
  static final class NoToken extends Exception {
    NoToken(String message) {
      super(message);
    }
  }

  /**
   * --token, else LEDGERPOST_API_ADMINTOKEN, else the file the gateway generated its token into ({@code where} is asked
   * only then: finding it reads the configuration, which must not stand in the way of a token given).
   */
  static String token(String option, Map<String, String> env, java.util.function.Supplier<Path> where) throws NoToken {
    if (option != null && !option.isBlank()) {
      return option.trim();
    }
    String fromEnv = env.get("LEDGERPOST_API_ADMINTOKEN");
    if (fromEnv != null && !fromEnv.isBlank()) {
      return fromEnv.trim();
    }
    Path file = where.get();
    if (!Files.isReadable(file)) {
      throw new NoToken("no API token: give --token or --token-file, or set LEDGERPOST_API_ADMINTOKEN; the token file "
          + file.toAbsolutePath() + (Files.exists(file) ? " is not readable"
              : " does not exist (a gateway without api.adminToken writes it at its first start)"));
    }
    try {
      String token = Files.readString(file, StandardCharsets.UTF_8).trim();
      if (token.isEmpty()) {
        throw new NoToken("no API token: " + file.toAbsolutePath() + " is empty");
      }
      return token;
    } catch (IOException e) {
      throw new NoToken("no API token: cannot read " + file.toAbsolutePath() + ": " + e.getMessage());
    }
  }

  /**
   * Why a request got no answer, in words: the JDK says "null" for a refused connection. An unreachable
   * gateway is exit status 3.
   */
  static String unreachable(IOException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.nio.channels.UnresolvedAddressException || t instanceof java.net.UnknownHostException) {
        return "unknown host";
      }
    }
    if (e instanceof java.net.http.HttpConnectTimeoutException) {
      return "timed out: no connection within " + CONNECT_TIMEOUT.toSeconds() + " s";
    }
    if (e instanceof java.net.http.HttpTimeoutException) {
      return "timed out: no answer within " + REQUEST_TIMEOUT.toSeconds() + " s";
    }
    if (e instanceof java.net.ConnectException) {
      return "connection refused (is the gateway running, and is this its http.port?)";
    }
    String m = e.getMessage();
    return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
  }

  Reply get(String path) throws IOException, InterruptedException {
    return send(request(path).GET().build());
  }

  Reply post(String path, JsonObject body, Map<String, String> headers) throws IOException, InterruptedException {
    return post(path, body, headers, REQUEST_TIMEOUT);
  }

  /** With a longer wait than {@link #REQUEST_TIMEOUT}, for a request that answers only once its work is done (an export; an erasure reads every table). */
  Reply post(String path, JsonObject body, Map<String, String> headers, Duration timeout)
      throws IOException, InterruptedException {
    HttpRequest.Builder b = request(path)
        .timeout(timeout)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode(), StandardCharsets.UTF_8));
    headers.forEach(b::header);
    return send(b.build());
  }

  /** POST of a text body (an import's lines), with extra headers. */
  Reply postText(String path, String text, Map<String, String> headers) throws IOException, InterruptedException {
    HttpRequest.Builder b = request(path).header("Content-Type", "text/plain; charset=utf-8")
        .POST(HttpRequest.BodyPublishers.ofString(text, StandardCharsets.UTF_8));
    headers.forEach(b::header);
    return send(b.build());
  }

  /** DELETE, with extra headers (who asks: X-Operator). */
  Reply delete(String path, Map<String, String> headers) throws IOException, InterruptedException {
    HttpRequest.Builder b = request(path).DELETE();
    headers.forEach(b::header);
    return send(b.build());
  }

  private HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(base.resolve(path))
        .timeout(REQUEST_TIMEOUT)
        .header("Authorization", "Bearer " + token)
        .header("Accept", "application/json");
  }

  private Reply send(HttpRequest request) throws IOException, InterruptedException {
    HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    JsonObject body;
    try {
      body = response.body() == null || response.body().isBlank() ? new JsonObject() : new JsonObject(response.body());
    } catch (DecodeException | ClassCastException e) {
      body = new JsonObject().put("title", "unexpected reply").put("detail", response.body());
    }
    return new Reply(response.statusCode(), body);
  }
}
