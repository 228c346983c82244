"""RL-LSFC (Liu, Wang & Quan, ICPP 2020): an LSTM value network for routing over heterogeneous, elastic clusters.
policy.py (served), train.py (the learner, on the emulator's multi-cluster simulator in emulator/multicluster/).
docs/algorithms/rl-lsfc.md."""
