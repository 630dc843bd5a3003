package dev.ledgerpost.platform.web;

import io.vertx.core.file.FileSystem;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.json.schema.JsonSchema;
import io.vertx.json.schema.JsonSchemaOptions;
import io.vertx.json.schema.SchemaException;
import io.vertx.json.schema.SchemaRepository;
import io.vertx.json.schema.Validator;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.OpenAPIVersion;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.contract.Path;
import io.vertx.openapi.contract.SecurityRequirement;
import io.vertx.openapi.contract.SecurityScheme;
import io.vertx.openapi.contract.Server;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The contract as vertx-openapi's request validator sees it, with each schema's validator made once and reused.
 * vertx-openapi asks the schema repository for a new validator for every parameter and every body of every request,
 * and each new one copies the repository's whole lookup table of schemas (every schema of openapi.yaml): issue 33's
 * profile of keyed HTTP sends found that copy to be about 250 of the 420 KiB allocated a send, on the validation
 * workers. A validator keeps nothing of a validation (each call keeps its state on its own stack) and only reads the
 * table after it was made, so one per schema serves every request on every thread.
 *
 * <p>Schemas are the contract's own objects (an operation's parameter and media type hand out the same one every time),
 * so they are keyed by identity. At most {@link #LIMIT} are kept: the contract has a few hundred; a schema made anew
 * for each call would be validated as before rather than kept for ever.
 */
final class ReusedValidators {
  static final int LIMIT = 4_096;

  private ReusedValidators() {}

  static OpenAPIContract of(OpenAPIContract contract) {
    return new Contract(contract, new Repository(contract.getSchemaRepository()));
  }

  /** Everything from {@code contract}, but its schema repository. */
  private record Contract(OpenAPIContract contract, SchemaRepository repository) implements OpenAPIContract {
    @Override
    public Operation operation(String operationId) {
      return contract.operation(operationId);
    }

    @Override
    public List<Operation> operations() {
      return contract.operations();
    }

    @Override
    public List<Path> getPaths() {
      return contract.getPaths();
    }

    @Override
    public JsonObject getRawContract() {
      return contract.getRawContract();
    }

    @Override
    public OpenAPIVersion getVersion() {
      return contract.getVersion();
    }

    @Override
    public SchemaRepository getSchemaRepository() {
      return repository;
    }

    @Override
    public List<Server> getServers() {
      return contract.getServers();
    }

    @Override
    public Path findPath(String urlPath) {
      return contract.findPath(urlPath);
    }

    @Override
    public Operation findOperation(String urlPath, HttpMethod method) {
      return contract.findOperation(urlPath, method);
    }

    @Override
    public List<SecurityRequirement> getSecurityRequirements() {
      return contract.getSecurityRequirements();
    }

    @Override
    public SecurityScheme securityScheme(String name) {
      return contract.securityScheme(name);
    }
  }

  /** The repository, whose {@link #validator(JsonSchema)} (the one the request validator calls) hands out kept ones. */
  static final class Repository implements SchemaRepository {
    private final SchemaRepository repository;
    private final Map<JsonSchema, Validator> kept = new IdentityHashMap<>();

    Repository(SchemaRepository repository) {
      this.repository = repository;
    }

    @Override
    public Validator validator(JsonSchema schema) {
      synchronized (kept) {
        Validator v = kept.get(schema);
        if (v != null) {
          return v;
        }
      }
      Validator made = repository.validator(schema); // outside the lock: making one copies the whole table
      synchronized (kept) {
        if (kept.size() < LIMIT) {
          kept.putIfAbsent(schema, made);
        }
      }
      return made;
    }

    /** How many validators are kept (tests). */
    int kept() {
      synchronized (kept) {
        return kept.size();
      }
    }

    @Override
    public SchemaRepository dereference(JsonSchema schema) throws SchemaException {
      repository.dereference(schema);
      return this;
    }

    @Override
    public SchemaRepository dereference(String uri, JsonSchema schema) throws SchemaException {
      repository.dereference(uri, schema);
      return this;
    }

    @Override
    public SchemaRepository preloadMetaSchema(FileSystem fs) {
      repository.preloadMetaSchema(fs);
      return this;
    }

    @Override
    public SchemaRepository preloadMetaSchema(FileSystem fs, io.vertx.json.schema.Draft draft) {
      repository.preloadMetaSchema(fs, draft);
      return this;
    }

    @Override
    public Validator validator(String ref) {
      return repository.validator(ref);
    }

    @Override
    public Validator validator(String ref, JsonSchemaOptions options) {
      return repository.validator(ref, options);
    }

    @Override
    public Validator validator(JsonSchema schema, JsonSchemaOptions options, boolean dereference) {
      return repository.validator(schema, options, dereference);
    }

    @Override
    public JsonObject resolve(JsonObject schema) {
      return repository.resolve(schema);
    }

    @Override
    public JsonSchema find(String pointer) {
      return repository.find(pointer);
    }
  }
}
