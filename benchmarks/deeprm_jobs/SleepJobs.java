import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Submits a stream of single-container YARN jobs for benchmarks/deeprm_real.py: each job is an application whose
 * one container (its AM container) runs {@code sleep SECONDS}, with the application tag
 * {@code yarnrl.expected-runtime-ms=MS}. One JVM submits the whole stream (a client JVM per job would load the
 * two-core machine more than the jobs do).
 *
 * <p>Reads lines {@code OFFSET_MS NAME MEMORY_MB VCORES RUNTIME_MS} from stdin, submits each at OFFSET_MS after the
 * warmed-up client's start (printed first: {@code start EPOCH_MS}), prints {@code submitted NAME APPLICATION_ID
 * EPOCH_MS} per job. The container never
 * registers as an ApplicationMaster: YARN marks the application FAILED when its container exits (exit code 0,
 * after the sleep), which the benchmark reads as the job's end. One attempt only.
 */
public final class SleepJobs {
  public static void main(String[] args) throws Exception {
    List<String[]> jobs = new ArrayList<>();
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null;) {
        line = line.trim();
        if (!line.isEmpty()) {
          jobs.add(line.split("\\s+"));
        }
      }
    }
    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(new YarnConfiguration());
    yarn.start();
    // warm up (class loading, the RM connection): the first submission of a cold JVM takes seconds on a loaded
    // machine, which would push the stream's first jobs together. The application id it takes is never submitted.
    yarn.createApplication();
    yarn.getYarnClusterMetrics();
    long t0 = System.currentTimeMillis();
    System.out.println("start " + t0);
    for (String[] j : jobs) {
      long at = t0 + Long.parseLong(j[0]);
      long wait = at - System.currentTimeMillis();
      if (wait > 0) {
        Thread.sleep(wait);
      }
      YarnClientApplication app = yarn.createApplication();
      ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
      ApplicationId id = ctx.getApplicationId();
      long runtimeMs = Long.parseLong(j[4]);
      ctx.setApplicationName(j[1]);
      ctx.setApplicationType("SLEEP");
      ctx.setQueue("default");
      ctx.setMaxAppAttempts(1);
      ctx.setPriority(Priority.newInstance(0));
      ctx.setResource(Resource.newInstance(Long.parseLong(j[2]), Integer.parseInt(j[3])));
      Set<String> tags = new HashSet<>();
      tags.add("yarnrl.expected-runtime-ms=" + runtimeMs);
      ctx.setApplicationTags(tags);
      String seconds = String.format(java.util.Locale.ROOT, "%.3f", runtimeMs / 1000.0);
      ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(Collections.emptyMap(), Collections.emptyMap(),
          Collections.singletonList("sleep " + seconds), null, null, null));
      yarn.submitApplication(ctx);
      System.out.println("submitted " + j[1] + " " + id + " " + System.currentTimeMillis());
      System.out.flush();
    }
    yarn.stop();
  }
}
