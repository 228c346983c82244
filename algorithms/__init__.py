"""One folder per paper: everything of an algorithm family lives in `algorithms/<family>/`.

    clqlmrs   CLQLMRS (Ghazali et al., 2022): SARSA Q-learning for cache and data locality
    deeprm    DeepRM (Mao et al., 2016): REINFORCE job ordering, with the paper's SJF and Packer baselines
    dsrap     DSRAP (Zhang, Lesser & Shenoy, 2008): decentralised resource sharing among clusters
    rl_fc     RL-FC: learned federated-cluster routing
    rl_lsfc   RL-LSFC: learned routing for large-scale federated clusters

Each family names its parts the same way (docs/algorithms/<family>.md says what each does):

    policy.py     the served policies (registered with policy_engine's registry; numpy only, imports
                  policy_engine and nothing of the emulator: the engine imports only this part)
    train.py      the offline learner (registered with `emulator train --algo ...`)
    scenarios.py  the emulator scenarios the paper's tables use
    env.py        the gymnasium / PettingZoo environment
    sim.py, ...   the family's own simulator and helpers

The registries import `algorithms.<family>.<part>` by these names (policy_engine.modules.import_parts). Parts
shared by several families stay in their layer: the YARN and multi-cluster simulators in `emulator/`, the heartbeat
baselines (FIFO, Delay, ACL) and the multi-cluster baselines (SF-E, MAF) in `policy_engine/policies/`.
"""
