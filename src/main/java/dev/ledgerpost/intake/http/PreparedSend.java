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

  /** The message's bytes, and what an error about them names. */
  private record Message(byte[] bytes, String field) {}

  /** The same send without {@code recipients} (an allowPartial send's suppressed ones); the message is unchanged. */
  PreparedSend without(java.util.Set<String> recipients) {
    return new PreparedSend(mailFrom, this.recipients.stream().filter(r -> !recipients.contains(r)).toList(), message,
        parameters, requestHash);
  }

  /** Limits: the SMTP intake's, so both doors let in the same mail. */
  public record Limits(long maxMessageSize, int maxRecipients) {}

  /** @throws InvalidSend when the request cannot be sent as it is */
  public static PreparedSend prepare(JsonObject body, UUID operationId, String hostname, Limits limits) {
    SendRequest request = SendRequest.parse(body, limits.maxRecipients());
    Message m = request.accept(new SendRequest.Visitor<>() {
      @Override
      public Message composed(Composed c) {
        return new Message(MimeComposer.compose(c, "<" + operationId + "@" + hostname + ">", hostname), "(composed message)");
      }

      @Override
      public Message raw(SendRequest.Raw r) {
        return new Message(r.message(), "raw");
      }
    });
    byte[] bytes = m.bytes();
    MessageData data = WireMessage.of(bytes, limits.maxMessageSize(), m.field());
    boolean smtpUtf8 = !Addresses.ascii(request.mailFrom()) || request.recipients().stream().anyMatch(r -> !Addresses.ascii(r));
    Relay.MailParameters parameters = new Relay.MailParameters(data.size(), WireMessage.eightBit(bytes), smtpUtf8);
    return new PreparedSend(request.mailFrom(), request.recipients(), data, parameters, CanonicalJson.sha256(body));
  }
}
