package dev.ledgerpost.ledger;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A message's tags and metadata (docs/data-model.md §5.17): what the sending application says the mail is about, for
 * filters, webhooks and statistics. Both intakes build it through {@link #of} and so obey the same bounds: at most
 * {@link #MAX_TAGS} tags of at most {@link #MAX_TAG_LENGTH} characters ({@code [A-Za-z0-9][A-Za-z0-9._:/-]*}), at most
 * {@link #MAX_METADATA} metadata entries whose keys follow the same rule and whose values are at most
 * {@link #MAX_VALUE_LENGTH} characters without control characters (a tab, which a folded header line starts with, is one
 * they may hold). The bounds keep a row, an event and a webhook body
 * small whatever a client sends; the character set keeps a tag safe in a URL query, a CSV cell and a log line, and
 * lets the open's statement carry a message's tags as one comma-joined text. A tag repeated is kept once.
 */
public record MessageTags(List<String> tags, Map<String, String> metadata) {
  public static final int MAX_TAGS = 10;
  public static final int MAX_TAG_LENGTH = 64;
  public static final int MAX_METADATA = 10;
  public static final int MAX_VALUE_LENGTH = 256;
  public static final MessageTags NONE = new MessageTags(List.of(), Map.of());
  /** The SMTP header that adds one tag, and the one that adds one {@code key=value} metadata entry. */
  public static final String TAG_HEADER = "X-Ledgerpost-Tag";
  public static final String METADATA_HEADER = "X-Ledgerpost-Metadata";
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]*");

  public MessageTags {
    tags = List.copyOf(tags);
    metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
  }

  /** Why a message's tags or metadata are refused; its message is the reason a client is told. */
  public static final class Refused extends RuntimeException {
    public Refused(String reason) {
      super(reason, null, false, false);
    }
  }

  public boolean isEmpty() {
    return tags.isEmpty() && metadata.isEmpty();
  }

  /**
   * Checked tags and metadata; null values count as none.
   *
   * @throws Refused naming the first thing that breaks the bounds
   */
  public static MessageTags of(List<String> tags, Map<String, String> metadata) {
    LinkedHashSet<String> kept = new LinkedHashSet<>();
    if (tags != null) {
      for (String t : tags) {
        kept.add(name("tag", t));
      }
    }
    if (kept.size() > MAX_TAGS) {
      throw new Refused("at most " + MAX_TAGS + " tags, not " + kept.size());
    }
    Map<String, String> meta = new LinkedHashMap<>();
    if (metadata != null) {
      if (metadata.size() > MAX_METADATA) {
        throw new Refused("at most " + MAX_METADATA + " metadata entries, not " + metadata.size());
      }
      for (Map.Entry<String, String> e : metadata.entrySet()) {
        meta.put(name("metadata key", e.getKey()), value(e.getKey(), e.getValue()));
      }
    }
    return kept.isEmpty() && meta.isEmpty() ? NONE : new MessageTags(new ArrayList<>(kept), meta);
  }

  /**
   * From the values of a message's {@code X-Ledgerpost-Tag} headers (one tag each) and {@code X-Ledgerpost-Metadata}
   * headers ({@code key=value} each), unfolded; surrounding white space is not part of a value.
   */
  public static MessageTags fromHeaders(List<String> tagValues, List<String> metadataValues) {
    if (tagValues.isEmpty() && metadataValues.isEmpty()) {
      return NONE;
    }
    if (tagValues.size() > MAX_TAGS) {
      throw new Refused("at most " + MAX_TAGS + " " + TAG_HEADER + " headers");
    }
    if (metadataValues.size() > MAX_METADATA) {
      throw new Refused("at most " + MAX_METADATA + " " + METADATA_HEADER + " headers");
    }
    List<String> tags = new ArrayList<>(tagValues.size());
    for (String v : tagValues) {
      tags.add(v.trim());
    }
    Map<String, String> meta = new LinkedHashMap<>();
    for (String v : metadataValues) {
      int eq = v.indexOf('=');
      if (eq < 0) {
        throw new Refused(METADATA_HEADER + " must be key=value");
      }
      String key = v.substring(0, eq).trim();
      if (meta.put(key, v.substring(eq + 1).trim()) != null) {
        throw new Refused("metadata key " + printable(key) + " given twice");
      }
    }
    return of(tags, meta);
  }

  private static String name(String what, String s) {
    if (s == null || s.isEmpty()) {
      throw new Refused("a " + what + " is empty");
    }
    if (s.length() > MAX_TAG_LENGTH) {
      throw new Refused("the " + what + " " + printable(s.substring(0, 16)) + "… is longer than " + MAX_TAG_LENGTH
          + " characters");
    }
    if (!NAME.matcher(s).matches()) {
      throw new Refused("the " + what + " " + printable(s) + " may hold only letters, digits and . _ : / - (starting "
          + "with a letter or digit)");
    }
    return s;
  }

  private static String value(String key, String v) {
    if (v == null) {
      throw new Refused("metadata " + key + " has no value");
    }
    if (v.length() > MAX_VALUE_LENGTH) {
      throw new Refused("metadata " + key + " is longer than " + MAX_VALUE_LENGTH + " characters");
    }
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if ((Character.isISOControl(c) && c != '\t') || c == '\u2028' || c == '\u2029') { // a tab: a folded header's
        throw new Refused("metadata " + key + " holds a control character");
      }
    }
    return v;
  }

  /** A client's text quoted into a reply: only printable ASCII survives (a reply line must stay one safe line). */
  private static String printable(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length() && i < 64; i++) {
      char c = s.charAt(i);
      b.append(c >= 0x20 && c < 0x7f && c != '"' ? c : '?');
    }
    return b.append('"').toString();
  }

  /** The tags as the open's statement carries them (comma-joined; a tag holds no comma), null for none. */
  String joined() {
    return tags.isEmpty() ? null : String.join(",", tags);
  }

  /** The metadata as JSON text for the open's statement, null for none. */
  String metadataJson() {
    return metadata.isEmpty() ? null : new io.vertx.core.json.JsonObject(new LinkedHashMap<>(metadata)).encode();
  }

  /** The metadata's keys only: its values are the application's and may be personal (a log line needs none). */
  @Override
  public String toString() {
    return "tags=" + tags + " metadata=" + metadata.keySet();
  }
}
