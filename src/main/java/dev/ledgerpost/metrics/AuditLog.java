package dev.ledgerpost.metrics;

import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * CRITICAL audit events: one ERROR line each on logger {@code dev.ledgerpost.audit}. The text reads
 * {@code CRITICAL audit_event=<event> key=value ...} for people and grep; the same fields ride along as
 * SLF4J key-value pairs, which the JSON log format writes as JSON fields.
 */
public final class AuditLog {
  private static final Logger AUDIT = LoggerFactory.getLogger("dev.ledgerpost.audit");

  private AuditLog() {}

  public static Fields critical(String event) {
    return new Fields(event);
  }

  /** The fields of one event, in the order given. */
  public static final class Fields {
    private final String event;
    private final Map<String, Object> fields = new LinkedHashMap<>();

    private Fields(String event) {
      this.event = event;
    }

    public Fields with(String key, Object value) {
      fields.put(key, value);
      return this;
    }

    public void log() {
      StringBuilder text = new StringBuilder("CRITICAL audit_event=").append(event);
      LoggingEventBuilder b = AUDIT.atError().addKeyValue("audit_event", event);
      for (Map.Entry<String, Object> f : fields.entrySet()) {
        text.append(' ').append(f.getKey()).append('=').append(render(f.getValue()));
        b = b.addKeyValue(f.getKey(), f.getValue() == null ? null : String.valueOf(f.getValue()));
      }
      b.log(text.toString());
    }

    private static String render(Object v) {
      if (v == null) {
        return "-";
      }
      String s = String.valueOf(v);
      return s.isEmpty() || s.indexOf(' ') >= 0 || s.indexOf('"') >= 0 ? '"' + s.replace("\"", "'") + '"' : s;
    }
  }
}
