package org.yarnrl.yarn;

import java.io.File;
import java.io.IOException;
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
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.CommonConfigurationKeysPublic;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.protocol.CacheDirectiveInfo;
import org.apache.hadoop.hdfs.protocol.CachePoolInfo;
import org.apache.hadoop.io.nativeio.NativeIO;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRConfig;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.net.TableMapping;
import org.apache.hadoop.yarn.api.records.NodeState;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ResourceScheduler;

/**
 * Real HDFS, YARN and MapReduce in this JVM, with four hosts in two racks where every host runs both a DataNode and
 * a NodeManager under the same host name, as on a real cluster.
 *
 * <p>Host mapping. MiniYARNCluster names every NodeManager "localhost" (they differ only by port), which would make
 * node-local placement meaningless: the MapReduce AM asks for the DataNode hosts of its splits, and counts
 * DATA_LOCAL_MAPS by comparing them with the container's NodeManager host. So the NodeManagers are started here
 * instead, one per logical host h1..h4, each bound to all interfaces but advertising its own host name
 * ({@code yarn.nodemanager.address=hN:0} with {@code yarn.nodemanager.bind-host=0.0.0.0}); the DataNodes get the
 * same names through MiniDFSCluster's {@code hosts()}. The names resolve through a JVM hosts file
 * ({@code -Djdk.net.hosts.file}, written by {@link #writeHostsFile}) to distinct loopback addresses 127.0.0.11-14,
 * so reverse lookups give each NodeManager its own name back; MapReduce task JVMs get the same file. Racks come from
 * one topology table (TableMapping) shared by the ResourceManager and the AMs; HDFS uses MiniDFSCluster's own
 * StaticMapping with the same assignment. The result: NodeManager hN and DataNode hN are the same host to YARN, to
 * HDFS and to MapReduce, and both the engine and the MR counters see real node and rack locality.
 */
final class MiniHadoop implements AutoCloseable {
  static final String[] HOSTS = {"h1", "h2", "h3", "h4"};
  static final String[] RACKS = {"/rack1", "/rack1", "/rack2", "/rack2"};
  static final String[] ADDRESSES = {"127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14"};
  static final int NM_MEMORY_MB = 4096;
  static final int NM_VCORES = 8;

  /**
   * JVM flags of the MapReduce ApplicationMasters and tasks. Those JVMs live for seconds and a job starts up to ten of
   * them at once, so on a 2-core machine a job's time is mostly their start-up CPU: C1 alone (no C2 compilations of
   * code that runs once), the serial collector (no parallel GC threads per JVM) and no perf-data file take about 40%
   * off each one's CPU time. Nothing a test measures depends on the task JVM's compiler. -Dyarnrl.mr.jvm= overrides.
   */
  static final String TASK_JVM_FLAGS = System.getProperty("yarnrl.mr.jvm",
      "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData");

  final Path workDir;
  final MiniDFSCluster dfs;
  final MiniMRYarnCluster yarn;
  final List<NodeManager> nodeManagers = new ArrayList<>();
  private final String taskJavaOpts;

  /** The file named by -Djdk.net.hosts.file: must be written before Hadoop resolves any name. */
  static void writeHostsFile() throws IOException {
    String file = System.getProperty("jdk.net.hosts.file");
    if (file == null) {
      throw new IllegalStateException("run with -Djdk.net.hosts.file=PATH (the pom's failsafe argLine does)");
    }
    String self = localHostName();
    StringBuilder b = new StringBuilder("127.0.0.1 localhost");
    if (!self.isEmpty() && !self.equals("localhost")) {
      b.append(' ').append(self);
    }
    b.append('\n');
    for (int i = 0; i < HOSTS.length; i++) {
      b.append(ADDRESSES[i]).append(' ').append(HOSTS[i]).append('\n');
    }
    Path p = Path.of(file);
    Files.createDirectories(p.toAbsolutePath().getParent());
    Files.writeString(p, b.toString(), StandardCharsets.UTF_8);
  }

  private static String localHostName() throws IOException {
    Path proc = Path.of("/proc/sys/kernel/hostname");
    if (Files.isReadable(proc)) {
      return Files.readString(proc, StandardCharsets.UTF_8).trim();
    }
    String env = System.getenv("HOSTNAME");
    return env == null ? "" : env.trim();
  }

