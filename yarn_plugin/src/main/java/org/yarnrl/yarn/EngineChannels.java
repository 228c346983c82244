package org.yarnrl.yarn;

import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.AbstractStub;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.Executor;
import org.apache.hadoop.conf.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the plugin reaches an engine: plaintext (the default, for an engine on loopback), TLS (the engine's
 * certificate checked against a CA), mTLS (plus a client certificate), and optionally a shared-secret bearer token
 * sent as gRPC call credentials ({@code authorization: Bearer <token>} on every call, health checks included).
 *
 * <p>Settings ({@code yarn-site.xml}): {@value #TLS_ENABLED}, {@value #TLS_TRUST_CA}, {@value #TLS_CLIENT_CERT},
 * {@value #TLS_CLIENT_KEY}, {@value #TLS_SERVER_NAME}, {@value #TOKEN_FILE}, {@value #TOKEN}. Every file is checked
 * when the scheduler starts, so a typo fails the ResourceManager's start with the key's name rather than every
 * heartbeat later.
 */
final class EngineChannels {
  private static final Logger LOG = LoggerFactory.getLogger(EngineChannels.class);

  static final String TLS_ENABLED = "yarnrl.engine.tls.enabled";
  static final String TLS_TRUST_CA = "yarnrl.engine.tls.trust-ca";
  static final String TLS_CLIENT_CERT = "yarnrl.engine.tls.client-cert";
  static final String TLS_CLIENT_KEY = "yarnrl.engine.tls.client-key";
  static final String TLS_SERVER_NAME = "yarnrl.engine.tls.server-name";
  static final String TOKEN = "yarnrl.engine.token";
  static final String TOKEN_FILE = "yarnrl.engine.token-file";

  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final ChannelCredentials credentials;
  private final boolean tls;
  private final String serverName;
  private final CallCredentials token;
  private final String description;

  private EngineChannels(ChannelCredentials credentials, boolean tls, String serverName, CallCredentials token,
      String description) {
    this.credentials = credentials;
    this.tls = tls;
    this.serverName = serverName;
    this.token = token;
    this.description = description;
  }

  /** Plaintext, no token: an engine on loopback (the default). */
  static EngineChannels plaintext() {
    return new EngineChannels(InsecureChannelCredentials.create(), false, null, null, "plaintext");
  }

  /**
   * The channel settings of a {@code yarn-site.xml}.
   *
   * @throws IllegalArgumentException naming the key, for a missing or unreadable file, a certificate that does not
   *     parse, a key that is not PKCS#8 PEM, a certificate without its key, or an empty token
   */
  static EngineChannels fromConf(Configuration conf) {
    File ca = file(conf, TLS_TRUST_CA);
    File cert = file(conf, TLS_CLIENT_CERT);
    File key = file(conf, TLS_CLIENT_KEY);
    boolean anyTlsFile = ca != null || cert != null || key != null;
    String enabled = conf.getTrimmed(TLS_ENABLED, "");
    boolean tls = enabled.isEmpty() ? anyTlsFile : Boolean.parseBoolean(enabled);
    if (!enabled.isEmpty() && !enabled.equalsIgnoreCase("true") && !enabled.equalsIgnoreCase("false")) {
      throw new IllegalArgumentException(TLS_ENABLED + " must be true or false, got '" + enabled + "'");
    }
    if (!tls && anyTlsFile) {
      throw new IllegalArgumentException(TLS_ENABLED + "=false but " + TLS_TRUST_CA + "/" + TLS_CLIENT_CERT + "/"
          + TLS_CLIENT_KEY + " are set: remove them or enable TLS");
    }
    String serverName = conf.getTrimmed(TLS_SERVER_NAME, "");
    String token = token(conf);
    return create(tls, ca, cert, key, serverName.isEmpty() ? null : serverName, token);
  }

  /** The same as {@link #fromConf} from values (tests, tools). */
  static EngineChannels create(boolean tls, File ca, File cert, File key, String serverName, String token) {
    StringBuilder what = new StringBuilder();
    ChannelCredentials creds;
    if (!tls) {
      creds = InsecureChannelCredentials.create();
      what.append("plaintext");
    } else {
      TlsChannelCredentials.Builder b = TlsChannelCredentials.newBuilder();
      if (ca != null) {
        checkCertificates(ca, TLS_TRUST_CA);
        try {
          b.trustManager(ca);
        } catch (IOException e) {
          throw new IllegalArgumentException(TLS_TRUST_CA + " " + ca + ": " + e.getMessage(), e);
        }
        what.append("TLS, engine certificate checked against ").append(ca);
      } else {
        what.append("TLS, engine certificate checked against the JVM's trust store");
      }
      if ((cert == null) != (key == null)) {
        throw new IllegalArgumentException(TLS_CLIENT_CERT + " and " + TLS_CLIENT_KEY + " go together: set both "
            + "(mTLS) or neither");
      }
      if (cert != null) {
        checkCertificates(cert, TLS_CLIENT_CERT);
        checkPkcs8Key(key);
        try {
          b.keyManager(cert, key);
        } catch (IOException e) {
          throw new IllegalArgumentException(TLS_CLIENT_CERT + "/" + TLS_CLIENT_KEY + ": " + e.getMessage(), e);
        }
        what.append(", client certificate ").append(cert).append(" (mTLS)");
      }
      if (serverName != null) {
        what.append(", engine name checked as ").append(serverName);
      }
      creds = b.build();
    }
    CallCredentials call = null;
    if (token != null) {
      call = new BearerToken(token);
      what.append(", bearer token");
      if (!tls) {
        LOG.warn("yarn-rl: the engine token is sent over a plaintext channel; anyone who can read the traffic between "
            + "the ResourceManager and the engine can reuse it. Use it on loopback only, or enable {}", TLS_ENABLED);
      }
    }
    return new EngineChannels(creds, tls, serverName, call, what.toString());
  }

  /** A channel to one engine ({@code host:port} or any gRPC target). */
  ManagedChannel open(String target) {
    ManagedChannelBuilder<?> b = Grpc.newChannelBuilder(target, credentials);
    if (serverName != null) {
      b.overrideAuthority(serverName);
    }
    return b.build();
  }

  /** The stub with the token attached, when there is one. */
  <S extends AbstractStub<S>> S withToken(S stub) {
    return token == null ? stub : stub.withCallCredentials(token);
  }

  boolean tls() {
    return tls;
  }

  @Override
  public String toString() {
    return description;
  }

  /**
   * {@link #explain}, plus what only this channel's settings tell: over TLS, an engine that closes the connection
   * right after the handshake is, with TLS 1.3, how a refused client certificate looks from the client (the engine
   * checks it after the client has finished its side, and gRPC reports no alert).
   */
  String explainFailure(StatusRuntimeException failure) {
    String problem = explain(failure);
    if (problem == null && tls && failure.getStatus().getCode() == Status.Code.UNAVAILABLE
        && String.valueOf(failure.getStatus().getDescription()).contains("Network closed")) {
      return "the engine closed the TLS connection after the handshake: an engine started with --tls-client-ca "
          + "refuses a missing, expired or foreign client certificate this way; check " + TLS_CLIENT_CERT + " and "
          + TLS_CLIENT_KEY + " (or the engine stopped)";
    }
    return problem;
  }

  /**
   * An operator's reading of a failed call: what in the TLS or token set-up is wrong, or null when the failure
   * says nothing about it (an engine that is down, slow, or answered with an error of its own).
   */
  static String explain(Throwable failure) {
    if (failure instanceof StatusRuntimeException
        && ((StatusRuntimeException) failure).getStatus().getCode() == Status.Code.UNAUTHENTICATED) {
      return "the engine refused the call as unauthenticated (" + ((StatusRuntimeException) failure).getStatus()
          .getDescription() + "): set " + TOKEN_FILE + " to a file holding the engine's --token-file secret";
    }
    if (failure instanceof StatusRuntimeException
        && ((StatusRuntimeException) failure).getStatus().getCode() == Status.Code.PERMISSION_DENIED) {
      return "the engine refused the call (" + ((StatusRuntimeException) failure).getStatus().getDescription()
          + "): check " + TOKEN_FILE;
    }
    StringBuilder chain = new StringBuilder();
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof CertificateExpiredException || t instanceof CertificateNotYetValidException) {
        return "TLS handshake failed: the engine's certificate is expired or not yet valid (" + t.getMessage() + ")";
      }
      chain.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append(" | ");
      if (t.getCause() == t) {
        break;
      }
    }
    String s = chain.toString();
    if (s.contains("NotSslRecordException") || s.contains("not an SSL/TLS record")) {
      return "TLS handshake failed: the engine does not speak TLS (started without --tls-cert?) or " + TLS_ENABLED
          + " should be false";
    }
    if (s.contains("validity check failed") || s.contains("CertificateExpired") || s.contains("NotAfter")) {
      return "TLS handshake failed: the engine's certificate is expired or not yet valid";
    }
    String lower = s.toLowerCase(java.util.Locale.ROOT);
    if (lower.contains("certificate_required") || lower.contains("bad_certificate") || lower.contains("unknown_ca")
        || lower.contains("certificate_unknown") || lower.contains("certificate_expired")) {
      return "TLS handshake failed: the engine refused the plugin's client certificate (missing, expired, or not "
          + "signed by the engine's --tls-client-ca): check " + TLS_CLIENT_CERT + " and " + TLS_CLIENT_KEY
          + " [" + firstSsl(s) + "]";
    }
    if (s.contains("PKIX") || s.contains("certification path") || s.contains("CertPath")) {
      return "TLS handshake failed: the engine's certificate is not signed by a CA in " + TLS_TRUST_CA + " ["
          + firstSsl(s) + "]";
    }
    if (s.contains("No subject alternative") || s.contains("No name matching")
        || s.contains("HostnameVerifier") || s.contains("hostname")) {
      return "TLS handshake failed: the engine's certificate does not name the address the plugin dialled; set "
          + TLS_SERVER_NAME + " to a name in the certificate [" + firstSsl(s) + "]";
    }
    if (s.contains("SSL") || s.contains("TLS") || s.contains("Handshake")) {
      return "TLS handshake failed [" + firstSsl(s) + "]";
    }
    return null;
  }

  private static String firstSsl(String chain) {
    for (String part : chain.split(" \\| ")) {
      if (part.contains("SSL") || part.contains("Cert") || part.contains("PKIX")) {
        return part;
      }
    }
    return chain;
  }

  private static File file(Configuration conf, String key) {
    String path = conf.getTrimmed(key, "");
    if (path.isEmpty()) {
      return null;
    }
    File f = new File(path);
    if (!f.isFile() || !f.canRead()) {
      throw new IllegalArgumentException(key + "=" + path + ": no such readable file");
    }
    return f;
  }

  private static String token(Configuration conf) {
    String inline = conf.getTrimmed(TOKEN, "");
    File file = file(conf, TOKEN_FILE);
    if (!inline.isEmpty() && file != null) {
      throw new IllegalArgumentException("set one of " + TOKEN + " and " + TOKEN_FILE + ", not both");
    }
    String token = inline;
    if (file != null) {
      try {
        token = Files.readString(file.toPath(), StandardCharsets.UTF_8).trim();
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file.toPath());
        if (perms.contains(PosixFilePermission.OTHERS_READ) || perms.contains(PosixFilePermission.GROUP_READ)) {
          LOG.warn("yarn-rl: {} {} is readable by group or others; chmod 600 it", TOKEN_FILE, file);
        }
      } catch (UnsupportedOperationException e) {
        // not a POSIX file system: nothing to check
      } catch (IOException e) {
        throw new IllegalArgumentException(TOKEN_FILE + " " + file + ": " + e.getMessage(), e);
      }
      if (token.isEmpty()) {
        throw new IllegalArgumentException(TOKEN_FILE + " " + file + " is empty");
      }
    }
    if (token.isEmpty()) {
      return null;
    }
    for (char c : token.toCharArray()) {
      if (c < 0x21 || c > 0x7e) {
        throw new IllegalArgumentException("the engine token (" + (file != null ? TOKEN_FILE : TOKEN)
            + ") must be printable ASCII without spaces");
      }
    }
    return token;
  }

  /** Parses the PEM certificates, warning about any outside its validity period (the handshake will fail). */
  private static void checkCertificates(File pem, String key) {
    Collection<? extends java.security.cert.Certificate> certs;
    try (InputStream in = Files.newInputStream(pem.toPath())) {
      certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
    } catch (IOException | CertificateException e) {
      throw new IllegalArgumentException(key + " " + pem + ": not PEM X.509 certificates (" + e.getMessage() + ")",
          e);
    }
    if (certs.isEmpty()) {
      throw new IllegalArgumentException(key + " " + pem + ": no certificate in it");
    }
    for (java.security.cert.Certificate c : certs) {
      X509Certificate x = (X509Certificate) c;
      try {
        x.checkValidity();
      } catch (CertificateExpiredException | CertificateNotYetValidException e) {
        LOG.warn("yarn-rl: {} {}: certificate {} is outside its validity period ({} to {}); TLS handshakes with it "
            + "will fail", key, pem, x.getSubjectX500Principal(), x.getNotBefore(), x.getNotAfter());
      }
    }
  }

  private static void checkPkcs8Key(File key) {
    String text;
    try {
      text = Files.readString(key.toPath(), StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IllegalArgumentException(TLS_CLIENT_KEY + " " + key + ": " + e.getMessage(), e);
    }
    if (text.contains("BEGIN ENCRYPTED PRIVATE KEY")) {
      throw new IllegalArgumentException(TLS_CLIENT_KEY + " " + key + " is encrypted; the plugin needs an "
          + "unencrypted PKCS#8 PEM key readable only by the ResourceManager's user");
    }
    if (!text.contains("BEGIN PRIVATE KEY")) {
      throw new IllegalArgumentException(TLS_CLIENT_KEY + " " + key + " is not a PKCS#8 PEM key (-----BEGIN PRIVATE "
          + "KEY-----); convert it with `openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8`");
    }
  }

  /** {@code authorization: Bearer <token>} on every call. */
  private static final class BearerToken extends CallCredentials {
    private final String header;

    BearerToken(String token) {
      this.header = "Bearer " + token;
    }

    @Override
    public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
      Metadata m = new Metadata();
      m.put(AUTHORIZATION, header);
      applier.apply(m);
    }

    @Override
    public String toString() {
      return "BearerToken(****)"; // never the secret
    }
  }
}
