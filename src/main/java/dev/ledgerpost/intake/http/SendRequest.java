package dev.ledgerpost.intake.http;

import dev.ledgerpost.platform.mail.Addresses;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.mail.mailencoder.EmailAddress;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A send request after schema validation (types, required members and unknown members are the
 * contract's job, see openapi.yaml): either a message the gateway composes, or a raw RFC 5322 message
 * with its envelope. Here the rules a schema cannot say well: no CR/LF in anything that becomes a header
 * or an SMTP command, valid mailboxes, decodable base64, headers the gateway owns left alone.
 */
public sealed interface SendRequest {

  /** One method per kind of request; implement both, there is no default (as {@code DeliveryOutcome.Visitor}). */
  interface Visitor<R> {
    R composed(Composed c);

    R raw(Raw r);
  }

  <R> R accept(Visitor<R> visitor);

  /** The SMTP envelope: MAIL FROM and the RCPT TO list, in order, without duplicates. */
  String mailFrom();

  List<String> recipients();

  record Attachment(String filename, String contentType, byte[] content) {}

  /** {@code headers} keep the client's order; {@code from}, {@code to} and {@code cc} may carry display names. */
  record Composed(String from, String mailFrom, List<String> to, List<String> cc, List<String> recipients, String subject,
      String text, String html, Map<String, String> headers, List<Attachment> attachments) implements SendRequest {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.composed(this);
    }
  }

  record Raw(String mailFrom, List<String> recipients, byte[] message) implements SendRequest {
    @Override
    public <R> R accept(Visitor<R> v) {
      return v.raw(this);
    }
  }

  /** Headers the composer writes itself; a client sets them through the request's own members. */
  Set<String> RESERVED_HEADERS = Set.of("from", "to", "cc", "bcc", "subject", "date", "mime-version", "content-type",
      "content-transfer-encoding", "content-disposition", "received", "return-path");
  /** RFC 5322 §2.2: printable US-ASCII except the colon. */
  Pattern HEADER_NAME = Pattern.compile("[!-9;-~]{1,76}");
  /** RFC 2045 type/subtype with optional parameters. */
  Pattern CONTENT_TYPE = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\\s*;.*)?");

  static SendRequest parse(JsonObject body, int maxRecipients) {
    if (body.containsKey("raw")) {
      return raw(body, maxRecipients);
    }
    return composed(body, maxRecipients);
  }

  private static Raw raw(JsonObject body, int maxRecipients) {
    JsonObject envelope = body.getJsonObject("envelope");
    String from = envelope.getString("from");
    noLineBreak("envelope.from", from);
    if (!from.isEmpty() && !Addresses.valid(from)) {
      throw InvalidSend.unprocessable("envelope.from", "'" + from + "' is not a mailbox (local@domain), nor empty for a bounce");
    }
    Set<String> recipients = new LinkedHashSet<>();
    JsonArray to = envelope.getJsonArray("to");
    for (int i = 0; i < to.size(); i++) {
      recipients.add(envelopeMailbox("envelope.to[" + i + "]", to.getString(i)));
    }
    checkCount(recipients, maxRecipients);
    return new Raw(from, List.copyOf(recipients), base64("raw", body.getString("raw")));
  }

  private static Composed composed(JsonObject body, int maxRecipients) {
    String from = body.getString("from");
    String mailFrom = headerMailbox("from", from);
    Set<String> recipients = new LinkedHashSet<>();
    List<String> to = addresses(body, "to", recipients);
    List<String> cc = addresses(body, "cc", recipients);
    addresses(body, "bcc", recipients); // envelope only: Bcc never becomes a header
    if (recipients.isEmpty()) {
      throw InvalidSend.unprocessable("to", "a message needs at least one recipient in to, cc or bcc");
    }
    checkCount(recipients, maxRecipients);
    String subject = body.getString("subject");
    noLineBreak("subject", subject);
    Map<String, String> headers = new LinkedHashMap<>();
    JsonObject given = body.getJsonObject("headers");
    if (given != null) {
      for (String name : given.fieldNames()) {
        String value = given.getString(name);
        noLineBreak("headers." + name, name);
        noLineBreak("headers." + name, value);
        if (!HEADER_NAME.matcher(name).matches()) {
          throw InvalidSend.unprocessable("headers." + name, "'" + name + "' is not a header field name (RFC 5322 §2.2)");
        }
        if (RESERVED_HEADERS.contains(name.toLowerCase(Locale.ROOT))) {
          throw InvalidSend.unprocessable("headers." + name, name + " is written by the gateway; use the request's own members");
        }
        headers.put(name, value);
      }
    }
    List<Attachment> attachments = new ArrayList<>();
    JsonArray list = body.getJsonArray("attachments");
    if (list != null) {
      for (int i = 0; i < list.size(); i++) {
        JsonObject a = list.getJsonObject(i);
        String field = "attachments[" + i + "]";
        String filename = a.getString("filename");
        noLineBreak(field + ".filename", filename);
        String contentType = a.getString("contentType", "application/octet-stream");
        noLineBreak(field + ".contentType", contentType);
        if (!CONTENT_TYPE.matcher(contentType).matches()) {
          throw InvalidSend.unprocessable(field + ".contentType", "'" + contentType + "' is not a MIME type (type/subtype)");
        }
        attachments.add(new Attachment(filename, contentType, base64(field + ".content", a.getString("content"))));
      }
    }
    String text = body.getString("text");
    String html = body.getString("html");
    if (text == null && html == null && attachments.isEmpty()) {
      throw InvalidSend.unprocessable("text", "a message needs text, html or an attachment");
    }
    return new Composed(from, mailFrom, to, cc, List.copyOf(recipients), subject, text, html, headers, attachments);
  }

  private static List<String> addresses(JsonObject body, String member, Set<String> recipients) {
    JsonArray list = body.getJsonArray(member);
    List<String> result = new ArrayList<>();
    if (list == null) {
      return result;
    }
    for (int i = 0; i < list.size(); i++) {
      String address = list.getString(i);
      recipients.add(headerMailbox(member + "[" + i + "]", address));
      result.add(address);
    }
    return result;
  }

  /** A header address ("Name <a@b>", "a@b (Name)" or "a@b"); returns its mailbox for the envelope. */
  private static String headerMailbox(String field, String address) {
    noLineBreak(field, address);
    String mailbox;
    try {
      mailbox = new EmailAddress(address.trim()).getEmail();
    } catch (IllegalArgumentException e) {
      throw InvalidSend.unprocessable(field, "'" + address + "' is not an address (a@b, or Name <a@b>)");
    }
    if (!Addresses.valid(mailbox)) {
      throw InvalidSend.unprocessable(field, "'" + mailbox + "' is not a mailbox (local@domain)");
    }
    return mailbox;
  }

  private static String envelopeMailbox(String field, String mailbox) {
    noLineBreak(field, mailbox);
    if (!Addresses.valid(mailbox)) {
      throw InvalidSend.unprocessable(field, "'" + mailbox + "' is not a mailbox (local@domain)");
    }
    return mailbox;
  }

  private static void checkCount(Set<String> recipients, int max) {
    if (recipients.size() > max) {
      throw InvalidSend.unprocessable("to", recipients.size() + " recipients; at most " + max + " per message");
    }
  }

  /** Header injection, and SMTP command injection through the envelope: refused, never cleaned up. */
  private static void noLineBreak(String field, String value) {
    if (value != null && (value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0)) {
      throw InvalidSend.unprocessable(field, field + " contains CR or LF (header injection refused)");
    }
  }

  /** Strict base64 (standard alphabet, padding optional); line breaks and spaces between groups are allowed. */
  private static byte[] base64(String field, String text) {
    try {
      return Base64.getDecoder().decode(text.replaceAll("[\\s]", ""));
    } catch (IllegalArgumentException e) {
      throw new InvalidSend(400, field, field + " is not valid base64: " + e.getMessage());
    }
  }
}
