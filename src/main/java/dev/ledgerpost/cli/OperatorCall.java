package dev.ledgerpost.cli;

import dev.ledgerpost.cli.ApiClient.Reply;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Mixin;

/**
 * A subcommand whose request the ledger records with who made it (messages resolve, reconcile accept|reject, ledger
 * erase): one POST whose body names the operator ({@code --operator}, default the login name). The subcommand says
 * where and what; how it is sent is here, once.
 */
abstract class OperatorCall extends MessagesCommand.ApiCall {
  @Mixin
  OperatorOption operator;

  /** The path posted to. */
  abstract String path();

  /** The body: {@code operator.body(...)} (who asks) with what is asked. */
  abstract JsonObject body(OperatorOption operator);

  /** How long the answer may take: the client's usual wait, unless the gateway answers only once its work is done. */
  Duration timeout() {
    return ApiClient.REQUEST_TIMEOUT;
  }

  @Override
  final Reply send(ApiClient client) throws IOException, InterruptedException {
    return client.post(path(), body(operator), Map.of(), timeout());
  }
}
