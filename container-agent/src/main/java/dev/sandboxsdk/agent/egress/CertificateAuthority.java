package dev.sandboxsdk.agent.egress;

import java.io.ByteArrayInputStream;
import java.math.BigInteger;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;

/**
 * A certificate authority that lives in memory only: an EC P-256 key made at start, a self-signed
 * certificate, and leaf certificates it issues per host for the TLS connections the egress proxy
 * terminates. Its private key is never written anywhere; only its certificate is ({@link #pem()}).
 * Issued leaves share one key pair (made at start as well) and are kept per host in a bounded
 * cache of {@value #MAX_CACHED} entries, the least recently used dropping out first.
 *
 * <p>The certificates are encoded by {@link Der} rather than by a library such as BouncyCastle:
 * the few structures needed (a name, a validity, five extensions) are a page of code, and the
 * agent's jar stays small (docs/decisions.md, "Egress: secrets").
 */
public final class CertificateAuthority {
  /** Leaves kept at once. */
  static final int MAX_CACHED = 256;
  /** How long an issued leaf is valid; one is issued again a day before it expires. */
  static final Duration LEAF_VALIDITY = Duration.ofDays(30);
  private static final String SIGNATURE = "SHA256withECDSA";
  private static final String ECDSA_SHA256 = "1.2.840.10045.4.3.2";
  private static final SecureRandom RANDOM = new SecureRandom();

