package dev.sandboxsdk.agent.egress;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * What the proxy trusts when it opens its own TLS connection to a host it intercepts for a secret:
 * the JDK's default trust store, and in tests also a test CA ({@code --egress-test-trust}), the
 * way {@link EgressResolver} lets tests map names to loopback. Host names are always verified.
 */
@FunctionalInterface
public interface EgressTrust {
  /** The client context the proxy's upstream connections are made with. */
  SSLContext context();

  /** The JDK's default trust store. */
  static EgressTrust system() {
    return systemAnd(List.of());
  }

  /**
   * The JDK's default trust store and {@code extra} CAs besides (a test hook: a loopback upstream's
   * own CA).
   */
  static EgressTrust systemAnd(List<X509Certificate> extra) {
    SSLContext context;
    try {
      context = SSLContext.getInstance("TLS");
      if (extra.isEmpty()) {
        context.init(null, null, null); // the default trust managers
      } else {
        TrustManagerFactory def = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        def.init((KeyStore) null);
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int i = 0;
        for (TrustManager tm : def.getTrustManagers()) {
          if (tm instanceof X509TrustManager x) {
            for (X509Certificate c : x.getAcceptedIssuers()) {
              store.setCertificateEntry("system-" + i++, c);
            }
          }
        }
        for (X509Certificate c : extra) {
          store.setCertificateEntry("extra-" + i++, c);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(store);
        context.init(null, tmf.getTrustManagers(), null);
      }
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot set up TLS for the egress proxy: " + e.getMessage(), e);
    }
    return () -> context;
  }

  /**
   * The certificates of {@code --egress-test-trust}: PEM text itself when it starts with
   * {@code -----BEGIN} (how a test hands its CA to an agent in a container or pod, where no file
   * of the test's exists), else the PEM file it names.
   *
   * @throws IllegalArgumentException if it has none or cannot be read
   */
  static List<X509Certificate> readPem(String fileOrPem) {
    if (fileOrPem.startsWith("-----BEGIN")) {
      return parsePem(fileOrPem.getBytes(java.nio.charset.StandardCharsets.US_ASCII), "the PEM text given");
    }
    Path file = Path.of(fileOrPem);
    try {
      return parsePem(Files.readAllBytes(file), file.toString());
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read certificates from " + file + ": " + e.getMessage(), e);
    }
  }

  private static List<X509Certificate> parsePem(byte[] pem, String source) {
    try {
      List<X509Certificate> out = new ArrayList<>();
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem))) {
        out.add((X509Certificate) c);
      }
      if (out.isEmpty()) {
        throw new IllegalArgumentException(source + " holds no certificate");
      }
      return out;
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("cannot read certificates from " + source + ": " + e.getMessage(), e);
    }
  }
}
