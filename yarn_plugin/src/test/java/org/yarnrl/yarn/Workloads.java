package org.yarnrl.yarn;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.examples.RandomTextWriter;
import org.apache.hadoop.examples.WordCount;
import org.apache.hadoop.examples.terasort.TeraGen;
import org.apache.hadoop.examples.terasort.TeraSort;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.SleepJob;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * HiBench's micro workloads at its "tiny" size, as real MapReduce jobs: RandomTextWriter + WordCount (32,000 bytes)
 * and TeraGen + TeraSort (32,000 rows), plus SleepJob for timing-controlled runs.
 */
final class Workloads {
  static final long WORDCOUNT_TINY_BYTES = 32_000;
  static final long TERASORT_TINY_ROWS = 32_000;
  static final int MAPS = 4;

  private Workloads() {}

  /** One finished job: wall time and the MapReduce locality counters. */
  static final class Result {
    final String name;
    final boolean succeeded;
    final double seconds;
    final Map<String, Long> counters = new LinkedHashMap<>();

    Result(String name, boolean succeeded, double seconds) {
      this.name = name;
      this.succeeded = succeeded;
      this.seconds = seconds;
    }

    long counter(JobCounter c) {
      return counters.getOrDefault(c.name(), 0L);
    }

    @Override
    public String toString() {
      return name + ": succeeded=" + succeeded + " seconds=" + String.format("%.1f", seconds) + " " + counters;
    }
  }

  static Result finish(String name, Job job, long startNanos) throws Exception {
    boolean ok = job.waitForCompletion(false);
    return result(name, job, ok, (System.nanoTime() - startNanos) / 1e9);
  }

  /** A finished job's result: its outcome, the given wall time and its locality counters. */
  static Result result(String name, Job job, boolean ok, double seconds) throws Exception {
    Result r = new Result(name, ok, seconds);
    Counters counters = job.getCounters();
    if (counters != null) {
      for (JobCounter c : new JobCounter[] {JobCounter.TOTAL_LAUNCHED_MAPS, JobCounter.DATA_LOCAL_MAPS,
          JobCounter.RACK_LOCAL_MAPS, JobCounter.OTHER_LOCAL_MAPS, JobCounter.TOTAL_LAUNCHED_REDUCES}) {
        r.counters.put(c.name(), counters.findCounter(c).getValue());
      }
    }
    return r;
  }

  private static Result tool(String name, Tool tool, Configuration conf, String... args) throws Exception {
    long start = System.nanoTime();
    int rc = ToolRunner.run(conf, tool, args);
    return new Result(name, rc == 0, (System.nanoTime() - start) / 1e9);
  }

  /** RandomTextWriter: MAPS files of random text, WORDCOUNT_TINY_BYTES in all. */
  static Result randomTextWriter(Configuration base, Path out) throws Exception {
    Configuration conf = new Configuration(base);
    conf.setLong("mapreduce.randomtextwriter.totalbytes", WORDCOUNT_TINY_BYTES);
    conf.setLong("mapreduce.randomtextwriter.bytespermap", WORDCOUNT_TINY_BYTES / MAPS);
    return tool("randomtextwriter", new RandomTextWriter(), conf, out.toString());
  }

  /**
   * The same input shape as {@link #randomTextWriter} (MAPS files, WORDCOUNT_TINY_BYTES in all, random words) written
   * straight into HDFS from this JVM, without a MapReduce job: for tests that need WordCount's input, not its
   * generation time. Seeded.
   */
  static void writeRandomText(org.apache.hadoop.fs.FileSystem fs, Path dir, long seed) throws java.io.IOException {
    java.util.Random rng = new java.util.Random(seed);
    String[] words = new String[500];
    for (int i = 0; i < words.length; i++) {
      StringBuilder w = new StringBuilder();
      for (int j = 2 + rng.nextInt(8); j > 0; j--) {
        w.append((char) ('a' + rng.nextInt(26)));
      }
      words[i] = w.toString();
    }
    for (int m = 0; m < MAPS; m++) {
      StringBuilder text = new StringBuilder();
      while (text.length() < WORDCOUNT_TINY_BYTES / MAPS) {
        text.append(words[rng.nextInt(words.length)]).append(rng.nextInt(12) == 0 ? '\n' : ' ');
      }
      try (org.apache.hadoop.fs.FSDataOutputStream out = fs.create(new Path(dir, String.format("part-%05d", m)))) {
        out.write(text.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
    }
  }

  /** WordCount (WordCount.main calls System.exit, so the job is built from its mapper and reducer). */
  static Result wordCount(Configuration base, Path in, Path out, String tags) throws Exception {
    return finish("wordcount", wordCountJob(base, in, out, tags), System.nanoTime());
  }

  /** The WordCount job, submitted but not awaited. */
  static Job submitWordCount(Configuration base, Path in, Path out, String tags) throws Exception {
    Job job = wordCountJob(base, in, out, tags);
    job.submit();
    return job;
  }

  private static Job wordCountJob(Configuration base, Path in, Path out, String tags) throws Exception {
    Configuration conf = new Configuration(base);
    if (tags != null) {
      conf.set(MRJobConfig.JOB_TAGS, tags);
    }
    Job job = Job.getInstance(conf, "wordcount");
    job.setJarByClass(WordCount.class);
    job.setMapperClass(WordCount.TokenizerMapper.class);
    job.setCombinerClass(WordCount.IntSumReducer.class);
    job.setReducerClass(WordCount.IntSumReducer.class);
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(IntWritable.class);
    FileInputFormat.addInputPath(job, in);
    FileOutputFormat.setOutputPath(job, out);
    return job;
  }

  static Result teraGen(Configuration base, Path out) throws Exception {
    Configuration conf = new Configuration(base);
    conf.setInt(MRJobConfig.NUM_MAPS, MAPS);
    return tool("teragen", new TeraGen(), conf, Long.toString(TERASORT_TINY_ROWS), out.toString());
  }

  static Result teraSort(Configuration base, Path in, Path out) throws Exception {
    return tool("terasort", new TeraSort(), new Configuration(base), in.toString(), out.toString());
  }

  /** A SleepJob, submitted but not awaited. */
  static Job submitSleep(Configuration base, int maps, long mapMillis, int mapMemoryMb) throws Exception {
    Configuration conf = new Configuration(base);
    conf.setInt(MRJobConfig.MAP_MEMORY_MB, mapMemoryMb);
    SleepJob sleep = new SleepJob();
    sleep.setConf(conf);
    Job job = sleep.createJob(maps, 1, mapMillis, 1, 100, 1);
    job.submit();
    return job;
  }
}
