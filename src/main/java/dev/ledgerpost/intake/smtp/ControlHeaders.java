package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.ledger.MessageTags;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The gateway's control headers of one message, {@code X-Ledgerpost-Tag} and {@code X-Ledgerpost-Metadata}
 * (docs/data-model.md §5.17), picked out of its header section line by line as the readers see it: no second pass over
 * the message, and never a look past the first empty line (a body can be megabytes; the header section is what the
 * readers scan for the Message-ID already). Folded lines (starting with a space or a tab) belong to the field before
 * them. What it keeps is bounded: one value more than a message may have of each header (so that too many is still
 * told), each at most a little longer than a value may be (so that too long is still told).
 */
final class ControlHeaders {
  private static final int MAX_KEPT_CHARS = MessageTags.MAX_VALUE_LENGTH + MessageTags.MAX_TAG_LENGTH + 8;

  private final List<String> tags = new ArrayList<>();
  private final List<String> metadata = new ArrayList<>();
  /** The value being read (a control field's first line, then its folded lines), or null outside one. */
  private StringBuilder current;
  private List<String> currentList;

  /**
   * One line of the header section, without its CRLF and unstuffed. True when it is (part of) a control header: a
   * reader that strips them keeps it out of what is relayed.
   */
  boolean line(byte[] b, int from, int to) {
    if (to > from && (b[from] == ' ' || b[from] == '\t')) {
      if (current == null) {
        return false;
      }
      append(b, from, to);
      return true;
    }
    close();
    List<String> list = startsWith(b, from, to, MessageTags.TAG_HEADER) ? tags
        : startsWith(b, from, to, MessageTags.METADATA_HEADER) ? metadata : null;
    if (list == null) {
      return false;
    }
    currentList = list;
    current = new StringBuilder();
    append(b, from + (list == tags ? MessageTags.TAG_HEADER : MessageTags.METADATA_HEADER).length() + 1, to);
    return true;
  }

  /** The header section ended (the empty line, or the message without a body). */
  void close() {
    if (current != null) {
      if (currentList.size() <= Math.max(MessageTags.MAX_TAGS, MessageTags.MAX_METADATA)) {
        currentList.add(current.toString());
      }
      current = null;
      currentList = null;
    }
  }

  boolean any() {
    return !tags.isEmpty() || !metadata.isEmpty() || current != null;
  }

  /**
   * The message's tags and metadata.
   *
   * @throws MessageTags.Refused when they break the bounds
   */
  MessageTags tags() {
    close();
    return MessageTags.fromHeaders(tags, metadata);
  }

  private void append(byte[] b, int from, int to) {
    if (current.length() < MAX_KEPT_CHARS) {
      int n = Math.min(to - from, MAX_KEPT_CHARS - current.length() + 1);
      current.append(new String(b, from, n, StandardCharsets.UTF_8));
    }
  }

  /** Whether the line starts with {@code name:} in any case (a header's name is case-insensitive, RFC 5322 §1.2.2). */
  private static boolean startsWith(byte[] b, int from, int to, String name) {
    if (to - from < name.length() + 1 || b[from + name.length()] != ':') {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      if (Character.toLowerCase((char) b[from + i]) != Character.toLowerCase(name.charAt(i))) {
        return false;
      }
    }
    return true;
  }
}
