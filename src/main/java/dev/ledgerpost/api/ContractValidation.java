package dev.ledgerpost.api;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.json.schema.OutputUnit;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.validation.RequestParameter;
import io.vertx.openapi.validation.RequestValidator;
import io.vertx.openapi.validation.SchemaValidationException;
import io.vertx.openapi.validation.ValidatableRequest;
import io.vertx.openapi.validation.ValidatedRequest;
import io.vertx.openapi.validation.ValidatorErrorType;
import io.vertx.openapi.validation.ValidatorException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Requests checked against openapi.yaml at run time (vertx-openapi): parameters, headers and JSON
 * bodies, including unknown members, which the contract forbids. The contract is the one published in
 * the repository, so what the document says and what the server enforces cannot drift apart.
 * Schema validation runs on a worker (vertx-openapi's choice), never on the event loop.
 */
final class ContractValidation {
  /** The repository's openapi.yaml, which the build copies onto the classpath (and into the jar). */
  static final String CONTRACT = "openapi.yaml";

  private final OpenAPIContract contract;
  private final RequestValidator validator;

  private ContractValidation(OpenAPIContract contract, RequestValidator validator) {
    this.contract = contract;
    this.validator = validator;
  }

  /**
   * Read from the classpath on a worker, never through Vert.x's file system: that first copies every
   * classpath resource it serves into a cache directory, a write the gateway has no need of and that a
   * full disk refuses (the gateway must start and relay with its disk full; see ProcessKillTest). The
   * JSON Schema meta-schemas vertx-openapi loads are served the same way, see {@link ClasspathFiles}.
   */
  static Future<ContractValidation> load(Vertx vertx) {
    return vertx.executeBlocking(() -> forRequests(parse(read(CONTRACT))))
        .compose(json -> OpenAPIContract.from(ClasspathFiles.readingClasspath(vertx), json))
        .map(c -> new ContractValidation(c, RequestValidator.create(vertx, c)))
        .recover(e -> Future.failedFuture(new IllegalStateException(CONTRACT + " cannot be used: " + e.getMessage(), e)));
  }

  private static String read(String resource) throws IOException {
    return new String(ClasspathFiles.read(resource), StandardCharsets.UTF_8);
  }

  @SuppressWarnings("unchecked")
  private static JsonObject parse(String yaml) {
    return new JsonObject((Map<String, Object>) new Yaml(new SafeConstructor(new LoaderOptions())).load(yaml));
  }

  /**
   * The contract as the request validator takes it: without response bodies. Answers are not validated,
   * and vertx-openapi refuses a contract whose responses use media types it cannot analyse, such as
   * application/problem+json or the Prometheus text format, which the published document must name.
   */
  static JsonObject forRequests(JsonObject contract) {
    JsonObject copy = contract.copy();
    JsonObject paths = copy.getJsonObject("paths", new JsonObject());
    for (String path : paths.fieldNames()) {
      JsonObject item = paths.getJsonObject(path);
      for (String method : item.fieldNames()) {
        if (item.getValue(method) instanceof JsonObject op && op.getValue("responses") instanceof JsonObject responses) {
          stripContent(responses);
        }
      }
    }
    JsonObject components = copy.getJsonObject("components", new JsonObject());
    if (components.getValue("responses") instanceof JsonObject responses) {
      stripContent(responses);
    }
    return copy;
  }

  private static void stripContent(JsonObject responses) {
    for (String status : responses.fieldNames()) {
      if (responses.getValue(status) instanceof JsonObject response) {
        response.remove("content");
      }
    }
  }

  /** Validates the request against the operation; the body must have been read (BodyHandler) if it has one. */
  Future<ValidatedRequest> validate(RoutingContext ctx, String operationId) {
    Operation op = contract.operation(operationId);
    if (op == null) {
      return Future.failedFuture(new IllegalStateException("openapi.yaml has no operation " + operationId));
    }
    return validate(ctx, op, false);
  }

  /**
   * {@code jsonByDefault}: a body sent without a Content-Type is read as JSON, as the admin endpoints
   * always read their bodies (scripts post with bare HTTP clients); a different Content-Type is still refused.
   */
  private Future<ValidatedRequest> validate(RoutingContext ctx, Operation op, boolean jsonByDefault) {
    Buffer body = ctx.body() == null || ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
    ValidatableRequest request;
    try {
      request = ContractRequest.of(ctx.request(), op, body); // not RequestUtils.extract: it decodes twice
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    return validator.validate(jsonByDefault && request.getContentType() == null ? asJson(request) : request,
        op.getOperationId());
  }

  private static ValidatableRequest asJson(ValidatableRequest r) {
    return new ValidatableRequest() {
      @Override
      public String getContentType() {
        return "application/json";
      }

      @Override
      public Map<String, RequestParameter> getCookies() {
        return r.getCookies();
      }

      @Override
      public Map<String, RequestParameter> getPathParameters() {
        return r.getPathParameters();
      }

      @Override
      public Map<String, RequestParameter> getQuery() {
        return r.getQuery();
      }

      @Override
      public Map<String, RequestParameter> getHeaders() {
        return r.getHeaders();
      }

      @Override
      public RequestParameter getBody() {
        return r.getBody();
      }
    };
  }

  /**
   * A handler for every route the contract describes: an invalid request ends here with 400 problem
   * JSON; a request the contract does not describe passes on (the router answers 404 or 405).
   */
  void handle(RoutingContext ctx) {
    Operation op = contract.findOperation(ctx.normalizedPath(), ctx.request().method());
    if (op == null) {
      ctx.next();
      return;
    }
    validate(ctx, op, true).onComplete(ar -> {
      if (ar.succeeded()) {
        ctx.next();
      } else {
        badRequest(ctx, ar.cause());
      }
    });
  }

  /**
   * 400 with what the client has to fix. The validator says only that a body "can't be decoded" or is
   * missing; a client fixing its JSON wants the parser's own words, so on this (error) path the body is
   * parsed once more, on a worker.
   */
  void badRequest(RoutingContext ctx, Throwable cause) {
    Buffer body = ctx.body() == null || ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
    if (cause instanceof SchemaValidationException || !(cause instanceof ValidatorException v)) {
      Problem.send(ctx, 400, "Bad Request", describe(cause));
      return;
    }
    if (v.type() == ValidatorErrorType.MISSING_REQUIRED_PARAMETER && body.length() == 0) {
      Problem.send(ctx, 400, "Bad Request", "the body must be a JSON object; it is empty");
      return;
    }
    if (v.type() != ValidatorErrorType.ILLEGAL_VALUE || body.length() == 0) {
      Problem.send(ctx, 400, "Bad Request", describe(cause));
      return;
    }
    ctx.vertx().executeBlocking(() -> {
      try {
        Json.decodeValue(body);
        return describe(cause);
      } catch (DecodeException e) {
        return "the body must be a JSON object; it is not valid JSON: " + e.getMessage();
      }
    }, false).onComplete(ar -> Problem.send(ctx, 400, "Bad Request", ar.succeeded() ? ar.result() : describe(cause)));
  }

  /** What a client needs to fix, from a validator failure: the most specific errors and where in the body. */
  static String describe(Throwable e) {
    if (e instanceof SchemaValidationException s && s.getOutputUnit() != null) {
      List<String[]> errors = new ArrayList<>();
      collect(s.getOutputUnit(), errors);
      List<String> specific = specific(errors);
      if (!specific.isEmpty()) {
        return "request does not match openapi.yaml: " + String.join("; ", specific.subList(0, Math.min(5, specific.size())));
      }
    }
    return "request does not match openapi.yaml: " + e.getMessage();
  }

  private static final java.util.regex.Pattern ROOT_TYPE =
      java.util.regex.Pattern.compile("Instance type (\\w+) is invalid\\. Expected object");
  private static final java.util.regex.Pattern UNKNOWN_MEMBER =
      java.util.regex.Pattern.compile("Property \"(.*)\" does not match additional properties schema");

  private static void collect(OutputUnit unit, List<String[]> out) {
    if (unit.getErrors() != null && !unit.getErrors().isEmpty()) {
      for (OutputUnit child : unit.getErrors()) {
        collect(child, out);
      }
      return;
    }
    String error = unit.getError();
    if (error == null || error.startsWith("A subschema had errors") || error.startsWith("Instance does not match \"")
        || error.endsWith("does not match schema") || error.startsWith("Items did not match schema")) {
      return; // summaries of the errors below them
    }
    String where = unit.getInstanceLocation() == null ? "" : unit.getInstanceLocation().replaceFirst("^#", "");
    out.add(new String[] {where, error});
  }

  /**
   * Keeps the deepest errors: one at /attachments/0/inline explains one at /attachments. A member that
   * failed its own schema is also reported as "additional" by the validator; that echo is dropped.
   */
  private static List<String> specific(List<String[]> errors) {
    List<String> out = new ArrayList<>();
    for (String[] e : errors) {
      boolean deeper = errors.stream().anyMatch(o -> o[0].startsWith(e[0] + "/"));
      boolean echo = UNKNOWN_MEMBER.matcher(e[1]).matches()
          && errors.stream().anyMatch(o -> o[0].equals(e[0]) && !UNKNOWN_MEMBER.matcher(o[1]).matches());
      if (deeper || echo) {
        continue;
      }
      java.util.regex.Matcher m = UNKNOWN_MEMBER.matcher(e[1]);
      java.util.regex.Matcher t = ROOT_TYPE.matcher(e[1]);
      if (e[0].isEmpty() && t.matches()) {
        out.add("the body must be a JSON object, not " + (t.group(1).equals("array") ? "an array" : "a " + t.group(1)));
        continue;
      }
      String text = m.matches() ? "unknown member \"" + m.group(1) + "\"" : e[1];
      String line = (e[0].isEmpty() ? "" : e[0] + ": ") + text;
      if (!out.contains(line)) {
        out.add(line);
      }
    }
    return out;
  }
}
