package org.yarnrl.docker;

import java.io.FileDescriptor;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import jdk.incubator.foreign.CLinker;
import jdk.incubator.foreign.FunctionDescriptor;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.io.nativeio.NativeIO;
import org.apache.hadoop.io.nativeio.NativeIOException;

/**
 * Starts a DataNode with HDFS centralized caching on a machine without native libhadoop and with locked memory
 * capped (8 MB here, and containers cannot raise it): the cache manipulator that Hadoop's own caching tests use
 * (TestFsDatasetCache) skips only the mlock call, and reports no memlock limit, so dfs.datanode.max.locked.memory
 * may exceed the container's memlock cap. Cache directives, cache reports and WebHDFS cachedHosts then run through
 * the real NameNode and DataNode code. A cached replica is mmapped by the DataNode and, where mlock would have
 * faulted its pages in and locked them, loaded (every page touched, MappedByteBuffer.load) but not locked: its pages
 * stay in memory as pages mapped by the DataNode, and a read of the block file (BlockSender reads the file, not the
 * mapping) is served from them.
 *
 * <p>With YARNRL_DN_FADVISE=true the manipulator also gives posix_fadvise back to the DataNode (Java 17's foreign
 * linker, no native libhadoop): Hadoop calls it for dfs.datanode.drop.cache.behind.reads, which without native code
 * is silently skipped (read-ahead stays off: its pool needs native code itself). Dropping behind reads is what lets a throttled disk (docker_cluster's
 * --worker-disk-read-mbps) cost something on every read of an uncached replica: otherwise the kernel's page cache
 * serves every read after the first from memory. The kernel keeps the pages of a cached replica, which the DataNode
 * holds mapped (POSIX_FADV_DONTNEED leaves mapped pages alone), so a cached replica is still read from memory.
 * Hadoop's POSIX_FADV_* constants are filled in by native libhadoop (-1 without it); they are set to Linux's values.
 * Needs the JVM flags --add-modules jdk.incubator.foreign --enable-native-access=ALL-UNNAMED
 * --add-opens java.base/java.io=ALL-UNNAMED (docker/hadoop/bin/yarnrl-daemon).
 */
public final class CachingDataNode {
  private CachingDataNode() {}

  public static void main(String[] args) {
    NativeIO.POSIX.CacheManipulator manipulator = new LoadingCacheManipulator();
    if ("true".equalsIgnoreCase(System.getenv("YARNRL_DN_FADVISE"))) {
      try {
        manipulator = new FadvisingCacheManipulator();
        System.err.println("CachingDataNode: posix_fadvise through the foreign linker (drop-behind reads)");
      } catch (Throwable e) {  // an older JVM, a missing flag: caching works, fadvise stays off (said once)
        System.err.println("CachingDataNode: posix_fadvise unavailable, drop-behind reads are skipped: " + e);
      }
    }
    NativeIO.POSIX.setCacheManipulator(manipulator);
    DataNode.main(args);
  }

  /** NoMlockCacheManipulator whose mlock faults the mapped pages in (what mlock does, without the lock). */
  static class LoadingCacheManipulator extends NativeIO.POSIX.NoMlockCacheManipulator {
    @Override
    public void mlock(String identifier, ByteBuffer buffer, long len) throws java.io.IOException {
      super.mlock(identifier, buffer, len);  // logs "mlocking ..."
      if (buffer instanceof MappedByteBuffer) {
        ((MappedByteBuffer) buffer).load();
      }
    }
  }

  /** LoadingCacheManipulator whose posixFadviseIfPossible calls libc's posix_fadvise. */
  static final class FadvisingCacheManipulator extends LoadingCacheManipulator {
    private final MethodHandle fadvise;
    private final Field fdField;
    private volatile boolean failedOnce;

    FadvisingCacheManipulator() throws ReflectiveOperationException {
      fadvise = CLinker.getInstance().downcallHandle(
          CLinker.systemLookup().lookup("posix_fadvise").orElseThrow(
              () -> new NoSuchMethodException("posix_fadvise not in libc")),
          MethodType.methodType(int.class, int.class, long.class, long.class, int.class),
          FunctionDescriptor.of(CLinker.C_INT, CLinker.C_INT, CLinker.C_LONG, CLinker.C_LONG, CLinker.C_INT));
      fdField = FileDescriptor.class.getDeclaredField("fd");
      fdField.setAccessible(true);
      // Linux's values (fcntl.h); native libhadoop would set them, they are -1 without it
      NativeIO.POSIX.POSIX_FADV_NORMAL = 0;
      NativeIO.POSIX.POSIX_FADV_RANDOM = 1;
      NativeIO.POSIX.POSIX_FADV_SEQUENTIAL = 2;
      NativeIO.POSIX.POSIX_FADV_WILLNEED = 3;
      NativeIO.POSIX.POSIX_FADV_DONTNEED = 4;
      NativeIO.POSIX.POSIX_FADV_NOREUSE = 5;
    }

    @Override
    public void posixFadviseIfPossible(String identifier, FileDescriptor fd, long offset, long len, int flags)
        throws NativeIOException {
      int rc;
      try {
        rc = (int) fadvise.invokeExact(fdField.getInt(fd), offset, len, flags);
      } catch (Throwable e) {
        rc = -1;
      }
      if (rc != 0 && !failedOnce) {  // posix_fadvise returns the error number; advice only, never fatal
        failedOnce = true;
        System.err.println("CachingDataNode: posix_fadvise(" + identifier + ", " + flags + ") returned " + rc
            + " (logged once)");
      }
    }
  }
}
