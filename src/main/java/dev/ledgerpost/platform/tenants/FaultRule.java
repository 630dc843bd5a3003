package dev.ledgerpost.platform.tenants;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One fault injection rule of a captured user (docs/design.md §8.11): at a stage of the SMTP dialogue, with a
 * probability, either a reply the gateway gives instead of going on, or a delay before it goes on. Exactly one of
 * {@code code} (with {@code enhanced} and {@code text}) and {@code delay} is set.
 *
 * @param at          where the rule applies: MAIL, RCPT, or DATA (the reply to the message's end)
 * @param probability 0 (never) to 1 (always)
 * @param code        the injected reply's code (4yz or 5yz, never 421), or 0 for a delay
 * @param enhanced    its RFC 3463 enhanced status code, of the code's class; null for a delay
 * @param text        its text, printable ASCII; null for a delay
 * @param delay       how long the gateway waits before going on; null for a reply
 */
public record FaultRule(Stage at, double probability, int code, String enhanced, String text, Duration delay) {
  /** Where a rule applies. The send API meets them in this order for one request (§8.11). */
  public enum Stage { MAIL, RCPT, DATA }

  /**
   * The longest delay: RFC 5321 §4.5.3.2's shortest timeout a client keeps for a reply the rules can delay (5 minutes
   * for MAIL and RCPT; 10 for the message's end). A longer one would test nothing but the client's timeout.
   */
  public static final Duration MAX_DELAY = Duration.ofMinutes(5);
  /** A reply line stays well under RFC 5321's 512 octets. */
  static final int MAX_TEXT = 200;
  /** The text of a rule that gives only a code and an enhanced code. */
  static final String DEFAULT_TEXT = "Fault injected by the gateway";

  private static final Pattern REPLY = Pattern.compile("([45][0-5][0-9]) ([45])\\.(\\d{1,3})\\.(\\d{1,3})(?: (.*))?");

  public FaultRule {
    if ((delay == null) == (enhanced == null)) {
      throw new IllegalArgumentException("a fault rule is a reply or a delay");
    }
  }

  /** A reply rule from its SMTP reply ("451 4.3.0 try again"); throws with a message fit for an operator. */
  public static FaultRule reply(Stage at, double probability, String reply) {
    Matcher m = REPLY.matcher(reply == null ? "" : reply);
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + reply + "' is not an SMTP reply with an enhanced status code "
          + "(e.g. \"451 4.3.0 try again\", \"550 5.1.1 no such user\"; 4yz or 5yz)");
    }
    int code = Integer.parseInt(m.group(1));
    if (m.group(1).charAt(0) != m.group(2).charAt(0)) {
      throw new IllegalArgumentException("'" + reply + "': the enhanced code's class " + m.group(2)
          + " is not the reply's (RFC 3463: " + m.group(1).charAt(0) + ".x.y with a " + m.group(1).charAt(0) + "yz reply)");
    }
    if (code == 421) {
      // 421 means the server closes the connection; the session stays open after an injected reply.
      throw new IllegalArgumentException("'" + reply + "': 421 closes the connection, which a fault rule does not; "
          + "use 451 for a temporary failure");
    }
    String text = m.group(5) == null || m.group(5).isBlank() ? DEFAULT_TEXT : m.group(5).trim();
    if (text.length() > MAX_TEXT || !text.chars().allMatch(c -> c >= 0x20 && c < 0x7f)) {
      throw new IllegalArgumentException("'" + reply + "': the text must be printable ASCII, at most " + MAX_TEXT
          + " characters");
    }
    String enhanced = m.group(2) + "." + Integer.parseInt(m.group(3)) + "." + Integer.parseInt(m.group(4));
    return new FaultRule(at, probability, code, enhanced, text, null);
  }

  /** A delay rule; throws with a message fit for an operator when {@code delay} is not in (0, {@link #MAX_DELAY}]. */
  public static FaultRule delay(Stage at, double probability, Duration delay) {
    if (delay.isZero() || delay.isNegative() || delay.compareTo(MAX_DELAY) > 0) {
      throw new IllegalArgumentException("a delay must be more than 0 and at most 5m (RFC 5321's client timeout for "
          + "MAIL and RCPT)");
    }
    return new FaultRule(at, probability, 0, null, null, delay);
  }

  /** A stage by name, any case; null when there is none of that name. */
  static Stage stage(String name) {
    try {
      return name == null ? null : Stage.valueOf(name.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** A delay rule: the gateway waits, then goes on as without it. */
  public boolean delays() {
    return delay != null;
  }

  /** The injected reply as it reads on the wire, without CRLF ("451 4.3.0 try again"); null for a delay. */
  public String replyLine() {
    return delay != null ? null : code + " " + enhanced + " " + text;
  }

  /** For log lines: what the rule does. */
  public String effect() {
    return delay != null ? "delay " + delay.toMillis() + "ms" : replyLine();
  }
}
