package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.yarnrl.v1.ScheduleRequest;

/**
 * TLS, mTLS and the bearer token between the plugin and grpc-java engines on loopback, with certificates made at
 * test time: what works works, and every refusal (wrong CA, expired certificate, missing or foreign client
 * certificate, missing or wrong token, TLS against a plaintext engine) fails the call with a message that says
 * which setting to fix. Bad settings fail at start, naming the key.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EngineChannelsTest {
  @TempDir
  Path dir;

  private TestCerts.Issued ca;
  private TestCerts.Issued otherCa;
  private TestCerts.Issued server;
  private TestCerts.Issued expiredServer;
  private TestCerts.Issued client;
  private TestCerts.Issued foreignClient;
  private final List<AutoCloseable> open = new ArrayList<>();
  private final RlSchedulerMetrics metrics = new RlSchedulerMetrics();

  @BeforeAll
  void certificates(@TempDir Path certs) throws Exception {
    ca = TestCerts.ca(certs, "ca");
    otherCa = TestCerts.ca(certs, "other-ca");
    server = TestCerts.leaf(certs, "engine", ca, false);
    expiredServer = TestCerts.leaf(certs, "engine-expired", ca, true);
    client = TestCerts.leaf(certs, "rm", ca, false);
    foreignClient = TestCerts.leaf(certs, "rm-foreign", otherCa, false);
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
    open.clear();
  }

  private TestEngines.Fake engine(ServerCredentials creds, String token) throws Exception {
    TestEngines.Fake f = new TestEngines.Fake("e", creds, token);
    open.add(f);
    return f;
  }

  private static ServerCredentials tls(TestCerts.Issued cert) throws Exception {
    return TlsServerCredentials.newBuilder().keyManager(cert.certPem.toFile(), cert.keyPem.toFile()).build();
  }

  private ServerCredentials mtls(TestCerts.Issued cert) throws Exception {
    return TlsServerCredentials.newBuilder().keyManager(cert.certPem.toFile(), cert.keyPem.toFile())
        .trustManager(ca.certPem.toFile()).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE).build();
  }

  private EngineClient client(String address, EngineChannels channels) {
    EngineClient c = new EngineClient(address, channels, 5000, 3, 5000, 20, 64, metrics, System::currentTimeMillis);
    open.add(c);
    return c;
  }

  private static File f(TestCerts.Issued i, boolean key) {
    return (key ? i.keyPem : i.certPem).toFile();
  }

  private static String refusal(EngineClient c) {
    EngineClient.CallFailed e = assertThrows(EngineClient.CallFailed.class,
        () -> c.schedule(ScheduleRequest.newBuilder().setRequestId("1").build()));
    return e.getMessage();
  }

  @Test
  void tlsWithTheEnginesCaWorksAndHealthFollows() throws Exception {
    TestEngines.Fake e = engine(tls(server), null);
    EngineClient c = client(e.address(), EngineChannels.create(true, f(ca, false), null, null, null, null));
    assertEquals("e", c.schedule(ScheduleRequest.newBuilder().setRequestId("1").build()).getDecisionId());
    assertEquals(EngineClient.Health.SERVING, c.checkHealth(5000).health);
  }

  @Test
  void anEngineCertificateFromAnotherCaIsRefused() throws Exception {
    TestEngines.Fake e = engine(tls(server), null);
    EngineClient c = client(e.address(), EngineChannels.create(true, f(otherCa, false), null, null, null, null));
    String m = refusal(c);
    assertTrue(m.contains("not signed by a CA in " + EngineChannels.TLS_TRUST_CA), m);
    EngineClient.HealthCheck h = c.checkHealth(5000);
    assertEquals(EngineClient.Health.UNREACHABLE, h.health);
    assertTrue(h.detail.contains(EngineChannels.TLS_TRUST_CA), h.toString());
    assertEquals(0, e.schedules.get());
  }

  @Test
  void anExpiredEngineCertificateIsRefused() throws Exception {
    TestEngines.Fake e = engine(tls(expiredServer), null);
    EngineClient c = client(e.address(), EngineChannels.create(true, f(ca, false), null, null, null, null));
    String m = refusal(c);
    assertTrue(m.contains("expired"), m);
    assertEquals(0, e.schedules.get());
  }

  @Test
  void mtlsNeedsAClientCertificateSignedByTheEnginesCa() throws Exception {
    TestEngines.Fake e = engine(mtls(server), null);
    // no client certificate
    EngineClient none = client(e.address(), EngineChannels.create(true, f(ca, false), null, null, null, null));
    String m = refusal(none);
    // TLS 1.3: the engine checks the client certificate after the client finished its side of the handshake, so
    // the refusal arrives as the engine's certificate_required alert
    assertTrue(m.contains("refused the plugin's client certificate"), m);
    // a client certificate from another CA
    EngineClient foreign = client(e.address(),
        EngineChannels.create(true, f(ca, false), f(foreignClient, false), f(foreignClient, true), null, null));
    String m2 = refusal(foreign);
    assertTrue(m2.contains("TLS handshake failed"), m2);
    assertEquals(0, e.schedules.get());
    // the right one
    EngineClient good = client(e.address(),
        EngineChannels.create(true, f(ca, false), f(client, false), f(client, true), null, null));
    assertEquals("e", good.schedule(ScheduleRequest.newBuilder().setRequestId("1").build()).getDecisionId());
    assertEquals(1, e.schedules.get());
  }

  @Test
  void tlsAgainstAPlaintextEngineSaysSo() throws Exception {
    TestEngines.Fake e = engine(null, null);
    EngineClient c = client(e.address(), EngineChannels.create(true, f(ca, false), null, null, null, null));
    String m = refusal(c);
    assertTrue(m.contains("does not speak TLS") || m.contains("TLS handshake failed"), m);
  }

  @Test
  void aMissingOrWrongTokenIsRefusedOnEveryService() throws Exception {
    TestEngines.Fake e = engine(tls(server), "s3cret-token");
    EngineClient none = client(e.address(), EngineChannels.create(true, f(ca, false), null, null, null, null));
    EngineClient.CallFailed f1 = assertThrows(EngineClient.CallFailed.class,
        () -> none.schedule(ScheduleRequest.getDefaultInstance()));
    assertEquals(EngineClient.Failure.ERROR, f1.failure);
    assertTrue(f1.getMessage().contains("UNAUTHENTICATED") && f1.getMessage().contains(EngineChannels.TOKEN_FILE),
        f1.getMessage());
    assertEquals(EngineClient.Health.UNREACHABLE, none.checkHealth(5000).health); // health follows the same policy
    EngineClient wrong = client(e.address(),
        EngineChannels.create(true, f(ca, false), null, null, null, "not-the-token"));
    assertTrue(refusal(wrong).contains("invalid token"));
    EngineClient right = client(e.address(),
        EngineChannels.create(true, f(ca, false), null, null, null, "s3cret-token"));
    assertEquals("e", right.schedule(ScheduleRequest.getDefaultInstance()).getDecisionId());
    assertEquals(EngineClient.Health.SERVING, right.checkHealth(5000).health);
    assertEquals(1, e.schedules.get());
  }

  @Test
  void aTokenFileWorksOverPlaintextToo() throws Exception {
    TestEngines.Fake e = engine(null, "tok");
    Path tokenFile = dir.resolve("token");
    Files.writeString(tokenFile, "tok\n", StandardCharsets.UTF_8);
    Configuration conf = new Configuration(false);
    conf.set(EngineChannels.TOKEN_FILE, tokenFile.toString());
    EngineChannels channels = EngineChannels.fromConf(conf);
    assertTrue(channels.toString().contains("plaintext, bearer token"), channels.toString());
    assertEquals("e", client(e.address(), channels).schedule(ScheduleRequest.getDefaultInstance()).getDecisionId());
  }

  @Test
  void fromConfReadsTheTlsKeysAndMtlsWorks() throws Exception {
    TestEngines.Fake e = engine(mtls(server), null);
    Configuration conf = new Configuration(false);
    conf.set(EngineChannels.TLS_TRUST_CA, ca.certPem.toString());
    conf.set(EngineChannels.TLS_CLIENT_CERT, client.certPem.toString());
    conf.set(EngineChannels.TLS_CLIENT_KEY, client.keyPem.toString());
    conf.set(EngineChannels.TLS_SERVER_NAME, "localhost");
    EngineChannels channels = EngineChannels.fromConf(conf); // TLS implied by the files
    assertTrue(channels.tls());
    assertEquals("e", client(e.address(), channels).schedule(ScheduleRequest.getDefaultInstance()).getDecisionId());
  }

  @Test
  void badSettingsFailAtStartNamingTheKey() throws Exception {
    Path notPkcs8 = dir.resolve("rsa.key");
    Files.writeString(notPkcs8, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
    Path garbage = dir.resolve("garbage.crt");
    Files.writeString(garbage, "not a certificate");
    Path empty = dir.resolve("empty-token");
    Files.writeString(empty, "  \n");

    assertRefused(c -> c.set(EngineChannels.TLS_TRUST_CA, dir.resolve("nope.pem").toString()),
        EngineChannels.TLS_TRUST_CA + "=");
    assertRefused(c -> c.set(EngineChannels.TLS_TRUST_CA, garbage.toString()), "not PEM X.509");
    assertRefused(c -> c.set(EngineChannels.TLS_CLIENT_CERT, client.certPem.toString()), "go together");
    assertRefused(c -> {
      c.set(EngineChannels.TLS_CLIENT_CERT, client.certPem.toString());
      c.set(EngineChannels.TLS_CLIENT_KEY, notPkcs8.toString());
    }, "PKCS#8");
    assertRefused(c -> {
      c.set(EngineChannels.TLS_ENABLED, "false");
      c.set(EngineChannels.TLS_TRUST_CA, ca.certPem.toString());
    }, EngineChannels.TLS_ENABLED + "=false");
    assertRefused(c -> c.set(EngineChannels.TLS_ENABLED, "yes"), "true or false");
    assertRefused(c -> c.set(EngineChannels.TOKEN_FILE, empty.toString()), "is empty");
    assertRefused(c -> {
      c.set(EngineChannels.TOKEN, "a");
      c.set(EngineChannels.TOKEN_FILE, empty.toString());
    }, "not both");
    assertRefused(c -> c.set(EngineChannels.TOKEN, "a b"), "printable ASCII");
    assertEquals("plaintext", EngineChannels.fromConf(new Configuration(false)).toString());
  }

  private static void assertRefused(java.util.function.Consumer<Configuration> settings, String expected) {
    Configuration conf = new Configuration(false);
    settings.accept(conf);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> EngineChannels.fromConf(conf));
    assertTrue(e.getMessage().contains(expected), e.getMessage() + " lacks " + expected);
  }
}