  /**
   * @param schedulerSettings the ResourceManager's scheduler class and its settings
   */
  MiniHadoop(Path workDir, Configuration schedulerSettings) throws Exception {
    this.workDir = workDir;
    Files.createDirectories(workDir);
    DefaultMetricsSystem.setMiniClusterMode(true);

    // HDFS: 4 DataNodes h1..h4 in 2 racks, centralized caching without mlock (as Hadoop's TestFsDatasetCache)
    NativeIO.POSIX.setCacheManipulator(new NativeIO.POSIX.NoMlockCacheManipulator());
    Configuration hconf = new HdfsConfiguration();
    hconf.setInt(DFSConfigKeys.DFS_REPLICATION_KEY, 2);
    hconf.setLong(DFSConfigKeys.DFS_BLOCK_SIZE_KEY, 1024 * 1024);
    hconf.setLong(DFSConfigKeys.DFS_DATANODE_MAX_LOCKED_MEMORY_KEY, 256L * 1024 * 1024); // no real mlock (NoMlock)
    hconf.setLong(DFSConfigKeys.DFS_NAMENODE_PATH_BASED_CACHE_REFRESH_INTERVAL_MS, 100);
    hconf.setLong(DFSConfigKeys.DFS_CACHEREPORT_INTERVAL_MSEC_KEY, 500);
    hconf.setLong(DFSConfigKeys.DFS_HEARTBEAT_INTERVAL_KEY, 1);
    dfs = new MiniDFSCluster.Builder(hconf, workDir.resolve("dfs").toFile())
        .numDataNodes(HOSTS.length).hosts(HOSTS).racks(RACKS).build();
    dfs.waitActive();

    // YARN + MapReduce (ResourceManager, JobHistoryServer) with our NodeManagers
    Path topology = workDir.resolve("topology.table");
    StringBuilder table = new StringBuilder();
    for (int i = 0; i < HOSTS.length; i++) {
      // TableMapping normalizes names to addresses before looking them up: list both
      table.append(HOSTS[i]).append(' ').append(RACKS[i]).append('\n');
      table.append(ADDRESSES[i]).append(' ').append(RACKS[i]).append('\n');
    }
    Files.writeString(topology, table.toString(), StandardCharsets.UTF_8);

    String opens = System.getProperty("yarnrl.mr.opens", "");
    taskJavaOpts = "-Djdk.net.hosts.file=" + Path.of(System.getProperty("jdk.net.hosts.file")).toAbsolutePath()
        + " -Djava.net.preferIPv4Stack=true " + TASK_JVM_FLAGS + " " + opens;

    Configuration conf = new YarnConfiguration(new Configuration(dfs.getConfiguration(0)));
    conf.set(CommonConfigurationKeysPublic.FS_DEFAULT_NAME_KEY, dfs.getFileSystem().getUri().toString());
    conf.setClass(CommonConfigurationKeysPublic.NET_TOPOLOGY_NODE_SWITCH_MAPPING_IMPL_KEY, TableMapping.class,
        org.apache.hadoop.net.DNSToSwitchMapping.class);
    conf.set(CommonConfigurationKeysPublic.NET_TOPOLOGY_TABLE_MAPPING_FILE_KEY, topology.toString());
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
    conf.setInt(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 250);
    conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, NM_MEMORY_MB);
    conf.setInt(MRJobConfig.MR_AM_VMEM_MB, 512);
    conf.set(MRJobConfig.MR_AM_COMMAND_OPTS, "-Xmx320m " + taskJavaOpts);
    conf.setInt(MRJobConfig.MAP_MEMORY_MB, 512);
    conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, 512);
    conf.set(MRJobConfig.MAP_JAVA_OPTS, "-Xmx320m " + taskJavaOpts);
    conf.set(MRJobConfig.REDUCE_JAVA_OPTS, "-Xmx320m " + taskJavaOpts);
    conf.setBoolean(MRJobConfig.MAP_SPECULATIVE, false);
    conf.setBoolean(MRJobConfig.REDUCE_SPECULATIVE, false);
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 99.9f);
    // Job.waitForCompletion polls every 5 s by default: up to 5 s per job of the tests' clients waiting idly
    conf.setInt(Job.COMPLETION_POLL_INTERVAL_KEY, Integer.getInteger("yarnrl.mr.completion-poll-ms", 500));
    for (java.util.Map.Entry<String, String> e : schedulerSettings) {
      conf.set(e.getKey(), e.getValue());
    }
    yarn = new MiniMRYarnCluster("yarnrl", 0);
    yarn.init(conf);
    yarn.start();

    for (int i = 0; i < HOSTS.length; i++) {
      nodeManagers.add(startNodeManager(i));
    }
    waitForNodes();
  }

  private NodeManager startNodeManager(int i) throws IOException {
    Configuration c = new YarnConfiguration(yarn.getConfig());
    File dir = workDir.resolve("nm-" + HOSTS[i]).toFile();
    c.set(YarnConfiguration.NM_LOCAL_DIRS, new File(dir, "local").getAbsolutePath());
    c.set(YarnConfiguration.NM_LOG_DIRS, new File(dir, "log").getAbsolutePath());
    c.set(YarnConfiguration.NM_REMOTE_APP_LOG_DIR, new File(dir, "remote-log").getAbsolutePath());
    c.setInt(YarnConfiguration.NM_PMEM_MB, NM_MEMORY_MB);
    c.setInt(YarnConfiguration.NM_VCORES, NM_VCORES);
    c.set(YarnConfiguration.NM_BIND_HOST, "0.0.0.0");
    c.set(YarnConfiguration.NM_ADDRESS, HOSTS[i] + ":0");
    c.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, HOSTS[i] + ":0");
    c.set(YarnConfiguration.NM_WEBAPP_ADDRESS, HOSTS[i] + ":0");
    c.set(YarnConfiguration.NM_COLLECTOR_SERVICE_ADDRESS, HOSTS[i] + ":0");
    c.setBoolean(YarnConfiguration.NM_ENABLE_HARDWARE_CAPABILITY_DETECTION, false);
    c.setBoolean(YarnConfiguration.NM_CONTAINER_MONITOR_ENABLED, false);
    c.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    c.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    NodeManager nm = new NodeManager();
    nm.init(c);
    nm.start();
    return nm;
  }

  private void waitForNodes() throws Exception {
    ResourceManager rm = yarn.getResourceManager();
    long until = System.currentTimeMillis() + 60_000;
    while (System.currentTimeMillis() < until) {
      long running = rm.getRMContext().getRMNodes().values().stream()
          .filter(n -> n.getState() == NodeState.RUNNING).count();
      if (running == HOSTS.length && rm.getResourceScheduler().getNumClusterNodes() == HOSTS.length) {
        return;
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("NodeManagers did not all register: " + rm.getRMContext().getRMNodes().keySet());
  }

  /** host -> rack of the registered NodeManagers, as the ResourceManager sees them. */
  java.util.Map<String, String> nodeRacks() {
    java.util.Map<String, String> out = new java.util.TreeMap<>();
    for (RMNode n : yarn.getResourceManager().getRMContext().getRMNodes().values()) {
      out.put(n.getHostName(), n.getRackName());
    }
    return out;
  }

  ResourceScheduler scheduler() {
    return yarn.getResourceManager().getResourceScheduler();
  }

  JobConf jobConf() {
    JobConf c = new JobConf(yarn.getConfig());
    c.set(MRConfig.FRAMEWORK_NAME, MRConfig.YARN_FRAMEWORK_NAME);
    return c;
  }

  DistributedFileSystem fs() throws IOException {
    return dfs.getFileSystem();
  }

  String webHdfsUrl() {
    return "http://" + dfs.getNameNode().getHttpAddress().getHostString() + ":"
        + dfs.getNameNode().getHttpAddress().getPort();
  }

  /** Cache one file in the centralized cache and wait until a DataNode reports a cached replica of each block. */
  void cache(org.apache.hadoop.fs.Path file) throws Exception {
    cache(file, (short) 1);
  }

  /** Cache one file with this many cached replicas per block and wait until the DataNodes report them all. */
  void cache(org.apache.hadoop.fs.Path file, short replication) throws Exception {
    DistributedFileSystem fs = fs();
    try {
      fs.addCachePool(new CachePoolInfo("yarnrl"));
    } catch (IOException e) {
      if (!String.valueOf(e.getMessage()).contains("already exists")) {
        throw e;
      }
    }
    fs.addCacheDirective(new CacheDirectiveInfo.Builder().setPath(file).setPool("yarnrl")
        .setReplication(replication).build());
    long until = System.currentTimeMillis() + 60_000;
    while (System.currentTimeMillis() < until) {
      FileStatus st = fs.getFileStatus(file);
      BlockLocation[] blocks = fs.getFileBlockLocations(st, 0, st.getLen());
      boolean all = blocks.length > 0;
      for (BlockLocation b : blocks) {
        all &= b.getCachedHosts().length >= Math.min(replication, b.getHosts().length);
      }
      if (all) {
        return;
      }
      Thread.sleep(200);
    }
    throw new IllegalStateException(file + " was not cached within 60 s");
  }

  /** The NameNode's WebHDFS answer to GETFILEBLOCKLOCATIONS for one file (JSON text). */
  String webHdfsBlockLocations(String path) throws Exception {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(webHdfsUrl() + "/webhdfs/v1" + path
        + "?op=GETFILEBLOCKLOCATIONS&user.name=" + System.getProperty("user.name")))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IOException("WebHDFS " + r.statusCode() + ": " + r.body());
    }
    return r.body();
  }

  @Override
  public void close() {
    for (NodeManager nm : nodeManagers) {
      nm.stop();
    }
    if (yarn != null) {
      yarn.stop();
    }
    if (dfs != null) {
      dfs.shutdown();
    }
  }
}
