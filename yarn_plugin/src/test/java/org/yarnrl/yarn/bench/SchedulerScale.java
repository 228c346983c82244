package org.yarnrl.yarn.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CommonConfigurationKeysPublic;
import org.apache.hadoop.net.DNSToSwitchMapping;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerExitStatus;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.event.AsyncDispatcher;
import org.apache.hadoop.yarn.event.Dispatcher;
import org.apache.hadoop.yarn.event.EventDispatcher;
import org.apache.hadoop.yarn.event.EventHandler;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.MockNM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmissionData;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmitter;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptState;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ResourceScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeUpdateSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEventType;

/**
 * One scale-benchmark case: a real ResourceManager (Hadoop's MockRM: ResourceTrackerService, RMNode state machines,
 * the RM's event dispatcher and - unlike MockRM's default - YARN's own asynchronous scheduler event queue) with a
 * given scheduler class, N simulated NodeManagers (MockNM) heartbeating every second with their containers'
 * RUNNING/COMPLETE statuses, and unmanaged ApplicationMasters (MockAM) that keep a backlog of MapReduce-like map
 * asks (each task prefers {@code --hosts-per-task} random hosts, asked per host, per rack and ANY) topped up every
 * second, launching every container they get for a random lifetime.
 *
 * <p>Measured over {@code --seconds} after {@code --warmup-seconds}: NODE_UPDATE events the scheduler handled per
 * second and their handling time (p50/p99, the same wrapper around the scheduler for every class), containers
 * allocated per second (root QueueMetrics), the scheduler event queue and the RM dispatcher queue (sampled every
 * 50 ms), cluster utilization, and the yarn-rl counters (fallbacks by reason, engine/native containers) from the
 * plugin's JMX bean when the scheduler has one. Progress lines on stdout, then one JSON object as the last line (also
 * written to {@code --out}). Driven by benchmarks/plugin_scale.py.
 */
public final class SchedulerScale {
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  // ------------------------------------------------------------------------------------------------ options

  static final class Options {
    String schedulerClass = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler";
    String label = "case";
    int nodes = 1000;
    int nodesPerRack = 40;
    int nodeMb = 4096;
    int nodeVcores = 4;
    int containerMb = 1024;
    double lifetimeS = 10;
    int apps = 0; // 0: one per 250 nodes, at least 2
    int pendingPerApp = 0; // 0: enough for 1.5 s of the cluster's turnover
    int hostsPerTask = 3;
    int seconds = 30;
    int warmupSeconds = 15;
    int heartbeatMs = 1000;
    int heartbeatThreads = 4;
    long seed = 1;
    String out = null;
    Map<String, String> conf = new LinkedHashMap<>();

