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
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  ApiClient(URI base, String token) {
    this.base = base;
    this.token = token;
  }

  /** --token, else LEDGERPOST_API_ADMINTOKEN, else the file the gateway generated its token into. */
  static String token(String option, Map<String, String> env, Path file) throws IOException {
    if (option != null && !option.isBlank()) {
      return option.trim();
    }
    String fromEnv = env.get("LEDGERPOST_API_ADMINTOKEN");
    if (fromEnv != null && !fromEnv.isBlank()) {
      return fromEnv.trim();
    }
    if (Files.isReadable(file)) {
      return Files.readString(file, StandardCharsets.UTF_8).trim();
    }
    throw new IOException("no API token: give --token, set LEDGERPOST_API_ADMINTOKEN, or run where " + file + " is readable");
  }

  Reply get(String path) throws IOException, InterruptedException {
    return send(request(path).GET().build());
  }

  Reply post(String path, JsonObject body, Map<String, String> headers) throws IOException, InterruptedException {
    HttpRequest.Builder b = request(path)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode(), StandardCharsets.UTF_8));
    headers.forEach(b::header);
    return send(b.build());
  }

  private HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(base.resolve(path))
        .timeout(Duration.ofSeconds(30))
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
