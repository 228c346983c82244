package org.yarnrl.yarn;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real `policy-engine serve` child process (the Python engine from this repository), on a fixed gRPC port so it
 * can be killed and started again at the same address, with its Prometheus metrics on a second port.
 */
final class EngineProcess implements AutoCloseable, BeforeAllCallback, AfterAllCallback {
  final int port;
  final int metricsPort;
  private String policy;
  private final Path log;
  private Process process;

  /**
   * One engine for a whole test class, started before its first test and stopped after its last, its log in
   * target/{@code workDir}/engine.log: {@code @RegisterExtension static final EngineProcess engine =
   * EngineProcess.perTestClass("fifo", "my-test");}
   */
  static EngineProcess perTestClass(String policy, String workDir) {
    try {
      Path work = Path.of("target", workDir).toAbsolutePath();
      Files.createDirectories(work);
      return new EngineProcess(policy, work.resolve("engine.log"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    start();
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    close();
  }

  EngineProcess(String policy, Path log) throws IOException {
    this.policy = policy;
    this.port = freePort();
    this.metricsPort = freePort();
    this.log = log;
  }

  /**
   * A free port below Linux's ephemeral range (32768-60999): the engine may start after a mini cluster whose many
   * servers bind ephemeral ports, so a port picked there before the boot may be taken by then.
   */
  static int freePort() throws IOException {
    java.util.Random rng = new java.util.Random();
    for (int i = 0; i < 200; i++) {
      int port = 20000 + rng.nextInt(12000);
      try (ServerSocket s = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
        return port;
      } catch (IOException e) {
        // taken: try another
      }
    }
    throw new IOException("no free TCP port in 20000-32000");
  }

  static String python() {
    String py = System.getProperty("yarnrl.python", "../.venv/bin/python");
    if (!new File(py).canExecute()) {
      throw new IllegalStateException("no Python engine at " + py + " (run `make install` in the repository root, or"
          + " pass -Dyarnrl.python=PATH)");
    }
    return py;
  }

  /** The policy the next {@link #start} serves (same address: the scheduler keeps asking it). */
  synchronized void usePolicy(String policy) {
    this.policy = policy;
  }

  /** Stop gracefully (SIGTERM: a learning policy saves its table). */
  synchronized void stop() throws InterruptedException {
    if (process != null && process.isAlive()) {
      process.destroy();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  String address() {
    return "127.0.0.1:" + port;
  }

  /** Start the engine (with extra `serve` arguments) and wait until it listens. */
  synchronized void start(String... extraArgs) throws Exception {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException("engine already running");
    }
    List<String> cmd = new ArrayList<>(List.of(python(), "-m", "policy_engine.cli", "serve", "--policy", policy,
        "--port", Integer.toString(port), "--metrics-port", Integer.toString(metricsPort), "--grace", "0"));
    cmd.addAll(List.of(extraArgs));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("PYTHONUNBUFFERED", "1");
    process = pb.start();
    CountDownLatch listening = new CountDownLatch(1);
    Process p = process;
    Thread pump = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
           PrintWriter w = new PrintWriter(Files.newBufferedWriter(log, StandardCharsets.UTF_8,
               java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND))) {
        String line;
        while ((line = r.readLine()) != null) {
          w.println(line);
          w.flush();
          if (line.contains("listening on")) {
            listening.countDown();
          }
        }
      } catch (IOException e) {
        // process gone
      }
    }, "engine-output");
    pump.setDaemon(true);
    pump.start();
    if (!listening.await(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException("policy-engine did not start listening within 60 s; see " + log);
    }
  }

  /** Kill the engine abruptly (SIGKILL), as a crash would. */
  synchronized void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** SIGSTOP: the engine hangs with its sockets open (a stuck process, a long GC pause). */
  synchronized void pause() throws Exception {
    signal("STOP");
  }

  /** SIGCONT after {@link #pause}. */
  synchronized void resume() throws Exception {
    signal("CONT");
  }

  private void signal(String name) throws Exception {
    if (process == null || !process.isAlive()) {
      throw new IllegalStateException("engine not running");
    }
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
    }
  }

  boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** Sum of a Prometheus counter over the series whose labels contain every given `key="value"` fragment. */
  double metric(String name, String... labelFragments) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    String body = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/metrics"))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body();
    Pattern line = Pattern.compile("^" + Pattern.quote(name) + "(\\{[^}]*\\})?\\s+(\\S+)$", Pattern.MULTILINE);
    Matcher m = line.matcher(body);
    double sum = 0;
    while (m.find()) {
      String labels = m.group(1) == null ? "" : m.group(1);
      boolean all = true;
      for (String f : labelFragments) {
        all &= labels.contains(f);
      }
      if (all) {
        sum += Double.parseDouble(m.group(2));
      }
    }
    return sum;
  }

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}
