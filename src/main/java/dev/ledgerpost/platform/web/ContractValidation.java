package dev.ledgerpost.platform.web;

import dev.ledgerpost.platform.db.LedgerIds;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.json.schema.OutputUnit;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.contract.Parameter;
import io.vertx.openapi.validation.RequestParameter;
import io.vertx.openapi.validation.RequestValidator;
import io.vertx.openapi.validation.SchemaValidationException;
import io.vertx.openapi.validation.ValidatorErrorType;
import io.vertx.openapi.validation.ValidatorException;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Requests checked against openapi.yaml at run time (vertx-openapi): parameters, headers and JSON
 * bodies, including unknown members, which the contract forbids. The contract is the one published in
 * the repository, so what the document says and what the server enforces cannot drift apart.
 * Schema validation runs on a worker (vertx-openapi's choice), never on the event loop.
 */
public final class ContractValidation {
  /** The repository's openapi.yaml, which the build copies onto the classpath (and into the jar). */
  static final String CONTRACT = "openapi.yaml";

  /**
   * The contract once built, for every later start in this JVM (the tests start hundreds of gateways in a few JVMs):
   * building it (the document checked against the OpenAPI meta-schema, every schema resolved) was about 30 % of the
   * CPU samples of a test JVM that starts gateways. A first start still builds it once per API instance, as before.
   * The built contract holds no Vert.x instance and is only read afterwards, as each instance's validator already
   * read it from several worker threads at once.
   */
  private static volatile OpenAPIContract parsed;

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
  public static Future<ContractValidation> load(Vertx vertx) {
    OpenAPIContract known = parsed;
    Future<OpenAPIContract> contract = known != null ? Future.succeededFuture(known)
        : vertx.executeBlocking(() -> forRequests(parse(read(CONTRACT))))
            .compose(json -> OpenAPIContract.from(ClasspathFiles.readingClasspath(vertx), json))
            .onSuccess(c -> parsed = c);
    return contract
        .map(c -> new ContractValidation(c, RequestValidator.create(vertx, ReusedValidators.of(c))))
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
  public static JsonObject forRequests(JsonObject contract) {
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
  public Future<Input> validate(RoutingContext ctx, String operationId) {
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
  private Future<Input> validate(RoutingContext ctx, Operation op, boolean jsonByDefault) {
    Buffer body = ctx.body() == null || ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
    ContractRequest.Values request;
    try {
      request = ContractRequest.of(ctx.request(), op, body); // not RequestUtils.extract: it decodes twice
    } catch (RuntimeException e) {
      return Future.failedFuture(e);
    }
    return validator.validate(jsonByDefault && request.getContentType() == null ? request.asJson() : request,
            op.getOperationId())
        .map(validated -> new Input(validated, op))
        .compose(in -> in.body() == null || body.length() <= INLINE_NUL_SCAN && !mayHoldNul(body)
            ? Future.succeededFuture(in)
            // On a worker, as the validation itself: a send's body may hold megabytes of strings.
            : ctx.vertx().executeBlocking(() -> mayHoldNul(body) ? nulAt(in.body(), "") : null, false)
                .compose(at -> at == null ? Future.succeededFuture(in) : Future.failedFuture(new NulInJson(at))));
  }

  /** Bodies up to this size are scanned for U+0000 on the event loop (tens of microseconds); larger ones on a worker. */
  static final int INLINE_NUL_SCAN = 64 * 1024;

  /**
   * Whether the JSON text has the escape of U+0000 (backslash, u, 0000) anywhere: JSON
   * cannot hold the character unescaped, so a body without it needs no walk (and a small one no worker hop): one
   * pass over the bytes, every send's cost. A hit may be an escaped backslash followed by "u0000";
   * the walk then tells.
   */
  public static boolean mayHoldNul(Buffer body) {
    for (int i = 0, end = body.length() - 5; i < end; i++) {
      if (body.getByte(i) == '\\' && (body.getByte(i + 1) | 0x20) == 'u' && body.getByte(i + 2) == '0'
          && body.getByte(i + 3) == '0' && body.getByte(i + 4) == '0' && body.getByte(i + 5) == '0') {
        return true;
      }
    }
    return false;
  }

  /**
   * A JSON string (a value or a member's name) that holds U+0000. JSON may carry it (as the escape backslash, u, 0000),
   * but PostgreSQL cannot store it in text or jsonb: left to the ledger, the statement failed and the client heard
   * "ledger unavailable" (503) for its own mistake (issue 26). Refused here, for every body the contract reads, before
   * any handler runs.
   */
  static final class NulInJson extends RuntimeException {
    NulInJson(String where) {
      super((where.isEmpty() ? "the body" : where) + ": a JSON string may not contain U+0000 (NUL), which the ledger cannot store",
          null, false, false);
    }
  }

  /** The JSON pointer of the first string holding U+0000 in {@code json} (under {@code where}), or null if none does. */
  public static String nulAt(Object json, String where) {
    if (json instanceof String s) {
      return s.indexOf('\0') >= 0 ? where : null;
    }
    if (json instanceof JsonObject o) {
      for (Map.Entry<String, Object> member : o) {
        String at = where + "/" + member.getKey().replace("~", "~0").replace("/", "~1");
        String found = member.getKey().indexOf('\0') >= 0 ? at : nulAt(member.getValue(), at);
        if (found != null) {
          return found;
        }
      }
    } else if (json instanceof JsonArray a) {
      for (int i = 0; i < a.size(); i++) {
        String found = nulAt(a.getValue(i), where + "/" + i);
        if (found != null) {
          return found;
        }
      }
    }
    return null;
  }

  /**
   * A handler for every route the contract describes: an invalid request ends here with 400 problem
   * JSON, a valid one goes on with its {@link Input}; a request the contract does not describe passes on
   * (the router answers 404 or 405).
   */
  public void handle(RoutingContext ctx) {
    Operation op = contract.findOperation(withoutTrailingSlash(ctx.normalizedPath()), ctx.request().method());
    if (op == null) {
      ctx.next();
      return;
    }
    validate(ctx, op, true).onComplete(ar -> {
      if (ar.succeeded()) {
        ar.result().attachTo(ctx);
        ctx.next();
      } else {
        String id = notALedgerId(ctx, op);
        if (id != null) {
          Problem.send(ctx, 400, "Bad Request", id);
        } else {
          badRequest(ctx, ar.cause());
        }
      }
    });
  }

  /**
   * The router takes {@code /api/v1/messages/} for {@code /api/v1/messages} (a trailing slash is optional in its paths),
   * but the contract's lookup does not: the handler then found no validated input and answered 500 (issue 26). The
   * lookup is made on the path the router matched, so such a request is the route's, validated as any other.
   */
  public static String withoutTrailingSlash(String path) {
    int end = path.length();
    while (end > 1 && path.charAt(end - 1) == '/') {
      end--;
    }
    return path.substring(0, end);
  }

  /**
   * The ledger id parameter (a path's {id}, a filter's message: their schemas say {@code format: uuid}) that is not
   * one, in an operator's words ({@link LedgerIds#notALedgerId}) rather than the pattern's "String does not match
   * pattern"; null when every such parameter holds a ledger id, and the failure is elsewhere.
   */
  public static String notALedgerId(RoutingContext ctx, Operation op) {
    ContractRequest.Values values;
    try {
      values = ContractRequest.of(ctx.request(), op, Buffer.buffer());
    } catch (RuntimeException e) {
      return null; // a path that cannot be decoded: said by the validator's failure
    }
    for (Parameter p : op.getParameters()) {
      Map<String, RequestParameter> in = switch (p.getIn()) {
        case PATH -> values.getPathParameters();
        case QUERY -> values.getQuery();
        default -> Map.of();
      };
      RequestParameter value = in.get(p.getName());
      if ("uuid".equals(p.getSchema().get("format")) && value != null && value.get() instanceof String s
          && !LedgerIds.isLedgerId(s)) {
        return LedgerIds.notALedgerId(s);
      }
    }
    return null;
  }

  /**
   * 400 with what the client has to fix. The validator says only that a body "can't be decoded" or is
   * missing; a client fixing its JSON wants the parser's own words, so on this (error) path the body is
   * parsed once more, on a worker.
   */
  public void badRequest(RoutingContext ctx, Throwable cause) {
    Buffer body = ctx.body() == null || ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
    if (cause instanceof NulInJson) {
      Problem.send(ctx, 400, "Bad Request", cause.getMessage());
      return;
    }
    if (cause instanceof SchemaValidationException || !(cause instanceof ValidatorException v)) {
      Problem.send(ctx, 400, "Bad Request", describe(cause, body));
      return;
    }
    if (v.type() == ValidatorErrorType.MISSING_REQUIRED_PARAMETER && body.length() == 0) {
      Problem.send(ctx, 400, "Bad Request", "the body must be a JSON object; it is empty");
      return;
    }
    if (v.type() != ValidatorErrorType.ILLEGAL_VALUE || body.length() == 0) {
      Problem.send(ctx, 400, "Bad Request", describe(cause, body));
      return;
    }
    ctx.vertx().executeBlocking(() -> {
      try {
        Json.decodeValue(body);
        return describe(cause, body);
      } catch (DecodeException e) {
        return "the body must be a JSON object; it is not valid JSON: " + e.getMessage();
      }
    }, false).onComplete(ar -> Problem.send(ctx, 400, "Bad Request", ar.succeeded() ? ar.result() : describe(cause, body)));
  }

  /**
   * What a client needs to fix, from a validator failure: the most specific errors and where in the body.
   * Errors are told apart by their keyword's location in the schema, never by the validator's wording.
   */
  public static String describe(Throwable e, Buffer body) {
    if (e instanceof SchemaValidationException s && s.getOutputUnit() != null) {
      List<Failure> errors = new ArrayList<>();
      collect(s.getOutputUnit(), errors);
      List<String> specific = specific(errors, body);
      if (!specific.isEmpty()) {
        return "request does not match openapi.yaml: " + String.join("; ", specific.subList(0, Math.min(5, specific.size())));
      }
    }
    return "request does not match openapi.yaml: " + e.getMessage();
  }

  /** One failed keyword: where in the instance (a JSON pointer, "" for the root), which keyword, the validator's words. */
  private record Failure(String where, String keyword, String error) {
    boolean unknownMember() {
      return keyword.equals("additionalProperties");
    }
  }

  /** Keywords whose failure only says that their subschemas failed; those failures are reported themselves. */
  private static final Set<String> SUMMARIES = Set.of("$ref", "$dynamicRef", "$recursiveRef", "if", "then", "else",
      "properties", "patternProperties", "propertyNames", "items", "prefixItems");

  private static void collect(OutputUnit unit, List<Failure> out) {
    if (unit.getErrors() != null && !unit.getErrors().isEmpty()) {
      for (OutputUnit child : unit.getErrors()) {
        collect(child, out);
      }
      return;
    }
    String location = unit.getKeywordLocation();
    if (unit.getError() == null || location == null) {
      return;
    }
    String keyword = location.substring(location.lastIndexOf('/') + 1);
    if (SUMMARIES.contains(keyword)) {
      return;
    }
    String where = unit.getInstanceLocation() == null ? "" : unit.getInstanceLocation().replaceFirst("^#", "");
    out.add(new Failure(where, keyword, unit.getError()));
  }

  /**
   * Keeps the deepest errors: one at /attachments/0/inline explains one at /attachments. A member that
   * failed its own schema is also reported as "additional" by the validator; that echo is dropped.
   */
  private static List<String> specific(List<Failure> errors, Buffer body) {
    List<String> out = new ArrayList<>();
    for (Failure e : errors) {
      boolean deeper = errors.stream().anyMatch(o -> o.where().startsWith(e.where() + "/"));
      boolean echo = e.unknownMember() && errors.stream().anyMatch(o -> o.where().equals(e.where()) && !o.unknownMember());
      if (deeper || echo) {
        continue;
      }
      String line;
      if (e.where().isEmpty() && e.keyword().equals("type") && !jsonType(body).equals("object")) {
        line = "the body must be a JSON object, not " + jsonType(body);
      } else {
        line = (e.where().isEmpty() ? "" : e.where() + ": ") + (e.unknownMember() ? "unknown member \"" + member(e.where()) + "\"" : e.error());
      }
      if (!out.contains(line)) {
        out.add(line);
      }
    }
    return out;
  }

  /** The kind of JSON value a (syntactically valid) body holds, from its first character. */
  private static String jsonType(Buffer body) {
    for (int i = 0; i < body.length(); i++) {
      switch (body.getByte(i)) {
        case ' ', '\t', '\r', '\n' -> { }
        case '{' -> { return "object"; }
        case '[' -> { return "an array"; }
        case '"' -> { return "a string"; }
        case 't', 'f' -> { return "a boolean"; }
        case 'n' -> { return "null"; }
        default -> { return "a number"; }
      }
    }
    return "object"; // empty: said elsewhere
  }

  /** The member a JSON pointer ends with (its last segment, percent- and pointer-unescaped). */
  private static String member(String pointer) {
    String segment = pointer.substring(pointer.lastIndexOf('/') + 1);
    return URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8).replace("~1", "/").replace("~0", "~");
  }
}
