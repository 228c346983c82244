"""gymnasium environments of the emulator, registered on import:

* `yarnrl/MultiCluster-v0`: seed 000 (RL-FC), scenario multicluster-uniform by default, RL-FC state rows;
* `yarnrl/HeteroElastic-v0`: seed 002 (RL-LSFC), scenario hetero-elastic-uniform by default, RL-LSFC state rows.

    import gymnasium as gym, emulator.envs
    env = gym.make("yarnrl/HeteroElastic-v0", scenario_params={"b": 36})
"""

from gymnasium.envs.registration import register, registry

from emulator.envs.multicluster import MultiClusterEnv

_ENTRY = "emulator.envs.multicluster:MultiClusterEnv"
for _id, _kwargs in (("yarnrl/MultiCluster-v0", {"scenario": "multicluster-uniform"}),
                     ("yarnrl/HeteroElastic-v0", {"scenario": "hetero-elastic-uniform"})):
    if _id not in registry:
        register(id=_id, entry_point=_ENTRY, kwargs=_kwargs)

__all__ = ["MultiClusterEnv"]