  private final KeyPair key;
  private final X509Certificate certificate;
  private final byte[] keyId;
  private final byte[] name;
  private final KeyPair leafKey;
  private final Map<String, Leaf> leaves = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Leaf> eldest) {
      return size() > MAX_CACHED;
    }
  };

  private record Leaf(SSLContext context, X509Certificate certificate, Instant renewAfter) {}

  private CertificateAuthority(String commonName) throws GeneralSecurityException {
    this.key = ecKey();
    this.leafKey = ecKey();
    this.name = name(commonName);
    this.keyId = keyId(key.getPublic());
    ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
    byte[] extensions = Der.sequence(
        extension("2.5.29.19", true, Der.sequence(Der.bool(true), Der.integer(BigInteger.ZERO))),
        extension("2.5.29.15", true, Der.flags(0x06)), // keyCertSign, cRLSign
        extension("2.5.29.14", false, Der.octets(keyId)));
    this.certificate = sign(name, now.minusHours(1), now.plusYears(10), key.getPublic(), extensions);
  }

  /**
   * A new authority with a fresh key, named {@code commonName}.
   *
   * @throws IllegalStateException if the JDK lacks EC keys or ECDSA (every JDK 17 has them)
   */
  public static CertificateAuthority create(String commonName) {
    try {
      return new CertificateAuthority(commonName);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot make a certificate authority: " + e.getMessage(), e);
    }
  }

  /** The authority's own certificate. */
  public X509Certificate certificate() {
    return certificate;
  }

  /** The authority's certificate in PEM (the public part only). */
  public String pem() {
    return pem(certificate);
  }

  /** A certificate in PEM. */
  public static String pem(X509Certificate c) {
    try {
      return "-----BEGIN CERTIFICATE-----\n"
          + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(c.getEncoded())
          + "\n-----END CERTIFICATE-----\n";
    } catch (java.security.cert.CertificateEncodingException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * A TLS server context presenting a leaf for {@code host} (a DNS name) issued by this authority,
   * from the cache or issued now.
   */
  public SSLContext serverContext(String host) {
    return leaf(host).context();
  }

  /** The leaf presented for {@code host} (issued now if not cached). */
  X509Certificate leafCertificate(String host) {
    return leaf(host).certificate();
  }

  /** Leaves in the cache now. */
  synchronized int cachedLeaves() {
    return leaves.size();
  }

  private synchronized Leaf leaf(String host) {
    Leaf cached = leaves.get(host);
    if (cached != null && Instant.now().isBefore(cached.renewAfter())) {
      return cached;
    }
    try {
      ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
      ZonedDateTime until = now.plus(LEAF_VALIDITY);
      byte[] extensions = Der.sequence(
          extension("2.5.29.19", true, Der.sequence()),
          extension("2.5.29.15", true, Der.flags(0x80)), // digitalSignature
          extension("2.5.29.37", false, Der.sequence(Der.oid("1.3.6.1.5.5.7.3.1"))), // serverAuth
          extension("2.5.29.17", false, Der.sequence(Der.tlv(0x82, host.getBytes(StandardCharsets.US_ASCII)))),
          extension("2.5.29.35", false, Der.sequence(Der.tlv(0x80, keyId))),
          extension("2.5.29.14", false, Der.octets(keyId(leafKey.getPublic()))));
      String cn = host.length() <= 64 ? host : "sandbox egress";
      X509Certificate leaf = sign(name(cn), now.minusHours(1), until, leafKey.getPublic(), extensions);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(new javax.net.ssl.KeyManager[] {new FixedKey(leafKey.getPrivate(),
          new X509Certificate[] {leaf, certificate})}, null, null);
      Leaf issued = new Leaf(context, leaf, until.minusDays(1).toInstant());
      leaves.put(host, issued);
      return issued;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot issue a certificate for " + host + ": " + e.getMessage(), e);
    }
  }

  private X509Certificate sign(byte[] subject, ZonedDateTime from, ZonedDateTime until, PublicKey subjectKey,
      byte[] extensions) throws GeneralSecurityException {
    byte[] algorithm = Der.sequence(Der.oid(ECDSA_SHA256));
    byte[] serial = new byte[16];
    RANDOM.nextBytes(serial);
    serial[0] &= 0x7f;
    serial[0] |= 0x01; // positive, sixteen bytes
    byte[] tbs = Der.sequence(
        Der.tlv(0xa0, Der.integer(BigInteger.TWO)), // version 3
        Der.integer(new BigInteger(serial)),
        algorithm,
        name,
        Der.sequence(Der.time(from), Der.time(until)),
        subject,
        subjectKey.getEncoded(), // SubjectPublicKeyInfo, already DER
        Der.tlv(0xa3, extensions));
    Signature s = Signature.getInstance(SIGNATURE);
    s.initSign(key.getPrivate());
    s.update(tbs);
    byte[] der = Der.sequence(tbs, algorithm, Der.bits(s.sign()));
    CertificateFactory factory = CertificateFactory.getInstance("X.509");
    X509Certificate c = (X509Certificate) factory.generateCertificate(new ByteArrayInputStream(der));
    c.verify(key.getPublic());
    return c;
  }

  private static byte[] extension(String oid, boolean critical, byte[] value) {
    return critical ? Der.sequence(Der.oid(oid), Der.bool(true), Der.octets(value))
        : Der.sequence(Der.oid(oid), Der.octets(value));
  }

  private static byte[] name(String commonName) {
    return Der.sequence(
        Der.set(Der.sequence(Der.oid("2.5.4.10"), Der.utf8("Sandbox SDK egress"))),
        Der.set(Der.sequence(Der.oid("2.5.4.3"), Der.utf8(commonName))));
  }

  private static byte[] keyId(PublicKey k) throws GeneralSecurityException {
    return Arrays.copyOf(MessageDigest.getInstance("SHA-256").digest(k.getEncoded()), 20);
  }

  private static KeyPair ecKey() throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
    return g.generateKeyPair();
  }

  /** One key and its chain, whatever the handshake asks. */
  private static final class FixedKey extends X509ExtendedKeyManager {
    private static final String ALIAS = "leaf";
    private final PrivateKey privateKey;
    private final X509Certificate[] chain;

    FixedKey(PrivateKey privateKey, X509Certificate[] chain) {
      this.privateKey = privateKey;
      this.chain = chain;
    }

    @Override
    public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
      return "EC".equals(keyType) ? ALIAS : null;
    }

    @Override
    public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
      return "EC".equals(keyType) ? ALIAS : null;
    }

    @Override
    public String[] getServerAliases(String keyType, Principal[] issuers) {
      return "EC".equals(keyType) ? new String[] {ALIAS} : null;
    }

    @Override
    public String[] getClientAliases(String keyType, Principal[] issuers) {
      return null;
    }

    @Override
    public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
      return null;
    }

    @Override
    public X509Certificate[] getCertificateChain(String alias) {
      return ALIAS.equals(alias) ? chain.clone() : null;
    }

    @Override
    public PrivateKey getPrivateKey(String alias) {
      return ALIAS.equals(alias) ? privateKey : null;
    }
  }
}
