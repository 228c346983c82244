"""RL-FC (Liu, Zhang, Rao & Wang, IEEE BigData 2018): routing hybrid time-critical jobs over several clusters with a
learned value network. policy.py (served), train.py (the learner, on the emulator's multi-cluster simulator in
emulator/multicluster/). docs/algorithms/rl-fc.md."""
