package org.yarnrl.yarn;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.examples.WordCount;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;

/**
 * Ground truth of a map task's read locality, measured by the task itself: in {@code setup} it asks the NameNode
 * where its split's block has disk and cached replicas, compares them with the host it runs on ({@code NM_HOST},
 * set by the NodeManager) and that host's rack ({@value #RACKS}, "host=/rack,..."), and increments one counter of
 * the group {@value #GROUP}: CL (a cached replica on this host), DL (a disk replica on this host), CRL (a cached
 * replica in this rack), DRL (a disk replica in this rack) or NO. MapReduce's own DATA_LOCAL_MAPS cannot tell a
 * cached replica from a disk one; these counters can, independently of the scheduler and the engine.
 */
public final class LocalityProbe {
  public static final String GROUP = "yarnrl.read";
  public static final String RACKS = "yarnrl.probe.racks";
  public static final String[] STATES = {"CL", "DL", "CRL", "DRL", "NO"};

  private LocalityProbe() {}

  static String state(String host, Map<String, String> racks, BlockLocation block) throws IOException {
    String rack = racks.get(host);
    for (String h : block.getCachedHosts()) {
      if (h.equals(host)) {
        return "CL";
      }
    }
    for (String h : block.getHosts()) {
      if (h.equals(host)) {
        return "DL";
      }
    }
    if (rack != null) {
      for (String h : block.getCachedHosts()) {
        if (rack.equals(racks.get(h))) {
          return "CRL";
        }
      }
      for (String h : block.getHosts()) {
        if (rack.equals(racks.get(h))) {
          return "DRL";
        }
      }
    }
    return "NO";
  }

  static Map<String, String> racks(Configuration conf) {
    Map<String, String> out = new HashMap<>();
    for (String pair : conf.getTrimmedStrings(RACKS)) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        out.put(pair.substring(0, eq), pair.substring(eq + 1));
      }
    }
    return out;
  }

  static void record(Mapper<?, ?, ?, ?>.Context context) throws IOException {
    InputSplit split;
    try {
      split = context.getInputSplit();
    } catch (Exception e) {
      return;
    }
    if (!(split instanceof FileSplit)) {
      return;
    }
    FileSplit fs = (FileSplit) split;
    Configuration conf = context.getConfiguration();
    FileSystem fileSystem = fs.getPath().getFileSystem(conf);
    BlockLocation[] blocks = fileSystem.getFileBlockLocations(fs.getPath(), fs.getStart(), Math.max(1, fs.getLength()));
    String host = System.getenv("NM_HOST");
    if (blocks.length == 0 || host == null) {
      return;
    }
    context.getCounter(GROUP, state(host, racks(conf), blocks[0])).increment(1);
  }

  /** WordCount's mapper, probed. */
  public static class TokenizerMapper extends WordCount.TokenizerMapper {
    @Override
    protected void setup(Context context) throws IOException, InterruptedException {
      record(context);
    }
  }

  /** The identity mapper (Sort, TeraSort), probed. */
  public static class IdentityMapper extends Mapper<Object, Object, Object, Object> {
    @Override
    protected void setup(Context context) throws IOException, InterruptedException {
      record(context);
    }
  }
}
