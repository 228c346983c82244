package org.yarnrl.federation;

import java.lang.reflect.Method;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Starts the YARN Router after checking the learned policy's settings: Hadoop's Router builds its routing policy
 * only at the first client call and then merely logs a failure, so a setting that makes no sense would surface as
 * failed submissions. Launched instead of {@code org.apache.hadoop.yarn.server.router.Router}, it stops at once
 * with exit status 2 and the key's name; with good settings it runs {@code Router.main(args)} unchanged.
 */
public final class RouterLauncher {
  private RouterLauncher() {}

  public static void main(String[] args) throws Exception {
    YarnConfiguration conf = new YarnConfiguration();
    String manager = conf.getTrimmed(YarnConfiguration.FEDERATION_POLICY_MANAGER, "");
    if (manager.equals(RlPolicyManager.class.getName())) {
      try {
        System.err.println("yarn-rl Router policy settings: " + RouterSettings.of(conf));
      } catch (IllegalArgumentException e) {
        System.err.println("yarn-rl Router policy: refusing to start the Router: " + e.getMessage());
        System.exit(2);
      }
    }
    Class<?> router = Class.forName("org.apache.hadoop.yarn.server.router.Router");
    Method main = router.getMethod("main", String[].class);
    main.invoke(null, (Object) args);
  }
}
