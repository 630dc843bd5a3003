package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.platform.mail.Addresses;

/**
 * What follows {@code MAIL FROM:} or {@code RCPT TO:}, read: the mailbox and its ESMTP parameters, or the reply
 * that refuses them. A line that was not UTF-8 was read with U+FFFD in it: its address is refused, never relayed
 * or recorded as something the client did not send.
 */
final class EnvelopeArgument {
  private EnvelopeArgument() {}

  /** MAIL's: {@code refusal} null when {@code from} (empty for a bounce) and {@code parameters} may be used. */
  record Sender(String from, EsmtpParameters.Mail parameters, Reply refusal) {
    static Sender refused(Reply reply) {
      return new Sender(null, null, reply);
    }
  }

  /** RCPT's: {@code refusal} null when {@code to} and {@code parameters} may be used. */
  record Recipient(String to, EsmtpParameters.Rcpt parameters, Reply refusal) {
    static Recipient refused(Reply reply) {
      return new Recipient(null, null, reply);
    }
  }

  static Sender sender(String argument, boolean utf8, long maxMessageSize, EsmtpParameters.Offered offered) {
    if (!utf8) {
      return Sender.refused(Replies.SENDER_NOT_UTF8);
    }
    Addresses.PathArgument path = Addresses.splitPath(argument);
    String from = path == null ? null : Addresses.mailbox(path.path());
    if (from == null || path.path().isEmpty()) {
      return Sender.refused(Replies.BAD_SENDER);
    }
    EsmtpParameters.Mail parameters = EsmtpParameters.mail(path.parameters(), maxMessageSize, offered);
    if (parameters.refusal() != null) {
      return Sender.refused(parameters.refusal());
    }
    if (!parameters.smtpUtf8() && !Addresses.ascii(from)) {
      return Sender.refused(Replies.NEEDS_SMTPUTF8);
    }
    return new Sender(from, parameters, null);
  }

  /** {@code smtpUtf8}: whether the transaction's MAIL asked for SMTPUTF8. */
  static Recipient recipient(String argument, boolean utf8, boolean dsnOffered, boolean smtpUtf8) {
    if (!utf8) {
      return Recipient.refused(Replies.RECIPIENT_NOT_UTF8);
    }
    Addresses.PathArgument path = Addresses.splitPath(argument);
    String to = path == null ? null : Addresses.mailbox(path.path());
    if (to == null || to.isEmpty()) {
      return Recipient.refused(Replies.BAD_RECIPIENT);
    }
    EsmtpParameters.Rcpt parameters = EsmtpParameters.rcpt(path.parameters(), dsnOffered, smtpUtf8);
    if (parameters.refusal() != null) {
      return Recipient.refused(parameters.refusal());
    }
    if (!smtpUtf8 && !Addresses.ascii(to)) {
      return Recipient.refused(Replies.NEEDS_SMTPUTF8);
    }
    return new Recipient(to, parameters, null);
  }
}
