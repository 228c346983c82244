"""The multi-cluster family (RL-FC and RL-LSFC): workload, simulator and metrics."""
