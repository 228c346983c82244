package org.yarnrl.yarn;

import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import javax.security.auth.x500.X500Principal;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Certificates made at test time (BouncyCastle, on the test class path through Hadoop): a CA, and leaf
 * certificates for "localhost"/127.0.0.1 signed by it, valid now or expired, written as PEM files (keys as
 * unencrypted PKCS#8, what both grpc-java and the Python engine read).
 */
final class TestCerts {
  private static final AtomicLong SERIAL = new AtomicLong(System.nanoTime() & 0xffffffL);

  /** A certificate and its key, and where they were written. */
  static final class Issued {
    final X509Certificate cert;
    final KeyPair keys;
    final Path certPem;
    final Path keyPem;

    Issued(X509Certificate cert, KeyPair keys, Path certPem, Path keyPem) {
      this.cert = cert;
      this.keys = keys;
      this.certPem = certPem;
      this.keyPem = keyPem;
    }
  }

  private TestCerts() {}

  private static KeyPair keys() throws Exception {
    KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
    g.initialize(new ECGenParameterSpec("secp256r1"), new SecureRandom());
    return g.generateKeyPair();
  }

  /** A self-signed CA, valid from yesterday for a year. */
  static Issued ca(Path dir, String name) throws Exception {
    KeyPair k = keys();
    X500Principal subject = new X500Principal("CN=" + name);
    Instant now = Instant.now();
    JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(subject, BigInteger.valueOf(SERIAL.incrementAndGet()),
        Date.from(now.minus(Duration.ofDays(1))), Date.from(now.plus(Duration.ofDays(365))), subject, k.getPublic());
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
    b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    X509Certificate cert = sign(b, k);
    return write(dir, name, cert, k);
  }

  /** A leaf certificate for localhost and 127.0.0.1 signed by {@code ca}; {@code expired}: valid only until yesterday. */
  static Issued leaf(Path dir, String name, Issued ca, boolean expired) throws Exception {
    KeyPair k = keys();
    Instant now = Instant.now();
    Date from = Date.from(now.minus(Duration.ofDays(expired ? 30 : 1)));
    Date to = Date.from(expired ? now.minus(Duration.ofDays(1)) : now.plus(Duration.ofDays(30)));
    JcaX509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(ca.cert.getSubjectX500Principal(),
        BigInteger.valueOf(SERIAL.incrementAndGet()), from, to, new X500Principal("CN=" + name), k.getPublic());
    b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
        new GeneralName(GeneralName.dNSName, "localhost"),
        new GeneralName(GeneralName.iPAddress, InetAddress.getLoopbackAddress().getHostAddress())}));
    X509Certificate cert = sign(b, ca.keys);
    return write(dir, name, cert, k);
  }

  private static X509Certificate sign(JcaX509v3CertificateBuilder b, KeyPair signer) throws Exception {
    return new JcaX509CertificateConverter().getCertificate(
        b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer.getPrivate())));
  }

  private static Issued write(Path dir, String name, X509Certificate cert, KeyPair k) throws IOException,
      java.security.cert.CertificateEncodingException {
    Files.createDirectories(dir);
    Path c = dir.resolve(name + ".crt");
    Path key = dir.resolve(name + ".key");
    Files.writeString(c, pem("CERTIFICATE", cert.getEncoded()), StandardCharsets.US_ASCII);
    Files.writeString(key, pem("PRIVATE KEY", k.getPrivate().getEncoded()), StandardCharsets.US_ASCII);
    return new Issued(cert, k, c, key);
  }

  static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }
}
