package dev.ledgerpost.intake.http;

import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.intake.http.SendRequest.Composed;
import dev.ledgerpost.platform.mail.Addresses;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.UUID;

/**
 * A send request made ready to relay: its envelope, its message in the wire form the relay sends, and
 * the hash its Idempotency-Key is checked against. Built on a worker: base64, MIME and hashing of a
 * message of many megabytes have no place on an event loop.
 */
public record PreparedSend(String mailFrom, List<String> recipients, MessageData message, Relay.MailParameters parameters,
    String requestHash) {

  /** Limits: the SMTP intake's, so both doors let in the same mail. */
  public record Limits(long maxMessageSize, int maxRecipients) {}

  /** @throws InvalidSend when the request cannot be sent as it is */
  public static PreparedSend prepare(JsonObject body, UUID operationId, String hostname, Limits limits) {
    SendRequest request = SendRequest.parse(body, limits.maxRecipients());
    byte[] bytes;
    String field;
    if (request instanceof Composed c) {
      bytes = MimeComposer.compose(c, "<" + operationId + "@" + hostname + ">", hostname);
      field = "(composed message)";
    } else {
      bytes = ((SendRequest.Raw) request).message();
      field = "raw";
    }
    MessageData data = WireMessage.of(bytes, limits.maxMessageSize(), field);
    boolean smtpUtf8 = !Addresses.ascii(request.mailFrom()) || request.recipients().stream().anyMatch(r -> !Addresses.ascii(r));
    Relay.MailParameters parameters = new Relay.MailParameters(data.size(), WireMessage.eightBit(bytes), smtpUtf8);
    return new PreparedSend(request.mailFrom(), request.recipients(), data, parameters, CanonicalJson.sha256(body));
  }
}
