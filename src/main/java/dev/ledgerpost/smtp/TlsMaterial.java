package dev.ledgerpost.smtp;

import dev.ledgerpost.config.GatewayConfig;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.SelfSignedCertificate;
import io.vertx.core.net.ServerSSLOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The STARTTLS certificate: the configured PEM pair, or a self-signed one made at start. Blocking. */
public final class TlsMaterial {
  private static final Logger LOG = LoggerFactory.getLogger(TlsMaterial.class);

  private TlsMaterial() {}

  public static ServerSSLOptions load(GatewayConfig.Smtp smtp, String hostname) {
    ServerSSLOptions options = new ServerSSLOptions();
    if (!smtp.tlsCertFile().isEmpty()) {
      options.setKeyCertOptions(new PemKeyCertOptions().setCertPath(smtp.tlsCertFile()).setKeyPath(smtp.tlsKeyFile()));
      LOG.info("STARTTLS with the certificate in {}", smtp.tlsCertFile());
    } else {
      SelfSignedCertificate self = SelfSignedCertificate.create(hostname);
      options.setKeyCertOptions(self.keyCertOptions());
      LOG.warn("STARTTLS with a self-signed certificate for {}: configure smtp.tls.certFile/keyFile for production", hostname);
    }
    return options;
  }
}