    static Options parse(String[] args) {
      Options o = new Options();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("option " + a + " needs a value");
        }
        String v = args[++i];
        switch (a) {
          case "--scheduler-class": o.schedulerClass = v; break;
          case "--label": o.label = v; break;
          case "--nodes": o.nodes = positive(a, v); break;
          case "--nodes-per-rack": o.nodesPerRack = positive(a, v); break;
          case "--node-mb": o.nodeMb = positive(a, v); break;
          case "--node-vcores": o.nodeVcores = positive(a, v); break;
          case "--container-mb": o.containerMb = positive(a, v); break;
          case "--lifetime-s": o.lifetimeS = Double.parseDouble(v); break;
          case "--apps": o.apps = Integer.parseInt(v); break;
          case "--pending-per-app": o.pendingPerApp = Integer.parseInt(v); break;
          case "--hosts-per-task": o.hostsPerTask = Integer.parseInt(v); break;
          case "--seconds": o.seconds = positive(a, v); break;
          case "--warmup-seconds": o.warmupSeconds = Integer.parseInt(v); break;
          case "--heartbeat-ms": o.heartbeatMs = positive(a, v); break;
          case "--heartbeat-threads": o.heartbeatThreads = positive(a, v); break;
          case "--seed": o.seed = Long.parseLong(v); break;
          case "--out": o.out = v; break;
          case "--conf": {
            int eq = v.indexOf('=');
            if (eq <= 0) {
              throw new IllegalArgumentException("--conf takes KEY=VALUE, got " + v);
            }
            o.conf.put(v.substring(0, eq), v.substring(eq + 1));
            break;
          }
          default: throw new IllegalArgumentException("unknown option " + a);
        }
      }
      if (o.apps <= 0) {
        o.apps = Math.max(2, o.nodes / 250);
      }
      if (o.pendingPerApp <= 0) {
        double turnoverPerS = (double) o.nodes * o.slotsPerNode() / o.lifetimeS;
        o.pendingPerApp = (int) Math.ceil(1.5 * turnoverPerS / o.apps) + 4;
      }
      if (o.lifetimeS <= 0 || o.hostsPerTask < 0 || o.hostsPerTask > o.nodes) {
        throw new IllegalArgumentException("--lifetime-s must be positive and --hosts-per-task within 0..nodes");
      }
      return o;
    }

    int slotsPerNode() {
      return Math.min(nodeMb / containerMb, nodeVcores);
    }

    private static int positive(String name, String v) {
      int n = Integer.parseInt(v);
      if (n <= 0) {
        throw new IllegalArgumentException(name + " must be positive, got " + v);
      }
      return n;
    }
  }

  // ------------------------------------------------------------------------------------------------ measurements

  /** Growable array of longs (one writer thread). */
  static final class Samples {
    private long[] values = new long[1 << 14];
    private int count;

    synchronized void add(long v) {
      if (count == values.length) {
        values = Arrays.copyOf(values, values.length * 2);
      }
      values[count++] = v;
    }

    synchronized long[] sorted() {
      long[] s = Arrays.copyOf(values, count);
      Arrays.sort(s);
      return s;
    }

    static double quantile(long[] sorted, double q) {
      if (sorted.length == 0) {
        return Double.NaN;
      }
      int rank = (int) Math.ceil(sorted.length * q) - 1;
      return sorted[Math.max(0, Math.min(sorted.length - 1, rank))];
    }
  }

  /**
   * Wraps the scheduler as the scheduler dispatcher's handler, for any scheduler class: times each NODE_UPDATE and
   * counts the heartbeats it handled. A NODE_UPDATE carries a node's latest heartbeat; one for a heartbeat the
   * scheduler has already seen (a scheduler that re-dispatches a node's update itself, e.g. to apply an engine
   * answer that came in asynchronously) is timed but not counted as a heartbeat.
   */
  static final class TimedScheduler implements EventHandler<SchedulerEvent> {
    private final ResourceScheduler scheduler;
    private final Map<NodeId, Integer> lastResponseId = new HashMap<>(); // the dispatcher thread only
    private final java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    final AtomicLong nodeUpdates = new AtomicLong();
    final AtomicLong heartbeats = new AtomicLong();
    final Samples nodeUpdateNanos = new Samples();
    /** The scheduler thread's CPU time per NODE_UPDATE: what a node update costs, whatever the machine's load. */
    final Samples nodeUpdateCpuNanos = new Samples();
    /** Per event type, over the measured window: {events, CPU ns, wall ns} (the dispatcher thread only). */
    final Map<SchedulerEventType, long[]> byType = new java.util.EnumMap<>(SchedulerEventType.class);
    volatile boolean measuring;

    TimedScheduler(ResourceScheduler scheduler) {
      this.scheduler = scheduler;
      threads.setThreadCpuTimeEnabled(true);
    }

    @Override
    public void handle(SchedulerEvent event) {
      boolean nodeUpdate = event.getType() == SchedulerEventType.NODE_UPDATE;
      if (nodeUpdate) {
        RMNode node = ((NodeUpdateSchedulerEvent) event).getRMNode();
        int responseId = node.getLastNodeHeartBeatResponse() == null ? -1
            : node.getLastNodeHeartBeatResponse().getResponseId();
        if (!Integer.valueOf(responseId).equals(lastResponseId.put(node.getNodeID(), responseId))) {
          heartbeats.incrementAndGet();
        }
      }
      boolean measure = measuring;
      long cpu = measure ? threads.getCurrentThreadCpuTime() : 0;
      long start = System.nanoTime();
      scheduler.handle(event);
      long nanos = System.nanoTime() - start;
      if (nodeUpdate) {
        nodeUpdates.incrementAndGet();
      }
      if (measure) {
        long cpuNanos = threads.getCurrentThreadCpuTime() - cpu;
        if (nodeUpdate) {
          nodeUpdateNanos.add(nanos);
          nodeUpdateCpuNanos.add(cpuNanos);
        }
        synchronized (byType) {
          long[] t = byType.computeIfAbsent(event.getType(), k -> new long[3]);
          t[0]++;
          t[1] += cpuNanos;
          t[2] += nanos;
        }
      }
    }

    /** {type: {events, cpu_ms, wall_ms}} over the measured window. */
    Map<String, Map<String, Object>> byTypeReport() {
      Map<String, Map<String, Object>> out = new LinkedHashMap<>();
      synchronized (byType) {
        for (Map.Entry<SchedulerEventType, long[]> e : byType.entrySet()) {
          Map<String, Object> m = new LinkedHashMap<>();
          m.put("events", e.getValue()[0]);
          m.put("cpu_ms", e.getValue()[1] / 1e6);
          m.put("wall_ms", e.getValue()[2] / 1e6);
          out.put(e.getKey().name(), m);
        }
      }
      return out;
    }
  }

  /**
   * MockRM with YARN's real asynchronous scheduler event queue (MockRM itself calls the scheduler synchronously on
   * the dispatcher thread), our timing wrapper inside it. Fields have no initialisers: they are set from the super
   * constructor (serviceInit).
   */
  static final class BenchRM extends MockRM {
    TimedScheduler timed;
    EventDispatcher<SchedulerEvent> schedulerEvents;

    BenchRM(Configuration conf) {
      super(conf);
    }

    @Override
    protected EventHandler<SchedulerEvent> createSchedulerEventDispatcher() {
      timed = new TimedScheduler(scheduler);
      schedulerEvents = new EventDispatcher<>(timed, "SchedulerEventDispatcher");
      return schedulerEvents;
    }

    int rmQueue() {
      Dispatcher d = getRMContext().getDispatcher();
      return d instanceof AsyncDispatcher ? ((AsyncDispatcher) d).getEventQueueSize() : 0;
    }
  }

  // ------------------------------------------------------------------------------------------------ simulation

  /** A NodeManager: reports containers it was given RUNNING, then COMPLETE once their lifetime is over. */
  static final class SimNode {
    final int index;
    final MockNM nm;
    final ConcurrentLinkedQueue<Launch> toLaunch = new ConcurrentLinkedQueue<>();
    final List<Launch> running = new ArrayList<>();

    SimNode(int index, MockNM nm) {
      this.index = index;
      this.nm = nm;
    }

    void heartbeat() throws Exception {
      long now = System.currentTimeMillis();
      List<ContainerStatus> statuses = new ArrayList<>();
      Launch l;
      while ((l = toLaunch.poll()) != null) {
        running.add(l);
        statuses.add(ContainerStatus.newInstance(l.id, ContainerState.RUNNING, "", ContainerExitStatus.INVALID));
      }
      for (int i = running.size() - 1; i >= 0; i--) {
        Launch r = running.get(i);
        if (r.endMs <= now) {
          statuses.add(ContainerStatus.newInstance(r.id, ContainerState.COMPLETE, "done", 0));
          running.set(i, running.get(running.size() - 1));
          running.remove(running.size() - 1);
        }
      }
      nm.nodeHeartbeat(statuses, true);
    }
  }

  static final class Launch {
    final ContainerId id;
    final long endMs;

    Launch(ContainerId id, long endMs) {
      this.id = id;
      this.endMs = endMs;
    }
  }

  /** An unmanaged AM with an endless job: a backlog of tasks, each preferring a few hosts. */
  static final class SimApp {
    final MockAM am;
    final Options o;
    final SimNode[] nodes;
    final Random rng;
    final List<int[]> tasks = new ArrayList<>();
    final Map<String, Integer> lastSent = new HashMap<>();
    final Priority priority = Priority.newInstance(1);
    final Resource capability;
    long allocated;

    SimApp(MockAM am, Options o, SimNode[] nodes, long seed) {
      this.am = am;
      this.o = o;
      this.nodes = nodes;
      this.rng = new Random(seed);
      this.capability = Resource.newInstance(o.containerMb, 1);
      for (int i = 0; i < o.pendingPerApp; i++) {
        tasks.add(newTask());
      }
    }

    int[] newTask() {
      int[] hosts = new int[o.hostsPerTask];
      for (int i = 0; i < hosts.length; i++) {
        hosts[i] = rng.nextInt(o.nodes);
      }
      return hosts;
    }

    List<ResourceRequest> asks() {
      Map<String, Integer> counts = new HashMap<>();
      for (int[] task : tasks) {
        for (int h : task) {
          counts.merge(RackMapping.hostName(h), 1, Integer::sum);
          counts.merge(RackMapping.rackOf(h), 1, Integer::sum);
        }
      }
      counts.put(ResourceRequest.ANY, tasks.size());
      List<ResourceRequest> asks = new ArrayList<>(counts.size() + lastSent.size());
      for (String gone : lastSent.keySet()) {
        if (!counts.containsKey(gone)) {
          asks.add(ResourceRequest.newInstance(priority, gone, capability, 0, true));
        }
      }
      for (Map.Entry<String, Integer> e : counts.entrySet()) {
        if (!e.getValue().equals(lastSent.get(e.getKey()))) {
          asks.add(ResourceRequest.newInstance(priority, e.getKey(), capability, e.getValue(), true));
        }
      }
      lastSent.clear();
      lastSent.putAll(counts);
      // ANY is always sent: the AM re-asks its whole backlog every heartbeat
      boolean anySent = asks.stream().anyMatch(r -> ResourceRequest.ANY.equals(r.getResourceName()));
      if (!anySent) {
        asks.add(ResourceRequest.newInstance(priority, ResourceRequest.ANY, capability, tasks.size(), true));
      }
      return asks;
    }

    void heartbeat() throws Exception {
      AllocateResponse response = am.allocate(asks(), new ArrayList<>());
      long now = System.currentTimeMillis();
      for (Container c : response.getAllocatedContainers()) {
        int node = RackMapping.hostIndex(c.getNodeId().getHost());
        takeTask(node);
        tasks.add(newTask());
        long lifetime = (long) (o.lifetimeS * 1000 * (0.5 + rng.nextDouble()));
        nodes[node].toLaunch.add(new Launch(c.getId(), now + lifetime));
        allocated++;
      }
    }

    /** MapReduce's rule: a task with a replica on the node, else in its rack, else the first. */
    private void takeTask(int node) {
      int pick = -1;
      String rack = RackMapping.rackOf(node);
      for (int i = 0; i < tasks.size() && pick < 0; i++) {
        for (int h : tasks.get(i)) {
          if (h == node) {
            pick = i;
            break;
          }
        }
      }
      for (int i = 0; i < tasks.size() && pick < 0; i++) {
        for (int h : tasks.get(i)) {
          if (RackMapping.rackOf(h).equals(rack)) {
            pick = i;
            break;
          }
        }
      }
      if (!tasks.isEmpty()) {
        tasks.remove(Math.max(pick, 0));
      }
    }
  }

  // ------------------------------------------------------------------------------------------------ run

  /** Progress on stdout (the RM's own logs go to stderr), before the JSON line. */
  static synchronized void progress(String fmt, Object... args) {
    System.out.printf(fmt + "%n", args);
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    Options o;
    try {
      o = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("SchedulerScale: " + e.getMessage());
      System.exit(2);
      return;
    }
    int rc;
    try {
      Map<String, Object> result = run(o);
      String json = new ObjectMapper().writeValueAsString(result);
      if (o.out != null) {
        Files.writeString(new File(o.out).toPath(), JSON.writeValueAsString(result), StandardCharsets.UTF_8);
      }
      System.out.println(json);
      System.out.flush();
      rc = 0;
    } catch (Throwable t) {
      t.printStackTrace();
      rc = 1;
    }
    // the RM's non-daemon threads and 5,000 nodes' state: exit rather than a slow orderly stop
    Runtime.getRuntime().halt(rc);
  }

  static Map<String, Object> run(Options o) throws Exception {
    RackMapping.nodesPerRack = o.nodesPerRack;
    try {
      Class.forName(o.schedulerClass);
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException("scheduler class " + o.schedulerClass + " is not on the class path");
    }
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER, o.schedulerClass);
    conf.setClass(CommonConfigurationKeysPublic.NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL_KEY, RackMapping.class,
        DNSToSwitchMapping.class);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, Math.min(1024, o.containerMb));
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, o.nodeMb);
    // a slow case must not turn into expired nodes, AMs or containers
    conf.setLong(YarnConfiguration.RM_NM_EXPIRY_INTERVAL_MS, 3_600_000L);
    conf.setLong(YarnConfiguration.RM_AM_EXPIRY_INTERVAL_MS, 3_600_000L);
    conf.setLong(YarnConfiguration.RM_CONTAINER_ALLOC_EXPIRY_INTERVAL_MS, 3_600_000L);
    conf.setBoolean(YarnConfiguration.RM_SCHEDULER_ENABLE_MONITORS, false);
    conf.setInt(YarnConfiguration.RM_AM_MAX_ATTEMPTS, 1);
    // CapacityScheduler: unmanaged AMs in one queue may use the whole cluster
    conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 1.0f);
    conf.setFloat("yarn.scheduler.capacity.root.default.user-limit-factor", 1.0f);
    for (Map.Entry<String, String> e : o.conf.entrySet()) {
      conf.set(e.getKey(), e.getValue());
    }

    long t0 = System.nanoTime();
    BenchRM rm = new BenchRM(conf);
    quietLogs();
    rm.start();
    ResourceScheduler scheduler = rm.getResourceScheduler();
    progress("[%s] ResourceManager up with %s", o.label, scheduler.getClass().getName());

    SimNode[] nodes = new SimNode[o.nodes];
    // registered from a few threads at once, as NodeManagers do (one at a time took 60 s of a 10,000-node case)
    java.util.concurrent.ExecutorService registering = java.util.concurrent.Executors.newFixedThreadPool(
        o.heartbeatThreads, daemon("nm-register"));
    AtomicLong registered = new AtomicLong();
    List<java.util.concurrent.Future<?>> registrations = new ArrayList<>();
    for (int i = 0; i < o.nodes; i++) {
      int index = i;
      registrations.add(registering.submit(() -> {
        MockNM nm = new MockNM(RackMapping.hostName(index) + ":1234", o.nodeMb, o.nodeVcores,
            rm.getResourceTrackerService());
        nm.registerNode();
        nodes[index] = new SimNode(index, nm);
        long n = registered.incrementAndGet();
        if (n % 1000 == 0) {
          progress("[%s] %d/%d NodeManagers registered", o.label, n, o.nodes);
        }
        return null;
      }));
    }
    for (java.util.concurrent.Future<?> f : registrations) {
      f.get();
    }
    registering.shutdown();
    waitFor(() -> scheduler.getNumClusterNodes() == o.nodes, 120_000, "the scheduler to see every node");
    progress("[%s] %d NodeManagers registered in %.1f s", o.label, o.nodes, (System.nanoTime() - t0) / 1e9);

    // unmanaged AMs: submitted, then registered once the RM has launched their attempts (our own generous waits:
    // MockRM's helpers give up after seconds, too soon on a loaded machine)
    RMApp[] submitted = new RMApp[o.apps];
    for (int i = 0; i < o.apps; i++) {
      submitted[i] = MockRMAppSubmitter.submit(rm, MockRMAppSubmissionData.Builder
          .createWithMemory(o.containerMb, rm)
          .withAppName("scale-" + i)
          .withUser("user")
          .withQueue("default")
          .withUnmanagedAM(true)
          .withWaitForAppAcceptedState(false)
          .build());
    }
    SimApp[] apps = new SimApp[o.apps];
    for (int i = 0; i < o.apps; i++) {
      RMApp app = submitted[i];
      waitFor(() -> app.getCurrentAppAttempt() != null
          && app.getCurrentAppAttempt().getAppAttemptState() == RMAppAttemptState.LAUNCHED, 600_000,
          app.getApplicationId() + " to be launched");
      MockAM am = new MockAM(rm.getRMContext(), rm.getApplicationMasterService(),
          app.getCurrentAppAttempt().getAppAttemptId());
      am.registerAppAttempt(false);
      apps[i] = new SimApp(am, o, nodes, o.seed * 1_000_003L + i);
    }
    progress("[%s] %d nodes (%d racks, %d MB / %d vcores each), %d unmanaged AMs with %d pending tasks each "
        + "(%d preferred hosts per task), containers %d MB for %.1f s on average; set-up %.1f s", o.label, o.nodes,
        (o.nodes + o.nodesPerRack - 1) / o.nodesPerRack, o.nodeMb, o.nodeVcores, o.apps, o.pendingPerApp,
        o.hostsPerTask, o.containerMb, o.lifetimeS, (System.nanoTime() - t0) / 1e9);

    // node heartbeats every heartbeatMs, spread evenly; AM heartbeats every second
    java.util.concurrent.atomic.AtomicBoolean stopping = new java.util.concurrent.atomic.AtomicBoolean();
    AtomicLong heartbeatsSent = new AtomicLong();
    AtomicLong heartbeatErrors = new AtomicLong();
    AtomicLong amErrors = new AtomicLong();
    ScheduledThreadPoolExecutor nmPool = new ScheduledThreadPoolExecutor(o.heartbeatThreads, daemon("nm-heartbeat"));
    for (SimNode node : nodes) {
      long offsetUs = (long) node.index * o.heartbeatMs * 1000L / o.nodes;
      nmPool.scheduleAtFixedRate(() -> {
        try {
          node.heartbeat();
          heartbeatsSent.incrementAndGet();
        } catch (Throwable t) {
          if (!stopping.get() && heartbeatErrors.getAndIncrement() == 0) {
            t.printStackTrace();
          }
        }
      }, offsetUs, o.heartbeatMs * 1000L, TimeUnit.MICROSECONDS);
    }
    ScheduledThreadPoolExecutor amPool = new ScheduledThreadPoolExecutor(1, daemon("am-heartbeat"));
    // AM heartbeats run concurrently with node updates, as in a ResourceManager (FifoScheduler takes an attempt's
    // monitor before its write lock on both paths, allocate() and assignContainers(); RlScheduler's engine path
    // does the same)
    for (int i = 0; i < apps.length; i++) {
      SimApp app = apps[i];
      amPool.scheduleAtFixedRate(() -> {
        try {
          synchronized (app) {
            app.heartbeat();
          }
        } catch (Throwable t) {
          if (!stopping.get() && amErrors.getAndIncrement() == 0) {
            t.printStackTrace();
          }
        }
      }, i * 1000L / apps.length, 1000L, TimeUnit.MILLISECONDS);
    }

    // queue sampler
    Samples schedulerQueue = new Samples();
    Samples rmQueue = new Samples();
    Samples utilization = new Samples(); // allocated MB per mille of the cluster
    QueueMetrics root = scheduler.getRootQueueMetrics();
    long totalMb = (long) o.nodes * o.nodeMb;
    ScheduledThreadPoolExecutor sampler = new ScheduledThreadPoolExecutor(1, daemon("sampler"));
    sampler.scheduleAtFixedRate(() -> {
      if (rm.timed.measuring) {
        schedulerQueue.add(rm.schedulerEvents.getEventQueueSize());
        rmQueue.add(rm.rmQueue());
        utilization.add(root.getAllocatedMB() * 1000 / Math.max(1, totalMb));
      }
    }, 50, 50, TimeUnit.MILLISECONDS);

    long warmupEnd = System.nanoTime() + o.warmupSeconds * 1_000_000_000L;
    while (warmupEnd - System.nanoTime() > 20_000_000L) {
      Thread.sleep(Math.min(5000, Math.max(1, (warmupEnd - System.nanoTime()) / 1_000_000)));
      progress("[%s] warm-up: %d containers allocated, utilization %.0f%%, scheduler queue %d, RM queue %d",
          o.label, root.getAggregateAllocatedContainers(), 100.0 * root.getAllocatedMB() / totalMb,
          rm.schedulerEvents.getEventQueueSize(), rm.rmQueue());
    }

    Map<String, Long> rlBefore = rlCounters();
    long nuBefore = rm.timed.nodeUpdates.get();
    long hbHandledBefore = rm.timed.heartbeats.get();
    long allocBefore = root.getAggregateAllocatedContainers();
    long hbBefore = heartbeatsSent.get();
    // the harness reads the engine's CPU and decision count at these two lines (its cost over the window alone)
    progress("[%s] window starts", o.label);
    long start = System.nanoTime();
    rm.timed.measuring = true;
    long end = start + o.seconds * 1_000_000_000L;
    long lastAlloc = allocBefore;
    long lastTick = start;
    while (end - System.nanoTime() > 20_000_000L) {
      Thread.sleep(Math.min(5000, Math.max(1, (end - System.nanoTime()) / 1_000_000)));
      long now = System.nanoTime();
      long alloc = root.getAggregateAllocatedContainers();
      progress("[%s] %3.0f/%d s: %.0f containers/s, %.0f heartbeats handled/s so far, utilization %.0f%%, scheduler "
          + "queue %d, RM queue %d", o.label, (now - start) / 1e9, o.seconds, (alloc - lastAlloc) / ((now - lastTick)
          / 1e9), (rm.timed.heartbeats.get() - hbHandledBefore) / ((now - start) / 1e9),
          100.0 * root.getAllocatedMB() / totalMb, rm.schedulerEvents.getEventQueueSize(), rm.rmQueue());
      lastAlloc = alloc;
      lastTick = now;
    }
    rm.timed.measuring = false;
    progress("[%s] window ends", o.label);
    double elapsed = (System.nanoTime() - start) / 1e9;
    long nodeUpdates = rm.timed.nodeUpdates.get() - nuBefore;
    long heartbeatsHandled = rm.timed.heartbeats.get() - hbHandledBefore;
    long allocated = root.getAggregateAllocatedContainers() - allocBefore;
    long sent = heartbeatsSent.get() - hbBefore;
    Map<String, Long> rlAfter = rlCounters();
    stopping.set(true);
    nmPool.shutdownNow();
    amPool.shutdownNow();
    sampler.shutdownNow();

    long[] nu = rm.timed.nodeUpdateNanos.sorted();
    long[] sq = schedulerQueue.sorted();
    long[] rq = rmQueue.sorted();
    long[] ut = utilization.sorted();
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("scheduler_class", scheduler.getClass().getName());
    r.put("nodes", o.nodes);
    r.put("racks", (o.nodes + o.nodesPerRack - 1) / o.nodesPerRack);
    r.put("apps", o.apps);
    r.put("pending_per_app", o.pendingPerApp);
    r.put("hosts_per_task", o.hostsPerTask);
    r.put("container_lifetime_s", o.lifetimeS);
    r.put("slots_per_node", o.slotsPerNode());
    r.put("seconds", elapsed);
    r.put("warmup_seconds", o.warmupSeconds);
    r.put("heartbeats_sent_per_s", sent / elapsed);
    r.put("heartbeats_per_s", heartbeatsHandled / elapsed);
    r.put("node_updates_per_s", nodeUpdates / elapsed);
    r.put("containers_per_s", allocated / elapsed);
    r.put("containers_per_s_possible", (double) o.nodes * o.slotsPerNode() / o.lifetimeS);
    r.put("queue_p99", Samples.quantile(sq, 0.99));
    r.put("queue_max", sq.length == 0 ? 0 : sq[sq.length - 1]);
    r.put("queue_mean", Arrays.stream(sq).average().orElse(0));
    r.put("rm_queue_p99", Samples.quantile(rq, 0.99));
    r.put("node_update_p50_us", Samples.quantile(nu, 0.50) / 1e3);
    r.put("node_update_p99_us", Samples.quantile(nu, 0.99) / 1e3);
    r.put("node_update_mean_us", Arrays.stream(nu).average().orElse(Double.NaN) / 1e3);
    // the scheduler thread's own CPU time: what a node update costs, not how long the loaded machine made it wait
    long[] nuCpu = rm.timed.nodeUpdateCpuNanos.sorted();
    r.put("node_update_cpu_p50_us", Samples.quantile(nuCpu, 0.50) / 1e3);
    r.put("node_update_cpu_p99_us", Samples.quantile(nuCpu, 0.99) / 1e3);
    r.put("node_update_cpu_mean_us", Arrays.stream(nuCpu).average().orElse(Double.NaN) / 1e3);
    Map<String, Map<String, Object>> byType = rm.timed.byTypeReport();
    double cpuMs = byType.values().stream().mapToDouble(m -> (Double) m.get("cpu_ms")).sum();
    double wallMs = byType.values().stream().mapToDouble(m -> (Double) m.get("wall_ms")).sum();
    r.put("scheduler_thread_cpu_share", cpuMs / 1e3 / elapsed); // of one core, over the window
    r.put("scheduler_thread_busy_share", wallMs / 1e3 / elapsed); // inside the scheduler (on CPU or not)
    r.put("scheduler_events", byType);
    r.put("utilization", Arrays.stream(ut).average().orElse(0) / 1000.0);
    r.put("heartbeat_errors", heartbeatErrors.get());
    r.put("am_errors", amErrors.get());
    long amAllocated = 0;
    for (SimApp app : apps) {
      synchronized (app) {
        amAllocated += app.allocated;
      }
    }
    r.put("containers_acquired_total", amAllocated);
    if (rlAfter != null) {
      Map<String, Long> window = new LinkedHashMap<>();
      for (Map.Entry<String, Long> e : rlAfter.entrySet()) {
        window.put(e.getKey(), e.getValue() - rlBefore.getOrDefault(e.getKey(), 0L));
      }
      r.put("fallbacks", rlAfter.getOrDefault("Fallbacks", 0L)); // the whole run, warm-up included
      r.put("fallbacks_window", window.getOrDefault("Fallbacks", 0L));
      r.put("engine", window); // counters over the measured window
      r.put("engine_total", rlAfter); // and over the whole run, warm-up included
    } else {
      r.put("fallbacks", 0L);
    }
    progress("[%s] done: %.0f heartbeats/s handled (%.0f sent), %.0f containers/s, node update p50 %.0f us p99 %.0f"
        + " us, scheduler queue p99 %.0f, fallbacks %s", o.label, heartbeatsHandled / elapsed, sent / elapsed,
        allocated / elapsed, Samples.quantile(nu, 0.5) / 1e3, Samples.quantile(nu, 0.99) / 1e3,
        Samples.quantile(sq, 0.99), r.get("fallbacks"));
    return r;
  }

  /** The yarn-rl plugin's JMX counters (any bean Hadoop:service=ResourceManager,name=Rl*), or null without one. */
  static Map<String, Long> rlCounters() throws Exception {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    Set<ObjectName> names = server.queryNames(new ObjectName("Hadoop:service=ResourceManager,name=Rl*"), null);
    if (names.isEmpty()) {
      return null;
    }
    Map<String, Long> out = new LinkedHashMap<>();
    for (ObjectName name : names) {
      for (javax.management.MBeanAttributeInfo info : server.getMBeanInfo(name).getAttributes()) {
        if (info.getType().equals("long") || info.getType().equals("java.lang.Long")) {
          Object v = server.getAttribute(name, info.getName());
          out.merge(info.getName(), ((Number) v).longValue(), Long::sum);
        }
      }
    }
    return out;
  }

  private static void quietLogs() {
    // MockRM sets the root logger to DEBUG; at thousands of heartbeats a second that would be the benchmark. WARN
    // for every scheduler alike (FifoScheduler and its RlScheduler copy log each released container at INFO).
    org.apache.log4j.Logger.getRootLogger().setLevel(org.apache.log4j.Level.WARN);
    org.apache.log4j.Logger.getLogger("org.yarnrl").setLevel(org.apache.log4j.Level.WARN);
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    AtomicLong n = new AtomicLong();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  interface Condition {
    boolean holds() throws Exception;
  }

  static void waitFor(Condition c, long timeoutMs, String what) throws Exception {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (!c.holds()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("timed out waiting for " + what);
      }
      Thread.sleep(100);
    }
  }

  private SchedulerScale() {}
}
