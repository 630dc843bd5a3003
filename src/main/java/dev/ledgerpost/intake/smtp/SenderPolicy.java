package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.platform.mail.Addresses;

import dev.ledgerpost.platform.config.ConfigException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Which MAIL FROM an authenticated user may use ({@code auth.senderPolicy}): any ({@link #ANY}), or only
 * the addresses and domains the senders file gives the user, in lines {@code user: addr, addr, @domain}
 * as Postfix's smtpd_sender_login_maps. Matching ignores case. Clients that did not authenticate (inside
 * smtp.relayNetworks) are not this policy's business. Immutable; shared by every event loop.
 */
public final class SenderPolicy {
  public static final SenderPolicy ANY = new SenderPolicy(null);
  private static final Pattern USER = Pattern.compile("[^\\s:]{1,128}");

  /** user -> lower-cased addresses and "@domain" entries; null for ANY. */
  private final Map<String, Set<String>> owned;

  private SenderPolicy(Map<String, Set<String>> owned) {
    this.owned = owned;
  }

  /** Reads the senders file (blocking: at start). A bad line stops the start with one message naming the file and the line. */
  public static SenderPolicy load(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException(List.of("auth.sendersFile " + file + ": cannot read: " + e.getMessage()));
    }
    return parse(file.toString(), lines);
  }

  static SenderPolicy parse(String source, List<String> lines) {
    Map<String, Set<String>> owned = new HashMap<>();
    List<String> bad = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String where = "auth.sendersFile " + source + " line " + (i + 1) + ": ";
      int colon = line.indexOf(':');
      String user = colon < 0 ? "" : line.substring(0, colon).trim();
      if (colon < 0 || !USER.matcher(user).matches()) {
        bad.add(where + "expected `user: addr, addr, @domain`");
        continue;
      }
      Set<String> senders = new HashSet<>();
      for (String item : line.substring(colon + 1).split(",", -1)) {
        String s = item.trim();
        boolean domain = s.startsWith("@");
        if (domain ? !Addresses.valid("x" + s) : !Addresses.valid(s)) {
          bad.add(where + "'" + s + "' is neither an address nor @domain");
          senders = null;
          break;
        }
        senders.add(s.toLowerCase(Locale.ROOT));
      }
      if (senders != null && owned.putIfAbsent(user, Set.copyOf(senders)) != null) {
        bad.add(where + "user '" + user + "' is listed twice");
      }
    }
    if (!bad.isEmpty()) {
      throw new ConfigException(bad);
    }
    return new SenderPolicy(Map.copyOf(owned));
  }

  /** Whether {@code user} (null: not authenticated) may use {@code mailFrom} ("" is the null sender). */
  public boolean mayUse(String user, String mailFrom) {
    if (owned == null || user == null) {
      return true;
    }
    Set<String> mine = owned.get(user);
    if (mine == null || mailFrom.isEmpty()) {
      return false; // a user who owns nothing sends nothing; bounces are an MTA's, not a user's
    }
    String address = mailFrom.toLowerCase(Locale.ROOT);
    int at = address.lastIndexOf('@');
    return mine.contains(address) || (at >= 0 && mine.contains(address.substring(at)));
  }
}
