package dev.sandboxsdk.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A self-signed EC certificate for a few DNS names, made by the JDK's own {@code keytool} (the JDK
 * has no public API that signs one), for TLS servers in tests: its {@link #serverContext()}, a
 * {@link #clientContext()} that trusts it alone, and its {@link #pem()} for clients that read a CA
 * file (the agent's {@code --egress-test-trust}). Valid for two days.
 */
public final class TestCertificate {
  private static final char[] PASSWORD = "changeit".toCharArray();
  private static final String ALIAS = "test";

  private final KeyStore keys;

  private TestCertificate(KeyStore keys) {
    this.keys = keys;
  }

  /**
   * A new key and certificate for {@code names} (the first is also the subject's CN).
   *
   * @throws IllegalStateException if keytool fails
   */
  public static TestCertificate forNames(String... names) {
    if (names.length == 0) {
      throw new IllegalArgumentException("no names");
    }
    Path dir = null;
    try {
      dir = Files.createTempDirectory("test-certificate-");
      Path store = dir.resolve("keys.p12");
      List<String> san = new ArrayList<>();
      for (String n : names) {
        san.add("dns:" + n);
      }
      Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
          "-genkeypair", "-alias", ALIAS, "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + names[0],
          "-ext", "SAN=" + String.join(",", san), "-validity", "2", "-storetype", "PKCS12", "-keystore",
          store.toString(), "-storepass", new String(PASSWORD), "-keypass", new String(PASSWORD))
          .redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException("keytool failed: " + out);
      }
      KeyStore keys = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(store)) {
        keys.load(in, PASSWORD);
      }
      return new TestCertificate(keys);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } finally {
      TempFiles.deleteTree(dir);
    }
  }

  /** The certificate. */
  public Certificate certificate() {
    try {
      return keys.getCertificate(ALIAS);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The certificate in PEM. */
  public String pem() {
    try {
      return "-----BEGIN CERTIFICATE-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'})
          .encodeToString(certificate().getEncoded()) + "\n-----END CERTIFICATE-----\n";
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A TLS server context presenting the certificate. */
  public SSLContext serverContext() {
    try {
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, PASSWORD);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(kmf.getKeyManagers(), null, null);
      return context;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A TLS client context that trusts this certificate and nothing else. */
  public SSLContext clientContext() {
    try {
      KeyStore trust = KeyStore.getInstance("PKCS12");
      trust.load(null, null);
      trust.setCertificateEntry(ALIAS, certificate());
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(null, tmf.getTrustManagers(), null);
      return context;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
