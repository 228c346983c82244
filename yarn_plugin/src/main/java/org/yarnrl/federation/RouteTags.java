package org.yarnrl.federation;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.yarnrl.v1.JobCategory;
import org.yarnrl.yarn.JobTags;

/**
 * The routing metadata of a submission, from its application tags (the scheduler plugin's keys, plus the executor
 * count RL-FC's job state needs):
 * {@code yarnrl.category=regular|time-critical|streaming}, {@code yarnrl.deadline-ms=N} (after submission),
 * {@code yarnrl.expected-runtime-ms=N}, {@code yarnrl.executors=N} (containers it will ask for at once).
 * YARN lower-cases tags, so keys and values are matched case-insensitively. A malformed yarnrl tag is listed in
 * {@link #problems}: the policy then routes the job by its built-in rule, with a warning, never refusing it.
 */
final class RouteTags {
  static final String CATEGORY = JobTags.CATEGORY;
  static final String DEADLINE_MS = JobTags.DEADLINE_MS;
  static final String EXPECTED_RUNTIME_MS = JobTags.EXPECTED_RUNTIME_MS;
  static final String EXECUTORS = "yarnrl.executors";

  JobCategory category = JobCategory.JOB_CATEGORY_REGULAR;
  long deadlineMs;
  long expectedRuntimeMs;
  int executors = 1;
  final List<String> problems = new ArrayList<>();

  static RouteTags parse(Collection<String> tags) {
    RouteTags t = new RouteTags();
    t.problems.addAll(JobTags.forEachYarnrlTag(tags, (key, raw) -> {
      String value = raw == null ? "" : raw;
      switch (key) {
        case CATEGORY:
          t.category = JobTags.category(value);
          break;
        case DEADLINE_MS:
          t.deadlineMs = JobTags.bounded(value, 0, Long.MAX_VALUE / 2);
          break;
        case EXPECTED_RUNTIME_MS:
          t.expectedRuntimeMs = JobTags.bounded(value, 0, Long.MAX_VALUE / 2);
          break;
        case EXECUTORS:
          t.executors = (int) JobTags.bounded(value, 1, 100_000);
          break;
        default:
          break; // other yarnrl tags (yarnrl.input, ...) belong to the scheduler plugin
      }
    }));
    return t;
  }
}
