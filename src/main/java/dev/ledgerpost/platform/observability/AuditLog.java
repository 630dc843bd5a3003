package dev.ledgerpost.platform.observability;

import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * The audit log: one line per {@link AuditEvent} on logger {@code dev.ledgerpost.audit}. The text reads
 * {@code [CRITICAL ]audit_event=<event> key=value ...[: explanation]} for people and grep; the same fields ride
 * along as SLF4J key-value pairs, which the JSON log format writes as JSON fields. Every audit line goes
 * through here, so text and JSON never disagree.
 */
public final class AuditLog {
  private static final Logger AUDIT = LoggerFactory.getLogger("dev.ledgerpost.audit");

  private AuditLog() {}

  public static Fields of(AuditEvent event) {
    return new Fields(event);
  }

  /** The fields of one event; written in the event's order whatever the order they were given in. */
  public static final class Fields {
    private final AuditEvent event;
    private final Map<String, Object> values = new LinkedHashMap<>();

    private Fields(AuditEvent event) {
      this.event = event;
    }

    /** A field of this event; a key the event does not declare is a programming error. */
    public Fields with(String key, Object value) {
      if (!event.fields().contains(key)) {
        throw new IllegalArgumentException("audit event " + event.eventName() + " has no field " + key);
      }
      values.put(key, value);
      return this;
    }

    /** The line's text, as {@link #log()} writes it. */
    public String text() {
      StringBuilder text = new StringBuilder(event.level() == AuditEvent.Level.CRITICAL ? "CRITICAL " : "")
          .append("audit_event=").append(event.eventName());
      for (String key : event.fields()) {
        text.append(' ').append(key).append('=').append(render(values.get(key)));
      }
      if (event.explanation() != null) {
        text.append(": ").append(event.explanation());
      }
      return text.toString();
    }

    public void log() {
      LoggingEventBuilder b = (event.level() == AuditEvent.Level.CRITICAL ? AUDIT.atError() : AUDIT.atInfo())
          .addKeyValue("audit_event", event.eventName());
      for (String key : event.fields()) {
        Object v = values.get(key);
        b = b.addKeyValue(key, v == null ? null : printable(String.valueOf(v)));
      }
      b.log(text());
    }

    /** A value as one token: "-" for none, quoted when it holds a space, never a line break or a double quote inside. */
    static String render(Object v) {
      if (v == null) {
        return "-";
      }
      String s = printable(String.valueOf(v)).replace('"', '\'');
      return s.isEmpty() || s.indexOf(' ') >= 0 ? '"' + s + '"' : s;
    }

    /** Control characters (a CR/LF would forge a second log line) as '_'. */
    private static String printable(String s) {
      return s.replaceAll("\\p{Cntrl}", "_");
    }
  }
}
