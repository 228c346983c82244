package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.JobCategory;
import org.yarnrl.v1.JobMetadata;

class JobTagsTest {
  @Test
  void readsCategoryDeadlineRuntimeAndInputs() {
    JobMetadata job = JobTags.parse(List.of("yarnrl.category=time-critical", "yarnrl.deadline-ms=60000",
        "yarnrl.expected-runtime-ms=1500", "yarnrl.input=/data/a", "yarnrl.input=/data/b", "team=ads"), 1_000_000);
    assertEquals(JobCategory.JOB_CATEGORY_TIME_CRITICAL, job.getCategory());
    assertEquals(1_060_000, job.getDeadlineMs()); // relative to submission, sent absolute
    assertEquals(1500, job.getExpectedRuntimeMs());
    assertEquals(List.of("/data/a", "/data/b"), job.getInputPathsList());
    assertEquals("time-critical", job.getTagsMap().get("yarnrl.category"));
    assertEquals(Set.of("yarnrl.category", "yarnrl.deadline-ms", "yarnrl.expected-runtime-ms", "yarnrl.input"),
        job.getTagsMap().keySet()); // non-yarnrl tags are not forwarded
  }

  @Test
  void categoriesAreCaseInsensitive() {
    assertEquals(JobCategory.JOB_CATEGORY_STREAMING, JobTags.parse(Set.of("YARNRL.CATEGORY=Streaming"), 0)
        .getCategory());
    assertEquals(JobCategory.JOB_CATEGORY_REGULAR, JobTags.parse(Set.of("yarnrl.category=regular"), 0)
        .getCategory());
  }

  @Test
  void malformedTagsAreIgnoredNotFatal() {
    JobMetadata job = JobTags.parse(List.of("yarnrl.category=urgent", "yarnrl.deadline-ms=soon",
        "yarnrl.expected-runtime-ms=-5", "=x", "yarnrl.input="), 10);
    assertEquals(JobCategory.JOB_CATEGORY_UNSPECIFIED, job.getCategory());
    assertEquals(0, job.getDeadlineMs());
    assertEquals(0, job.getExpectedRuntimeMs());
    assertEquals(0, job.getInputPathsCount());
  }

  @Test
  void noTagsGiveEmptyMetadata() {
    assertEquals(JobMetadata.getDefaultInstance(), JobTags.parse(null, 5));
    assertEquals(Map.of(), JobTags.parse(List.of("plain-tag"), 5).getTagsMap());
  }
}
