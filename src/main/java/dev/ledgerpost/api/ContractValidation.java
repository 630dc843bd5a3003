package dev.ledgerpost.api;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.json.schema.OutputUnit;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.validation.RequestUtils;
import io.vertx.openapi.validation.RequestValidator;
import io.vertx.openapi.validation.SchemaValidationException;
import io.vertx.openapi.validation.ValidatedRequest;
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
  /** The repository's openapi.yaml: next to the working directory when run from a checkout, else from the jar. */
  static final String CONTRACT = "openapi.yaml";

  private final OpenAPIContract contract;
  private final RequestValidator validator;

  private ContractValidation(OpenAPIContract contract, RequestValidator validator) {
    this.contract = contract;
    this.validator = validator;
  }

  static Future<ContractValidation> load(Vertx vertx) {
    return vertx.fileSystem().readFile(CONTRACT)
        .compose(text -> vertx.executeBlocking(() -> forRequests(parse(text.toString(StandardCharsets.UTF_8)))))
        .compose(json -> OpenAPIContract.from(vertx, json))
        .map(c -> new ContractValidation(c, RequestValidator.create(vertx, c)))
        .recover(e -> Future.failedFuture(new IllegalStateException(CONTRACT + " cannot be used: " + e.getMessage(), e)));
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
    return validate(ctx, op);
  }

  private Future<ValidatedRequest> validate(RoutingContext ctx, Operation op) {
    Buffer body = ctx.body() == null || ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
    return RequestUtils.extract(ctx.request(), op, () -> Future.succeededFuture(body))
        .compose(request -> validator.validate(request, op.getOperationId()));
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
    validate(ctx, op).onComplete(ar -> {
      if (ar.succeeded()) {
        ctx.next();
      } else {
        Problem.send(ctx, 400, "Bad Request", describe(ar.cause()));
      }
    });
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
      String text = m.matches() ? "unknown member \"" + m.group(1) + "\"" : e[1];
      String line = (e[0].isEmpty() ? "" : e[0] + ": ") + text;
      if (!out.contains(line)) {
        out.add(line);
      }
    }
    return out;
  }
}
