package org.yarnrl.yarn;

import java.util.Collection;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.JobCategory;
import org.yarnrl.v1.JobMetadata;

/**
 * Job metadata from YARN application tags, forwarded with every ask of the application.
 *
 * <ul>
 *   <li>{@code yarnrl.category=regular|time-critical|streaming}
 *   <li>{@code yarnrl.deadline-ms=N}: deadline N ms after the application's submission (relative, since a client
 *       knows its submit time only approximately); sent to the engine as an absolute epoch-ms deadline
 *   <li>{@code yarnrl.expected-runtime-ms=N}: expected run time of one container
 *   <li>{@code yarnrl.input=/path}: an HDFS input path, for the engine's block-location lookups; one tag per path
 *       (YARN splits {@code mapreduce.job.tags} at commas)
 * </ul>
 *
 * <p>YARN lower-cases application tags by default, so keys and values are matched case-insensitively and input
 * paths arrive lower-cased (use lower-case input paths, or the engine's own lookups). A malformed tag is ignored
 * with a warning: metadata is a hint, never a reason to refuse a job. Every yarnrl tag is also passed through in
 * {@code JobMetadata.tags}.
 */
final class JobTags {
  private static final Logger LOG = LoggerFactory.getLogger(JobTags.class);

  static final String CATEGORY = "yarnrl.category";
  static final String DEADLINE_MS = "yarnrl.deadline-ms";
  static final String EXPECTED_RUNTIME_MS = "yarnrl.expected-runtime-ms";
  static final String INPUT = "yarnrl.input";

  private JobTags() {}

  static JobMetadata parse(Collection<String> tags, long submitTimeMs) {
    JobMetadata.Builder job = JobMetadata.newBuilder();
    if (tags == null) {
      return job.build();
    }
    for (String tag : tags) {
      int eq = tag.indexOf('=');
      if (eq <= 0) {
        continue;
      }
      String key = tag.substring(0, eq).trim().toLowerCase(Locale.ROOT);
      String value = tag.substring(eq + 1).trim();
      if (!key.startsWith("yarnrl.")) {
        continue;
      }
      job.putTags(key, value);
      try {
        switch (key) {
          case CATEGORY:
            job.setCategory(category(value));
            break;
          case DEADLINE_MS:
            job.setDeadlineMs(submitTimeMs + nonNegative(value));
            break;
          case EXPECTED_RUNTIME_MS:
            job.setExpectedRuntimeMs(nonNegative(value));
            break;
          case INPUT:
            if (!value.isEmpty()) {
              job.addInputPaths(value);
            }
            break;
          default:
            break;
        }
      } catch (IllegalArgumentException e) {
        LOG.warn("ignoring application tag {}: {}", tag, e.getMessage());
      }
    }
    return job.build();
  }

  private static long nonNegative(String value) {
    long v = Long.parseLong(value);
    if (v < 0) {
      throw new IllegalArgumentException("negative value");
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
