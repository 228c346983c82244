package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The jar a cluster gets: everything it bundles is relocated, and gRPC still finds its transport. */
class ShadedJarIT {
  private static JarFile jar() throws Exception {
    return new JarFile(System.getProperty("yarnrl.shadedJar", "target/yarnrl-yarn-plugin-0.1.0.jar"));
  }

  @Test
  void bundlesNoUnrelocatedGoogleOrPerfmarkClasses() throws Exception {
    try (JarFile jar = jar()) {
      List<String> names = jar.stream().map(e -> e.getName()).collect(Collectors.toList());
      assertTrue(names.contains("org/yarnrl/yarn/RlScheduler.class"));
      assertTrue(names.stream().anyMatch(n -> n.startsWith("org/yarnrl/shaded/com/google/protobuf/")));
      for (String prefix : List.of("com/google/protobuf/", "com/google/common/", "com/google/gson/", "io/perfmark/",
          "org/apache/hadoop/")) {
        List<String> leaked = names.stream().filter(n -> n.startsWith(prefix)).limit(5).collect(Collectors.toList());
        assertEquals(List.of(), leaked, "unrelocated " + prefix + " classes in the shaded jar");
      }
    }
  }

  @Test
  void serviceFilesNameRelocatedOrBundledProviders() throws Exception {
    try (JarFile jar = jar()) {
      var entry = jar.getEntry("META-INF/services/io.grpc.ManagedChannelProvider");
      assertNotNull(entry, "gRPC channel providers missing: 'No functional channel service provider found'");
      String providers = new String(jar.getInputStream(entry).readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(providers.contains("io.grpc.netty.shaded.io.grpc.netty.NettyChannelProvider"), providers);
      for (String line : providers.split("\n")) {
        String cls = line.trim();
        if (!cls.isEmpty() && !cls.startsWith("#")) {
          assertNotNull(jar.getEntry(cls.replace('.', '/') + ".class"), "provider class not in jar: " + cls);
        }
      }
      assertFalse(jar.stream().anyMatch(e -> e.getName().equals("META-INF/services/com.google.protobuf.Extension")));
    }
  }

  @Test
  void relocatedGrpcOpensAChannelFromTheShadedJar() throws Exception {
    // this test class path has the shaded jar instead of the unshaded gRPC jars (failsafe configuration): the
    // channel builder must find the bundled Netty transport through the rewritten service files
    Class<?> builder = Class.forName("io.grpc.ManagedChannelBuilder");
    assertTrue(builder.getProtectionDomain().getCodeSource().getLocation().getPath().endsWith(".jar"));
    Object channel = builder.getMethod("forTarget", String.class).invoke(null, "127.0.0.1:1");
    assertEquals("io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder", channel.getClass().getName());
  }
}
