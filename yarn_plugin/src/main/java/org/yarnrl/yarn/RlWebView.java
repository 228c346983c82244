package org.yarnrl.yarn;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.QueueInfo;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ResourceScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplication;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNodeReport;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.dao.FifoSchedulerInfo;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.dao.SchedulerInfo;

/**
 * What the RM's own views show of a yarn-rl scheduler (issue 23): the engine's state for both scheduler classes, and
 * for RlScheduler (not a FifoScheduler subclass, so the RM's FIFO page and REST answer do not know it) its queue
 * in FifoScheduler's own REST form. Read by {@link RlSchedulerPage} ({@code yarn.http.rmwebapp.scheduler.page.class})
 * and {@link RlWebServices} ({@code yarn.webapp.custom.webservice.class}).
 *
 * <p>Nothing here takes the scheduler's lock: counters and node reports are read as they are.
 */
final class RlWebView {
  private RlWebView() {}

  /** The engine's state as the plugin sees it: name to value, in display order. */
  static Map<String, Object> engineState(ResourceScheduler scheduler) {
    Map<String, Object> s = new LinkedHashMap<>();
    RlSchedulerMetrics m;
    WaitCap cap;
    EnginePath engine;
    if (scheduler instanceof RlScheduler) {
      m = ((RlScheduler) scheduler).getRlMetrics();
      cap = ((RlScheduler) scheduler).waitCap();
      engine = ((RlScheduler) scheduler).enginePath();
    } else if (scheduler instanceof RlCapacityScheduler) {
      m = ((RlCapacityScheduler) scheduler).getRlMetrics();
      cap = ((RlCapacityScheduler) scheduler).waitCap();
      engine = ((RlCapacityScheduler) scheduler).enginePath();
    } else {
      s.put("scheduler", scheduler == null ? "none" : scheduler.getClass().getName());
      s.put("error", "not a yarn-rl scheduler");
      return s;
    }
    s.put("scheduler", scheduler.getClass().getSimpleName());
    s.put("engineConfigured", engine != null);
    s.put("engineAddress", m.getEngineAddress());
    s.put("enginePolicy", m.getEnginePolicy());
    s.put("engineModelVersion", m.getEngineModelVersion());
    s.put("engineProtocolVersion", m.getEngineProtocolVersion());
    s.put("handshakeState", m.getHandshakeState());
    s.put("engineHealth", m.getEngineHealth());
    s.put("breakerState", m.getBreakerState());
    s.put("resourceCalculator", m.getResourceCalculator());
    s.put("waitCap", m.getWaitCap());
    if (cap != null) { // the heartbeat cap in force now (the derived one grows with the cluster)
      s.put("waitCapHeartbeats", cap.heartbeatCap(cap.schedulerLimit(), scheduler.getNumClusterNodes()));
    }
    s.put("asksWaiting", cap == null ? 0 : cap.waiting());
    s.put("longestWaitHeartbeats", cap == null ? 0 : cap.longestWait());
    s.put("engineDecisions", m.getEngineDecisions());
    s.put("engineContainers", m.getEngineContainers());
    s.put("nativeContainers", m.getNativeContainers());
    s.put("nativeHeartbeats", m.getNativeHeartbeats());
    s.put("asksInFlight", m.getAsksInFlight());
    Map<String, Object> fb = new LinkedHashMap<>();
    fb.put("timeout", m.getFallbacksTimeout());
    fb.put("unavailable", m.getFallbacksUnavailable());
    fb.put("error", m.getFallbacksError());
    fb.put("invalidAnswer", m.getFallbacksInvalidAnswer());
    fb.put("breakerOpen", m.getFallbacksBreakerOpen());
    fb.put("versionMismatch", m.getFallbacksVersionMismatch());
    fb.put("waitHeartbeats", m.getFallbacksWaitHeartbeats());
    fb.put("waitTime", m.getFallbacksWaitTime());
    s.put("fallbacks", fb);
    s.put("asksPastWaitCap", m.getAsksPastWaitCap());
    s.put("answerContainersDiscarded", m.getAnswerContainersDiscarded());
    s.put("lastCallError", m.getLastCallError());
    return s;
  }

