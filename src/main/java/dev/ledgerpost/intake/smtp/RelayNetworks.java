package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.platform.config.Cidr;
import java.util.List;

/**
 * smtp.relayNetworks as the sessions consult it: an unauthenticated client may relay when its address is in one of
 * them, and the first that holds it is its rule (it scopes the resubmission fingerprint, docs/contract.md §1.13).
 */
record RelayNetworks(List<Cidr> networks) implements SmtpSession.RelayPolicy {
  RelayNetworks {
    networks = List.copyOf(networks);
  }

  @Override
  public boolean mayRelayWithoutAuth(String clientIp) {
    return relayRule(clientIp) != null;
  }

  @Override
  public String relayRule(String clientIp) {
    for (Cidr n : networks) {
      if (n.contains(clientIp)) {
        return n.text();
      }
    }
    return null;
  }
}
