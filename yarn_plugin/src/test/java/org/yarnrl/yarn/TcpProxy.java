package org.yarnrl.yarn;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A TCP proxy on loopback between the plugin and an engine, for fault injection: pass bytes through, delay every
 * chunk by a set latency in each direction (an engine slower than the deadline, without touching the engine), cut
 * the path (open connections reset, new ones closed at once) and restore it, or point it at another upstream (a
 * fake engine with invalid answers). Each direction of a connection has a reader that stamps chunks and a writer
 * that sends them when their delay is up, so latency does not throttle throughput.
 */
final class TcpProxy implements AutoCloseable {
  private final ServerSocket listener;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Thread acceptor;
  private volatile int upstreamPort;
  private volatile long delayMillis;
  private volatile boolean cut;
  private volatile boolean closed;
  // Guards sockets against drops: a connection accepted while the path was cut or re-pointed is closed, never
  // registered after the drop (it then outlived a cut unseen: CI's network_cut case saw no fallback in 180 s)
  private final Object registry = new Object();
  private long drops;

  TcpProxy(int upstreamPort) throws IOException {
    this.upstreamPort = upstreamPort;
    this.listener = new ServerSocket(EngineProcess.freePort(), 50, InetAddress.getLoopbackAddress());
    this.acceptor = new Thread(this::acceptLoop, "tcp-proxy-" + listener.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  String address() {
    return "127.0.0.1:" + listener.getLocalPort();
  }

  /** Latency added to every chunk in each direction (0: none). */
  void delay(long millis) {
    delayMillis = millis;
  }

  /** Cut the path: open connections are reset, new ones closed on accept. */
  void cut() {
    synchronized (registry) {
      cut = true;
      dropConnections();
    }
  }

  void restore() {
    cut = false;
  }

  /** Forward new connections to another port; open connections are dropped so the client reconnects there. */
  void upstream(int port) {
    synchronized (registry) {
      upstreamPort = port;
      dropConnections();
    }
  }

  /** Open connections that exist now, in the registry at the call. Caller holds {@code registry}. */
  private void dropConnections() {
    drops++;
    for (Socket s : sockets) {
      reset(s);
    }
    sockets.clear();
  }

  private static void reset(Socket s) {
    try {
      s.setSoLinger(true, 0); // RST, as a cut cable or a firewall reject would look to gRPC
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return;
      }
      long dropsAtAccept;
      int port;
      synchronized (registry) {
        if (cut) {
          reset(client);
          continue;
        }
        dropsAtAccept = drops;
        port = upstreamPort;
      }
      Socket upstream = new Socket();
      try {
        upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5000);
      } catch (IOException e) {
        closeQuietly(client); // engine down: the client sees the connection close, as with no proxy
        closeQuietly(upstream);
        continue;
      }
      try {
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
      } catch (IOException e) {
        // best effort
      }
      synchronized (registry) {
        if (cut || drops != dropsAtAccept) { // cut or re-pointed while connecting: this one is dropped too
          reset(client);
          reset(upstream);
          continue;
        }
        sockets.add(client);
        sockets.add(upstream);
      }
      pipe(client, upstream);
      pipe(upstream, client);
    }
  }

  private static final class Chunk {
    final byte[] bytes;
    final long due;

    Chunk(byte[] bytes, long due) {
      this.bytes = bytes;
      this.due = due;
    }
  }

  private static final Chunk EOF = new Chunk(new byte[0], 0);

  private void pipe(Socket from, Socket to) {
    LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
    Thread reader = new Thread(() -> {
      byte[] buf = new byte[65536];
      try (InputStream in = from.getInputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          queue.add(new Chunk(Arrays.copyOf(buf, n), System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis)));
        }
      } catch (IOException e) {
        // closed or reset
      } finally {
        queue.add(EOF);
      }
    }, "tcp-proxy-read");
    Thread writer = new Thread(() -> {
      try {
        OutputStream out = to.getOutputStream();
        while (true) {
          Chunk c = queue.take();
          if (c == EOF) {
            break;
          }
          long wait = c.due - System.nanoTime();
          if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
          }
          out.write(c.bytes);
          out.flush();
        }
      } catch (IOException | InterruptedException e) {
        // closed
      } finally {
        closeQuietly(to);
        closeQuietly(from);
        sockets.remove(from);
        sockets.remove(to);
      }
    }, "tcp-proxy-write");
    reader.setDaemon(true);
    writer.setDaemon(true);
    reader.start();
    writer.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // nothing to do
    }
  }

  @Override
  public void close() {
    closed = true;
    closeQuietly(listener);
    dropConnections();
  }

  private static void closeQuietly(ServerSocket s) {
    try {
      s.close();
    } catch (IOException e) {
      // nothing to do
    }
  }
}