  /** One line per running application of RlScheduler: id, user, queue, containers, allocated MB / vcores. */
  static List<String[]> applications(RlScheduler scheduler) {
    List<String[]> out = new ArrayList<>();
    for (Map.Entry<org.apache.hadoop.yarn.api.records.ApplicationId, SchedulerApplication<RlAppAttempt>> e
        : scheduler.getSchedulerApplications().entrySet()) {
      RlAppAttempt a = e.getValue().getCurrentAppAttempt();
      Resource used = a == null ? Resource.newInstance(0, 0) : a.getCurrentConsumption();
      out.add(new String[] {e.getKey().toString(), e.getValue().getUser(), e.getValue().getQueue().getQueueName(),
          a == null ? "0" : Integer.toString(a.getLiveContainers().size()), Long.toString(used.getMemorySize()),
          Integer.toString(used.getVirtualCores()),
          a == null ? "0" : Integer.toString(a.getSchedulerKeys().stream()
              .mapToInt(k -> a.getPendingAsk(k, org.apache.hadoop.yarn.api.records.ResourceRequest.ANY).getCount())
              .sum())});
    }
    return out;
  }

  /**
   * RlScheduler's queue in FifoScheduler's REST form (the RM's FifoSchedulerInfo, filled as its constructor fills
   * it for a FifoScheduler), so /ws/v1/cluster/scheduler answers as for FIFO.
   */
  static FifoSchedulerInfo fifoInfo(ResourceManager rm, RlScheduler fs) {
    FifoSchedulerInfo info = new FifoSchedulerInfo();
    SchedulerInfo base = new SchedulerInfo(rm); // name, min/max allocation, resource types, priority
    for (Field f : SchedulerInfo.class.getDeclaredFields()) {
      if (!java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
        set(info, f.getName(), get(base, f), SchedulerInfo.class);
      }
    }
    String qName = fs.getQueueInfo("", false, false).getQueueName();
    QueueInfo q = fs.getQueueInfo(qName, true, true);
    int used = 0;
    int avail = 0;
    int total = 0;
    int containers = 0;
    for (RMNode ni : rm.getRMContext().getRMNodes().values()) {
      SchedulerNodeReport report = fs.getNodeReport(ni.getNodeID());
      used += report == null ? 0 : report.getUsedResource().getMemorySize();
      avail += report == null ? 0 : report.getAvailableResource().getMemorySize();
      total += ni.getTotalCapability().getMemorySize();
      containers += fs.getNodeReport(ni.getNodeID()) == null ? 0 : report.getNumContainers();
    }
    set(info, "qName", qName, FifoSchedulerInfo.class);
    set(info, "usedCapacity", q.getCurrentCapacity(), FifoSchedulerInfo.class);
    set(info, "capacity", q.getCapacity(), FifoSchedulerInfo.class);
    set(info, "minQueueMemoryCapacity", fs.getMinimumResourceCapability().getMemorySize(), FifoSchedulerInfo.class);
    set(info, "maxQueueMemoryCapacity", fs.getMaximumResourceCapability().getMemorySize(), FifoSchedulerInfo.class);
    set(info, "qstate", q.getQueueState(), FifoSchedulerInfo.class);
    set(info, "numNodes", rm.getRMContext().getRMNodes().size(), FifoSchedulerInfo.class);
    set(info, "usedNodeCapacity", used, FifoSchedulerInfo.class);
    set(info, "availNodeCapacity", avail, FifoSchedulerInfo.class);
    set(info, "totalNodeCapacity", total, FifoSchedulerInfo.class);
    set(info, "numContainers", containers, FifoSchedulerInfo.class);
    return info;
  }

  private static Object get(Object o, Field f) {
    try {
      f.setAccessible(true);
      return f.get(o);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("SchedulerInfo." + f.getName(), e);
    }
  }

  private static void set(Object o, String field, Object value, Class<?> owner) {
    try {
      Field f = owner.getDeclaredField(field);
      f.setAccessible(true);
      f.set(o, value);
    } catch (ReflectiveOperationException e) {
      // a Hadoop version without this field: the REST answer lacks it, the page and the rest still work
    }
  }

  /** {@link #engineState} as one JSON object. */
  static String json(Map<String, Object> state) {
    StringBuilder b = new StringBuilder();
    write(b, state);
    return b.toString();
  }

  private static void write(StringBuilder b, Object v) {
    if (v instanceof Map) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (!first) {
          b.append(',');
        }
        first = false;
        write(b, String.valueOf(e.getKey()));
        b.append(':');
        write(b, e.getValue());
      }
      b.append('}');
    } else if (v instanceof Number || v instanceof Boolean) {
      b.append(v);
    } else {
      String s = String.valueOf(v);
      b.append('"');
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        if (c == '"' || c == '\\') {
          b.append('\\').append(c);
        } else if (c < 0x20) {
          b.append(String.format("\\u%04x", (int) c));
        } else {
          b.append(c);
        }
      }
      b.append('"');
    }
  }
}
