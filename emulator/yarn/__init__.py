"""An emulated YARN cluster for node-level scheduling: racks, HDFS blocks and caches, MapReduce jobs.

`hdfs` places blocks and fills the centralized cache, `workloads` holds the HiBench application profiles and the
task run-time model, `cluster` runs NodeManager heartbeats and ApplicationMasters and asks a policy (through a
driver) on every heartbeat.
"""
