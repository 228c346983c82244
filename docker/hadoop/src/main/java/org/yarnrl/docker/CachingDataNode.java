package org.yarnrl.docker;

import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * Starts a DataNode with HDFS centralized caching on a machine without native libhadoop and with locked memory
 * capped (8 MB here, and containers cannot raise it): the cache manipulator that Hadoop's own caching tests use
 * (TestFsDatasetCache) skips only the mlock call. Cache directives, cache reports and WebHDFS cachedHosts then run
 * through the real NameNode and DataNode code.
 */
public final class CachingDataNode {
  private CachingDataNode() {}

  public static void main(String[] args) {
    NativeIO.POSIX.setCacheManipulator(new NativeIO.POSIX.NoMlockCacheManipulator());
    DataNode.main(args);
  }
}
