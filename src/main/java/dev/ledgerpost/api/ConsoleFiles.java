package dev.ledgerpost.api;

import dev.ledgerpost.platform.web.Problem;

import dev.ledgerpost.platform.web.ClasspathFiles;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.io.IOException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The operator console's static files (docs/design.md §8.3) under {@code /console/}: plain HTML, CSS and ES modules
 * from the jar, read once at start into memory (no file cache on disk: the gateway must run with its disk full,
 * see {@link ContractValidation#load}) and served with a strict Content-Security-Policy: scripts, styles and
 * connections (the WebSocket included) from this origin only, no inline script or style, no framing.
 * The files carry no secret; the API they call needs the admin token.
 */
final class ConsoleFiles {
  static final String ROOT = "console/";
  /** Every file of src/main/resources/console (a test holds this list and the directory equal). */
  static final List<String> FILES = List.of("index.html", "console.css", "icon.svg", "app.js", "api.js", "dom.js",
      "socket.js", "live.js", "attention.js", "message.js", "proposals.js", "bulk.js", "chart.js", "endpoints.js", "capture.js",
      "quotas.js", "usage.js", "suppressions.js", "bounces.js");
  static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
      + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private record File(Buffer bytes, String type, String etag) {}

  private final Map<String, File> files;

  private ConsoleFiles(Map<String, File> files) {
    this.files = files;
  }

  /** Reads every file from the classpath on a worker. */
  static Future<ConsoleFiles> load(Vertx vertx) {
    return vertx.executeBlocking(() -> {
      Map<String, File> files = new HashMap<>();
      for (String name : FILES) {
        byte[] bytes;
        try {
          bytes = ClasspathFiles.read(ROOT + name);
        } catch (IOException e) {
          throw new IllegalStateException("the console's " + name + " is missing from the jar", e);
        }
        String etag = "\"" + HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(bytes), 0, 12) + "\"";
        files.put(name, new File(Buffer.buffer(bytes), type(name), etag));
      }
      return new ConsoleFiles(Map.copyOf(files));
    });
  }

  void mount(Router router) {
    // vertx-web matches "/console" with and without the trailing slash: the page's relative URLs need the slash.
    router.get("/console").handler(ctx -> {
      if (ctx.request().path().endsWith("/")) {
        serve(ctx, "index.html");
      } else {
        headers(ctx.response()).setStatusCode(301).putHeader("Location", "/console/").end();
      }
    });
    router.get("/console/:file").handler(ctx -> serve(ctx, ctx.pathParam("file")));
    router.route("/console/*").handler(ctx -> {
      headers(ctx.response());
      Problem.send(ctx, 404, "Not Found", "no such console file");
    });
  }

  private void serve(RoutingContext ctx, String name) {
    File f = files.get(name);
    HttpServerResponse response = headers(ctx.response());
    if (f == null) {
      Problem.send(ctx, 404, "Not Found", "no such console file");
      return;
    }
    response.putHeader("ETag", f.etag());
    if (f.etag().equals(ctx.request().getHeader("If-None-Match"))) {
      response.setStatusCode(304).end();
      return;
    }
    response.putHeader("Content-Type", f.type()).end(f.bytes());
  }

  /** On every console answer, a 404 included. */
  static HttpServerResponse headers(HttpServerResponse r) {
    return r.putHeader("Content-Security-Policy", CSP)
        .putHeader("X-Frame-Options", "DENY")
        .putHeader("X-Content-Type-Options", "nosniff")
        .putHeader("Referrer-Policy", "no-referrer")
        // Revalidated on every load (a 304 when unchanged): a new gateway's console is never mixed with an old one's.
        .putHeader("Cache-Control", "no-cache");
  }

  private static String type(String name) {
    if (name.endsWith(".html")) {
      return "text/html; charset=utf-8";
    }
    if (name.endsWith(".css")) {
      return "text/css; charset=utf-8";
    }
    if (name.endsWith(".js")) {
      return "text/javascript; charset=utf-8";
    }
    if (name.endsWith(".svg")) {
      return "image/svg+xml";
    }
    throw new IllegalArgumentException("no content type for " + name);
  }
}
