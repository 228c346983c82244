package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.JobCategory;
import org.yarnrl.v1.ResourceAsk;
import org.yarnrl.v1.ScheduleRequest;

/** The Java half of the golden-message check: tests/golden/schedule_request.bin, written by the Python build. */
class GoldenMessageTest {

  private static byte[] golden() throws Exception {
    Path dir = Path.of(System.getProperty("yarnrl.golden", "../tests/golden"));
    return Files.readAllBytes(dir.resolve("schedule_request.bin"));
  }

  @Test
  void parsesEveryFieldWrittenByPython() throws Exception {
    ScheduleRequest req = ScheduleRequest.parseFrom(golden());
    assertEquals("golden-1", req.getRequestId());
    assertEquals("h1:45454", req.getNode().getNodeId());
    assertEquals("h1", req.getNode().getHost());
    assertEquals("/rack1", req.getNode().getRack());
    assertEquals(8192, req.getNode().getTotal().getMemoryMb());
    assertEquals(2L, req.getNode().getTotal().getExtraOrThrow("yarn.io/gpu"));
    assertEquals(6144, req.getNode().getUnallocated().getMemoryMb());
    assertEquals(1.5, req.getNode().getUtilization().getCpu());
    assertEquals(1_700_000_001_000L, req.getNode().getTimestampMs());
    assertEquals(1, req.getNode().getRunningCount());
    assertEquals(2, req.getAsksCount());

    ResourceAsk first = req.getAsks(0);
    assertEquals("appattempt_1700000000000_0001_000001/20/0", first.getAskId());
    assertEquals(3, first.getNumContainers());
    assertEquals(20, first.getPriority());
    assertEquals("h1", first.getLocality(0).getResourceName());
    assertEquals(2, first.getLocality(0).getNumContainers());
    assertEquals("/rack1", first.getLocality(1).getResourceName());
    assertEquals(JobCategory.JOB_CATEGORY_TIME_CRITICAL, first.getJob().getCategory());
    assertEquals(1_700_000_600_000L, first.getJob().getDeadlineMs());
    assertEquals(List.of("h1"), first.getJob().getInputBlocks(0).getCachedHostsList());
    assertEquals(Map.of("yarnrl.category", "time-critical", "yarnrl.deadline-ms", "600000"),
        first.getJob().getTagsMap());

    ResourceAsk second = req.getAsks(1);
    assertFalse(second.hasJob());
    assertFalse(second.getRelaxLocality());
    assertEquals(7L, second.getAllocationRequestId());
    assertEquals(2, req.getCluster().getNumRacks());
  }

  @Test
  void reserializesToIdenticalBytes() throws Exception {
    byte[] bytes = golden();
    assertArrayEquals(bytes, ScheduleRequest.parseFrom(bytes).toByteArray());
  }
}
