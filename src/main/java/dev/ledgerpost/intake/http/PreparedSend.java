package dev.ledgerpost.intake.http;

import dev.ledgerpost.ledger.MessageTags;
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
    MessageTags tags = tags(body); // before the message is built: a refusal costs no MIME work
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
    MessageData data = WireMessage.of(bytes, limits.maxMessageSize(), m.field()).withTags(tags);
    boolean smtpUtf8 = !Addresses.ascii(request.mailFrom()) || request.recipients().stream().anyMatch(r -> !Addresses.ascii(r));
    Relay.MailParameters parameters = new Relay.MailParameters(data.size(), WireMessage.eightBit(bytes), smtpUtf8);
    return new PreparedSend(request.mailFrom(), request.recipients(), data, parameters, CanonicalJson.sha256(body));
  }

  /**
   * The request's {@code tags} and {@code metadata} (docs/data-model.md §5.17), held to the bounds SMTP's control headers
   * are held to; the schema already said they are an array of strings and an object of strings. They are members of the
   * body, so the Idempotency-Key's hash covers them: a retry with other tags is another request (422).
   */
  static MessageTags tags(JsonObject body) {
    java.util.List<String> tags = new java.util.ArrayList<>();
    io.vertx.core.json.JsonArray given = body.getJsonArray("tags");
    if (given != null) {
      for (int i = 0; i < given.size(); i++) {
        tags.add(given.getString(i));
      }
    }
    java.util.Map<String, String> metadata = new java.util.LinkedHashMap<>();
    JsonObject meta = body.getJsonObject("metadata");
    if (meta != null) {
      for (String k : meta.fieldNames()) {
        metadata.put(k, meta.getString(k));
      }
    }
    try {
      MessageTags.of(tags, null);
    } catch (MessageTags.Refused e) {
      throw InvalidSend.unprocessable("tags", e.getMessage());
    }
    try {
      return MessageTags.of(tags, metadata);
    } catch (MessageTags.Refused e) {
      throw InvalidSend.unprocessable("metadata", e.getMessage());
    }
  }
}
