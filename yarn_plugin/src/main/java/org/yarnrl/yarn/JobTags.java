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
public final class JobTags {
  private static final Logger LOG = LoggerFactory.getLogger(JobTags.class);

  public static final String CATEGORY = "yarnrl.category";
  public static final String DEADLINE_MS = "yarnrl.deadline-ms";
  public static final String EXPECTED_RUNTIME_MS = "yarnrl.expected-runtime-ms";
  public static final String INPUT = "yarnrl.input";

  /** One yarnrl tag: its lower-cased key and trimmed value (null for a tag without '='). */
  public interface TagHandler {
    /** Throws IllegalArgumentException (with the reason) for a malformed value. */
    void handle(String key, String value);
  }

  /**
   * Calls {@code handler} for every {@code yarnrl.*} tag, in order; returns "tag: reason" for each one it refused.
   * YARN lower-cases tags by default, so keys are matched case-insensitively.
   */
  public static java.util.List<String> forEachYarnrlTag(Collection<String> tags, TagHandler handler) {
    java.util.List<String> problems = new java.util.ArrayList<>();
    if (tags == null) {
      return problems;
    }
    for (String tag : tags) {
      int eq = tag.indexOf('=');
      String key = (eq < 0 ? tag : tag.substring(0, eq)).trim().toLowerCase(Locale.ROOT);
      if (!key.startsWith("yarnrl.")) {
        continue;
      }
      try {
        handler.handle(key, eq < 0 ? null : tag.substring(eq + 1).trim());
      } catch (IllegalArgumentException e) {
        problems.add(tag + ": " + e.getMessage());
      }
    }
    return problems;
  }

  private JobTags() {}

  static JobMetadata parse(Collection<String> tags, long submitTimeMs) {
    JobMetadata.Builder job = JobMetadata.newBuilder();
    for (String problem : forEachYarnrlTag(tags, (key, value) -> {
      if (value == null) {
        return; // a bare key carries nothing
      }
      job.putTags(key, value);
      switch (key) {
        case CATEGORY:
          job.setCategory(category(value));
          break;
        case DEADLINE_MS:
          job.setDeadlineMs(submitTimeMs + bounded(value, 0, Long.MAX_VALUE / 2));
          break;
        case EXPECTED_RUNTIME_MS:
          job.setExpectedRuntimeMs(bounded(value, 0, Long.MAX_VALUE / 2));
          break;
        case INPUT:
          if (!value.isEmpty()) {
            job.addInputPaths(value);
          }
          break;
        default:
          break;
      }
    })) {
      LOG.warn("ignoring application tag {}", problem);
    }
    return job.build();
  }

  /** An integer tag value in [min, max]; IllegalArgumentException saying why otherwise. */
  public static long bounded(String value, long min, long max) {
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

  /** {@code regular|time-critical|streaming} (any case, '_' for '-'). */
  public static JobCategory category(String value) {
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
