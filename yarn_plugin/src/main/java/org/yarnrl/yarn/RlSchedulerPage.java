package org.yarnrl.yarn;

import java.util.Map;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.RmView;
import org.apache.hadoop.yarn.webapp.SubView;
import org.apache.hadoop.yarn.webapp.hamlet2.Hamlet;
import org.apache.hadoop.yarn.webapp.view.HtmlBlock;

/**
 * The RM web UI's Scheduler page ({@code /cluster/scheduler}) for RlScheduler: Hadoop 3.5.0 renders the class named
 * by {@code yarn.http.rmwebapp.scheduler.page.class} for a scheduler that is not Capacity, Fair or Fifo (without it
 * the page answers HTTP 500). Shows the queue and its resources, the applications and the engine's state (policy,
 * breaker, fallbacks by reason, wait cap). RlCapacityScheduler is a CapacityScheduler and gets CapacityScheduler's
 * own page; its engine state is on {@code /ws/v1/cluster/scheduler/yarnrl} ({@link RlWebServices}) and JMX.
 *
 * <p>No Guice injection in these classes: the plugin jar relocates com.google.*, so an {@code @Inject} of ours
 * would not be Guice's. The page finds the running scheduler through {@link #register}.
 */
public class RlSchedulerPage extends RmView {
  private static volatile RlScheduler current;

  /** The RlScheduler of this RM (set when it starts). */
  static void register(RlScheduler scheduler) {
    current = scheduler;
  }

  static RlScheduler current() {
    return current;
  }

  @Override
  protected void preHead(Page.HTML<__> html) {
    commonPreHead(html);
    setTitle("RlScheduler (yarn-rl): FIFO with a policy engine");
  }

  @Override
  protected Class<? extends SubView> content() {
    return Content.class;
  }

  /** The page's body. */
  public static class Content extends HtmlBlock {
    public Content() {
      super();
    }

    @Override
    protected void render(Block html) {
      RlScheduler s = current;
      if (s == null) {
        html.p().__("RlScheduler is not running in this ResourceManager.").__();
        return;
      }
      String queue = s.getQueueInfo("", false, false).getQueueName();
      org.apache.hadoop.yarn.api.records.Resource total = s.getClusterResource();
      org.apache.hadoop.yarn.api.records.Resource used = s.getRootQueueMetrics().getAllocatedResources();
      Hamlet.TABLE<Hamlet> q = html.h3("Queue '" + queue + "' (FIFO)").table("#yarnrl-queue");
      row(q, "Queue State", String.valueOf(s.getQueueInfo(queue, false, false).getQueueState()));
      row(q, "Nodes", Integer.toString(s.getNumClusterNodes()));
      row(q, "Total Resource", total.toString());
      row(q, "Used Resource", used.toString());
      row(q, "Minimum / Maximum Allocation",
          s.getMinimumResourceCapability() + " / " + s.getMaximumResourceCapability());
      row(q, "Applications", Integer.toString(s.getSchedulerApplications().size()));
      q.__();
      Hamlet.TABLE<Hamlet> e = html.h3("yarn-rl engine").table("#yarnrl-engine");
      for (Map.Entry<String, Object> kv : RlWebView.engineState(s).entrySet()) {
        row(e, kv.getKey(), String.valueOf(kv.getValue()));
      }
      e.__();
      Hamlet.TABLE<Hamlet> a = html.h3("Applications").table("#yarnrl-apps");
      a.tr().th("Application").th("User").th("Queue").th("Containers").th("Allocated MB").th("Allocated vcores")
          .th("Pending containers").__();
      for (String[] app : RlWebView.applications(s)) {
        Hamlet.TR<Hamlet.TABLE<Hamlet>> tr = a.tr();
        for (String cell : app) {
          tr.td(cell);
        }
        tr.__();
      }
      a.__();
    }

    private static void row(Hamlet.TABLE<Hamlet> t, String key, String value) {
      t.tr().th(key).td(value).__();
    }
  }
}
