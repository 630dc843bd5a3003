package dev.ledgerpost.platform.web;

import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;

/** The one reading of an {@code Authorization: Bearer <token>} header (RFC 6750 §2.1), for every route. */
public final class Bearer {
  private static final String PREFIX = "Bearer ";

  private Bearer() {}

  /** The token, trimmed; null when the request has no Authorization header or not a bearer one. The scheme's case is free. */
  public static String token(HttpServerRequest request) {
    String header = request.getHeader(HttpHeaders.AUTHORIZATION);
    if (header == null || !header.regionMatches(true, 0, PREFIX, 0, PREFIX.length())) {
      return null;
    }
    return header.substring(PREFIX.length()).trim();
  }

  /** Whether the request carries an Authorization header at all (of any scheme). */
  public static boolean present(HttpServerRequest request) {
    return request.getHeader(HttpHeaders.AUTHORIZATION) != null;
  }
}
