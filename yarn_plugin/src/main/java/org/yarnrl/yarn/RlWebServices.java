package org.yarnrl.yarn;

import javax.inject.Inject;
import javax.inject.Named;
import javax.inject.Singleton;
import javax.ws.rs.GET;
import javax.ws.rs.Path;
import javax.ws.rs.Produces;
import javax.ws.rs.core.MediaType;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.RMWSConsts;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.RMWebServices;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.dao.SchedulerTypeInfo;

/**
 * The RM's REST API with the yarn-rl schedulers in it ({@code yarn.webapp.custom.webservice.class}, Hadoop 3.5.0's
 * key for the RM's web service class): everything as RMWebServices, plus
 * <ul>
 *   <li>{@code /ws/v1/cluster/scheduler} for RlScheduler in FifoScheduler's form (RMWebServices answers 404
 *       "Unknown scheduler configured" for a scheduler that is not Capacity, Fair or Fifo);</li>
 *   <li>{@code /ws/v1/cluster/scheduler/yarnrl}: the engine's state (policy, breaker, fallbacks by reason, wait cap,
 *       calculator) for RlScheduler and RlCapacityScheduler.</li>
 * </ul>
 */
@Singleton
@Path(RMWSConsts.RM_WEB_SERVICE_PATH)
public class RlWebServices extends RMWebServices {
  private final ResourceManager rm;

  @Inject
  public RlWebServices(final @Named("rm") ResourceManager rm, @Named("conf") Configuration conf) {
    super(rm, conf);
    this.rm = rm;
  }

  @GET
  @Path(RMWSConsts.SCHEDULER)
  @Produces({MediaType.APPLICATION_JSON + "; " + org.apache.hadoop.http.JettyUtils.UTF_8,
      MediaType.APPLICATION_XML + "; " + org.apache.hadoop.http.JettyUtils.UTF_8})
  @Override
  public SchedulerTypeInfo getSchedulerInfo() {
    if (rm.getResourceScheduler() instanceof RlScheduler) {
      return new SchedulerTypeInfo(RlWebView.fifoInfo(rm, (RlScheduler) rm.getResourceScheduler()));
    }
    return super.getSchedulerInfo();
  }

  @GET
  @Path(RMWSConsts.SCHEDULER + "/yarnrl")
  @Produces(MediaType.APPLICATION_JSON + "; " + org.apache.hadoop.http.JettyUtils.UTF_8)
  public String getYarnRlState() {
    return "{\"yarnrl\":" + RlWebView.json(RlWebView.engineState(rm.getResourceScheduler())) + "}";
  }
}
