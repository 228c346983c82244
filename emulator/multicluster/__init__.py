"""The multi-cluster family (seeds 000 RL-FC and 002 RL-LSFC): workload, simulator and metrics."""
