package org.yarnrl.federation;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import org.yarnrl.v1.JobCategory;

/**
 * The routing metadata of a submission, from its application tags (the scheduler plugin's keys, plus the executor
 * count RL-FC's job state needs):
 * {@code yarnrl.category=regular|time-critical|streaming}, {@code yarnrl.deadline-ms=N} (after submission),
 * {@code yarnrl.expected-runtime-ms=N}, {@code yarnrl.executors=N} (containers it will ask for at once).
 * YARN lower-cases tags, so keys and values are matched case-insensitively. A malformed yarnrl tag is listed in
 * {@link #problems}: the policy then routes the job by its built-in rule, with a warning, never refusing it.
 */
final class RouteTags {
  static final String CATEGORY = "yarnrl.category";
  static final String DEADLINE_MS = "yarnrl.deadline-ms";
  static final String EXPECTED_RUNTIME_MS = "yarnrl.expected-runtime-ms";
  static final String EXECUTORS = "yarnrl.executors";

  JobCategory category = JobCategory.JOB_CATEGORY_REGULAR;
  long deadlineMs;
  long expectedRuntimeMs;
  int executors = 1;
  final List<String> problems = new ArrayList<>();

  static RouteTags parse(Collection<String> tags) {
    RouteTags t = new RouteTags();
    if (tags == null) {
      return t;
    }
    for (String tag : tags) {
      int eq = tag.indexOf('=');
      String key = (eq < 0 ? tag : tag.substring(0, eq)).trim().toLowerCase(Locale.ROOT);
      if (!key.startsWith("yarnrl.")) {
        continue;
      }
      String value = eq < 0 ? "" : tag.substring(eq + 1).trim();
      try {
        switch (key) {
          case CATEGORY:
            t.category = category(value);
            break;
          case DEADLINE_MS:
            t.deadlineMs = bounded(value, 0, Long.MAX_VALUE / 2);
            break;
          case EXPECTED_RUNTIME_MS:
            t.expectedRuntimeMs = bounded(value, 0, Long.MAX_VALUE / 2);
            break;
          case EXECUTORS:
            t.executors = (int) bounded(value, 1, 100_000);
            break;
          default:
            break; // other yarnrl tags (yarnrl.input, ...) belong to the scheduler plugin
        }
      } catch (IllegalArgumentException e) {
        t.problems.add(tag + ": " + e.getMessage());
      }
    }
    return t;
  }

  private static long bounded(String value, long min, long max) {
    long v;
    try {
      v = Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not an integer");
    }
    if (v < min || v > max) {
      throw new IllegalArgumentException("out of range [" + min + ", " + max + "]");
    }
    return v;
  }

  private static JobCategory category(String value) {
    switch (value.toLowerCase(Locale.ROOT).replace('_', '-')) {
      case "regular":
        return JobCategory.JOB_CATEGORY_REGULAR;
      case "time-critical":
        return JobCategory.JOB_CATEGORY_TIME_CRITICAL;
      case "streaming":
        return JobCategory.JOB_CATEGORY_STREAMING;
      default:
        throw new IllegalArgumentException("unknown category (regular, time-critical, streaming)");
    }
  }
}
