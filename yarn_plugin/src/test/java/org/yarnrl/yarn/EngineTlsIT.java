package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.yarnrl.v1.ScheduleRequest;

/**
 * The plugin's channel (the shaded jar's EngineClient) against the real `policy-engine serve --tls-cert --tls-key
 * --tls-client-ca --token-file`, with certificates made at test time: mTLS plus token works for Schedule's service,
 * GetInfo and health; a missing or foreign client certificate, an expired client certificate, a server certificate
 * from another CA and a missing or wrong token are refused with a message naming the setting on the plugin side and
 * a logged refusal on the engine side; an engine given an expired certificate refuses to start, saying so.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EngineTlsIT {
  private final Path work = Path.of("target", "it-tls").toAbsolutePath();
  private final RlSchedulerMetrics metrics = new RlSchedulerMetrics();
  private final List<EngineClient> clients = new ArrayList<>();
  private TestCerts.Issued ca;
  private TestCerts.Issued otherCa;
  private TestCerts.Issued engineCert;
  private TestCerts.Issued expiredEngineCert;
  private TestCerts.Issued rm;
  private TestCerts.Issued rmExpired;
  private TestCerts.Issued rmForeign;
  private Path token;
  private EngineProcess engine;

  @BeforeAll
  void start() throws Exception {
    Files.createDirectories(work);
    Path certs = work.resolve("certs");
    ca = TestCerts.ca(certs, "ca");
    otherCa = TestCerts.ca(certs, "other-ca");
    engineCert = TestCerts.leaf(certs, "engine", ca, false);
    expiredEngineCert = TestCerts.leaf(certs, "engine-expired", ca, true);
    rm = TestCerts.leaf(certs, "rm", ca, false);
    rmExpired = TestCerts.leaf(certs, "rm-expired", ca, true);
    rmForeign = TestCerts.leaf(certs, "rm-foreign", otherCa, false);
    token = work.resolve("token");
    Files.writeString(token, "it-" + Long.toHexString(System.nanoTime()) + "\n", StandardCharsets.US_ASCII);
    engine = new EngineProcess("fifo", work.resolve("engine.log"));
    engine.start("--tls-cert", engineCert.certPem.toString(), "--tls-key", engineCert.keyPem.toString(),
        "--tls-client-ca", ca.certPem.toString(), "--token-file", token.toString());
  }

  @AfterEach
  void closeClients() {
    clients.forEach(EngineClient::close);
    clients.clear();
  }

  @AfterAll
  void stop() throws Exception {
    if (engine != null) {
      engine.close();
    }
  }

  private EngineClient client(TestCerts.Issued trust, TestCerts.Issued clientCert, boolean withToken)
      throws Exception {
    String secret = withToken ? Files.readString(token, StandardCharsets.US_ASCII).trim() : null;
    EngineClient c = new EngineClient(engine.address(), EngineChannels.create(true, trust.certPem.toFile(),
        clientCert == null ? null : clientCert.certPem.toFile(), clientCert == null ? null : clientCert.keyPem.toFile(),
        null, secret), 10_000, 3, 5000, 50, 64, metrics, System::currentTimeMillis);
    clients.add(c);
    return c;
  }

  private static String refusal(EngineClient c) {
    return assertThrows(EngineClient.CallFailed.class,
        () -> c.schedule(ScheduleRequest.newBuilder().setRequestId("1").build())).getMessage();
  }

  private String engineLog() throws Exception {
    return Files.readString(work.resolve("engine.log"), StandardCharsets.UTF_8);
  }

  @Test
  void mtlsWithTheTokenReachesScheduleInfoAndHealth() throws Exception {
    EngineClient c = client(ca, rm, true);
    assertEquals("yarnrl.v1", c.info(10_000).getProtocolVersion());
    assertEquals(EngineClient.Health.SERVING, c.checkHealth(10_000).health);
  }

  @Test
  void missingForeignOrExpiredClientCertificatesAreRefused() throws Exception {
    for (TestCerts.Issued cert : new TestCerts.Issued[] {null, rmForeign, rmExpired}) {
      EngineClient c = client(ca, cert, true);
      String m = refusal(c);
      // BoringSSL's TLS 1.3 server refuses the certificate after the client's side of the handshake: the plugin
      // sees the connection closed and names the client certificate settings
      assertTrue(m.contains(EngineChannels.TLS_CLIENT_CERT), (cert == null ? "none" : cert.certPem) + ": " + m);
      EngineClient.HealthCheck h = c.checkHealth(10_000);
      assertEquals(EngineClient.Health.UNREACHABLE, h.health);
      assertTrue(h.detail.contains(EngineChannels.TLS_CLIENT_CERT), h.toString());
    }
  }

  @Test
  void anEngineCertificateFromAnotherCaIsRefused() throws Exception {
    String m = refusal(client(otherCa, rm, true));
    assertTrue(m.contains("not signed by a CA in " + EngineChannels.TLS_TRUST_CA), m);
  }

  @Test
  void aMissingOrWrongTokenIsRefusedOnBothSides() throws Exception {
    EngineClient none = client(ca, rm, false);
    String m = refusal(none);
    assertTrue(m.contains("UNAUTHENTICATED") && m.contains(EngineChannels.TOKEN_FILE), m);
    assertEquals(EngineClient.Health.UNREACHABLE, none.checkHealth(10_000).health);
    EngineClient wrong = new EngineClient(engine.address(), EngineChannels.create(true, ca.certPem.toFile(),
        rm.certPem.toFile(), rm.keyPem.toFile(), null, "not-the-token"), 10_000, 3, 5000, 50, 64, metrics,
        System::currentTimeMillis);
    clients.add(wrong);
    assertTrue(refusal(wrong).contains("UNAUTHENTICATED"));
    long until = System.currentTimeMillis() + 30_000;
    while (!engineLog().contains("refused an RPC") && System.currentTimeMillis() < until) {
      Thread.sleep(100);
    }
    assertTrue(engineLog().contains("refused an RPC"), "the engine logged no refusal: " + engineLog());
  }

  @Test
  void anEngineWithAnExpiredCertificateRefusesToStart() throws Exception {
    ProcessBuilder pb = new ProcessBuilder(EngineProcess.python(), "-m", "policy_engine.cli", "serve", "--policy",
        "fifo", "--port", Integer.toString(EngineProcess.freePort()), "--tls-cert",
        expiredEngineCert.certPem.toString(), "--tls-key", expiredEngineCert.keyPem.toString())
        .redirectErrorStream(true).redirectOutput(work.resolve("expired.log").toFile());
    Process p = pb.start();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "serve with an expired certificate did not exit");
    assertNotEquals(0, p.exitValue());
    String out = Files.readString(work.resolve("expired.log"), StandardCharsets.UTF_8);
    assertTrue(out.toLowerCase().contains("expired"), out);
    assertTrue(new File(EngineProcess.python()).canExecute());
  }
}
