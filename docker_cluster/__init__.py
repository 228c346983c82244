"""Hadoop clusters in containers, built from this checkout: `python -m docker_cluster up|down|status|shape|exec`.

- `cluster`: the multi-host Hadoop 3.5.0 cluster (NameNode, ResourceManager with the yarn-rl scheduler, workers, the
  policy engine, a client), the command line, and what the cluster tests and benchmarks drive;
- `federation`: a YARN Federation of such clusters (ZooKeeper, a Router with the learned Router policy, sub-clusters);
- `images`: the images (yarnrl/base, yarnrl/hadoop, yarnrl/engine, yarnrl/router), rebuilt when their inputs change;
- `fault_proxy`, `invalid_engine`: the fault-injection parts, run inside a container from this checkout (standalone
  scripts: they import only the standard library, grpc and policy_engine).

The Dockerfiles and their contexts stay in `docker/`. (Not a package named `docker`: it would shadow the Docker SDK.)
"""
