package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The FIFO scheduler's upstream code stays upstream: FifoSchedulerBase and RlAppAttempt are Hadoop 3.5.0's
 * FifoScheduler and FifoAppAttempt (read here from the release's sources jar) with a reviewed difference stored in
 * yarn_plugin/upstream/. Any other difference fails the build; after an upgrade or a deliberate change, review
 * target/upstream/NAME.diff (written on failure) and copy it over the stored one.
 */
class UpstreamFifoBaseTest {
  private static final String UPSTREAM = "org/apache/hadoop/yarn/server/resourcemanager/scheduler/fifo/";

  @ParameterizedTest
  @CsvSource({"FifoScheduler.java, FifoSchedulerBase.java, FifoScheduler-3.5.0.diff",
      "FifoAppAttempt.java, RlAppAttempt.java, FifoAppAttempt-3.5.0.diff"})
  void theBaseIsUpstreamPlusTheReviewedDifference(String upstreamName, String oursName, String reviewedName)
      throws IOException {
    String upstream;
    try (InputStream in = getClass().getClassLoader().getResourceAsStream(UPSTREAM + upstreamName)) {
      assertNotNull(in, UPSTREAM + upstreamName + " not on the test class path (the resourcemanager sources jar)");
      upstream = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String ours = Files.readString(Path.of("src/main/java/org/yarnrl/yarn", oursName));
    String diff = diff(upstream, ours);
    Path reviewed = Path.of("upstream", reviewedName);
    String want = Files.exists(reviewed) ? Files.readString(reviewed) : "";
    if (!want.equals(diff)) {
      Path out = Path.of("target", "upstream", reviewedName);
      Files.createDirectories(out.getParent());
      Files.writeString(out, diff);
      assertEquals(want, diff, oursName + " differs from Hadoop 3.5.0's " + upstreamName + " by more (or less) "
          + "than the reviewed " + reviewed + "; review " + out.toAbsolutePath() + " and copy it there");
    }
  }

  /** Line diff (longest common subsequence): hunks "@@ -upstreamLine,count +ourLine,count @@", then - and + lines. */
  static String diff(String a, String b) {
    String[] x = a.split("\n", -1);
    String[] y = b.split("\n", -1);
    int[][] lcs = new int[x.length + 1][y.length + 1];
    for (int i = x.length - 1; i >= 0; i--) {
      for (int j = y.length - 1; j >= 0; j--) {
        lcs[i][j] = x[i].equals(y[j]) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    StringBuilder out = new StringBuilder();
    int i = 0;
    int j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i].equals(y[j])) {
        i++;
        j++;
        continue;
      }
      int i0 = i;
      int j0 = j;
      List<String> lines = new ArrayList<>();
      while (i < x.length || j < y.length) {
        if (i < x.length && j < y.length && x[i].equals(y[j])) {
          break;
        }
        if (j >= y.length || (i < x.length && lcs[i + 1][j] >= lcs[i][j + 1])) {
          lines.add("-" + x[i++]);
        } else {
          lines.add("+" + y[j++]);
        }
      }
      out.append("@@ -").append(i0 + 1).append(',').append(i - i0).append(" +").append(j0 + 1).append(',')
          .append(j - j0).append(" @@\n");
      for (String l : lines) {
        out.append(l).append('\n');
      }
    }
    return out.toString();
  }
}
