package dev.ledgerpost.platform.web;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.Cookie;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.contract.Parameter;
import io.vertx.openapi.validation.RequestParameter;
import io.vertx.openapi.validation.RequestUtils;
import io.vertx.openapi.validation.ValidatableRequest;
import io.vertx.openapi.validation.ValidatorException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A request as the contract validator takes it, every value exactly as the HTTP layer delivered it.
 *
 * <p>Why not vertx-openapi's own {@code RequestUtils.extract}: in 5.0 it URL-decodes query values a
 * second time (Vert.x has already decoded them) and header values once. A sender {@code a%b@example.com},
 * valid over SMTP, made the search throw out of the handler (500); {@code a%41b@example.com} was checked
 * as {@code aAb@example.com}; an Idempotency-Key containing {@code %} failed the same way. vertx-openapi
 * 5.1 fixed it (eclipse-vertx/vertx-openapi#108, "Fix multiple decoding of parameter values"); this class
 * does what 5.1 does and can go when the Vert.x stack moves to 5.1.
 */
final class ContractRequest {
  private ContractRequest() {}

  /** A value the validator reads; {@code null} for an absent one. */
  private record Value(Object get) implements RequestParameter {}

  private static final Value ABSENT = new Value(null);

  /** The values the validator reads; the components are named as {@link ValidatableRequest}'s methods, which they are. */
  public record Values(String getContentType, Map<String, RequestParameter> getCookies, Map<String, RequestParameter> getPathParameters,
      Map<String, RequestParameter> getQuery, Map<String, RequestParameter> getHeaders, RequestParameter getBody)
      implements ValidatableRequest {

    /** The same values, read as JSON whatever Content-Type they came with. */
    Values asJson() {
      return new Values("application/json", getCookies, getPathParameters, getQuery, getHeaders, getBody);
    }
  }

  /** Throws {@link ValidatorException} (a 400) for a path segment that is not valid percent-encoding. */
  public static Values of(HttpServerRequest request, Operation op, Buffer body) {
    Map<String, RequestParameter> cookies = new HashMap<>();
    Map<String, RequestParameter> headers = new HashMap<>();
    Map<String, RequestParameter> path = new HashMap<>();
    Map<String, RequestParameter> query = new HashMap<>();
    for (Parameter p : op.getParameters()) {
      switch (p.getIn()) {
        case COOKIE -> cookies.put(p.getName(), form(p,
            request.cookies(p.getName()).stream().map(Cookie::getValue).toList(),
            () -> request.cookies().stream().map(c -> c.getName() + "=" + c.getValue()).collect(Collectors.joining("&"))));
        case HEADER -> headers.put(p.getName(), new Value(request.getHeader(p.getName())));
        case PATH -> path.put(p.getName(), pathSegment(request, op, p));
        case QUERY -> query.put(p.getName(), form(p, request.params().getAll(p.getName()),
            () -> request.params().entries().stream().map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining("&"))));
      }
    }
    String contentType = op.getRequestBody() == null ? null : request.headers().get(HttpHeaders.CONTENT_TYPE);
    RequestParameter bodyValue = op.getRequestBody() == null ? null : new Value(body);
    return new Values(contentType, cookies, path, query, headers, bodyValue);
  }

  /** Form-style values (query, cookie) the way vertx-openapi 5.1 joins them, not decoded again. */
  private static RequestParameter form(Parameter p, List<String> values, java.util.function.Supplier<String> exploded) {
    if (values.isEmpty()) {
      return ABSENT;
    }
    return switch (p.getSchemaType()) {
      case OBJECT -> new Value(p.isExplode() ? exploded.get() : values.get(0));
      case ARRAY -> new Value(p.isExplode()
          ? values.stream().map(v -> p.getName() + "=" + v).collect(Collectors.joining("&"))
          : values.get(0));
      default -> new Value(values.get(0));
    };
  }

  /** The raw path is still percent-encoded: decoded once here ({@code +} stays a plus in a path). */
  private static RequestParameter pathSegment(HttpServerRequest request, Operation op, Parameter p) {
    int segment = RequestUtils.findPathSegment(op.getAbsoluteOpenAPIPath(), p.getName());
    String[] segments = request.path().substring(1).split("/");
    if (segments.length < segment) {
      return ABSENT;
    }
    try {
      return new Value(URLDecoder.decode(segments[segment - 1].replace("+", "%2B"), StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      throw ValidatorException.createCantDecodeValue(p);
    }
  }
}
