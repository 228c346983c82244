"""The locality emulator: HDFS placement and cache, the AM's asks, whole episodes, ACL, and CLQLMRS's trends."""

import numpy as np
import pytest

from emulator.drivers import InProcessDriver
from emulator.evaluate import run_policy
from emulator.scenario import get_scenario
from emulator.yarn.cluster import WorkloadConfig, YarnSimulation
from emulator.yarn.hdfs import GB, MB, Topology, make_input
from emulator.yarn.workloads import APPS, map_runtime_s
from policy_engine.features.locality import (ReadLocality, cache_local_count, candidate_features, candidate_state,
                                             read_locality, state_counts)
from policy_engine.policy import create
from policy_engine.types import (ANY, Ask, BlockInfo, ClusterSummary, JobMetadata, LocalityRequest, Node, Resource,
                                 ScheduleObservation)


def test_replicas_are_rack_aware_and_cache_respects_the_per_node_limit():
    topo = Topology.odd_even(6, 2)
    assert topo.hosts[0] == "dn1" and topo.racks[topo.rack_of[0]] == "/rack1"
    assert topo.racks[topo.rack_of[1]] == "/rack2"
    rng = np.random.default_rng(3)
    f = make_input(rng, topo, 200 * 128 * MB, 128 * MB, cache_bytes_per_node=GB)
    assert f.replicas.shape == (200, 3)
    for reps in f.replicas:
        assert len(set(reps.tolist())) == 3
        racks = topo.rack_of[reps]
        assert len(set(racks.tolist())) == 2          # both racks hold a replica
        assert racks[1] == racks[2] != racks[0]       # 2nd and 3rd share the remote rack
    cached = f.cached[f.cached >= 0]
    per_node = np.bincount(cached, minlength=6) * 128 * MB
    assert per_node.max() <= GB and cached.size == 6 * 8  # 1 GB per node holds 8 blocks of 128 MB, all filled
    assert all(f.cached[b] in f.replicas[b] for b in np.flatnonzero(f.cached >= 0))
    assert f.infos[0].racks == tuple(topo.racks[topo.rack_of[h]] for h in f.replicas[0])


def _node(host, rack):
    return Node(node_id=f"{host}:8041", host=host, rack=rack, total=Resource(4096, 8), unallocated=Resource(4096, 8))


def test_read_locality_states():
    b = BlockInfo("b", 1, hosts=("dn1", "dn2", "dn4"), cached_hosts=("dn2",), racks=("/rack1", "/rack2", "/rack2"))
    assert read_locality(b, _node("dn2", "/rack2")) == ReadLocality.CL
    assert read_locality(b, _node("dn1", "/rack1")) == ReadLocality.DL
    assert read_locality(b, _node("dn6", "/rack2")) == ReadLocality.CRL
    assert read_locality(b, _node("dn3", "/rack1")) == ReadLocality.DRL
    assert read_locality(b, _node("dn9", "/rack3")) == ReadLocality.NO


def test_simulator_state_table_matches_the_shared_classification():
    sim = YarnSimulation(WorkloadConfig(maps=30, cache_gb=2), seed=5)
    for n in range(6):
        node = _node(sim.hosts[n], sim.node_racks[n])
        assert [int(read_locality(b, node)) for b in sim.input.infos] == sim.state_table[n].tolist()


def test_map_ask_counts_follow_mapreduce():
    sim = YarnSimulation(WorkloadConfig(maps=25, jobs=1), seed=1)
    assert sim.advance()
    obs = sim.observe()
    (ask,) = obs.asks
    assert ask.priority == 20 and ask.num_containers == 25 and ask.locality_count(ANY) == 25
    for n, host in enumerate(sim.hosts):
        assert ask.locality_count(host) == int((sim.input.replicas == n).any(axis=1).sum())
    for r, rack in enumerate(sim.topology.racks):
        assert ask.locality_count(rack) == int((sim.topology.rack_of[sim.input.replicas] == r).any(axis=1).sum())
    assert len(ask.job.input_blocks) == 25
    for n in range(6):
        node = obs.node if n == sim.node else _node(sim.hosts[n], sim.node_racks[n])
        cached_here = int((sim.input.cached == n).sum())
        assert cache_local_count(ask, node) == state_counts(ask, node)[ReadLocality.CL] == cached_here
    state = candidate_state(ask, obs.node)
    assert state == ReadLocality(int(sim.state_table[sim.node].min()))
    feats = candidate_features(obs)
    assert feats.shape == (1, 14) and feats[0, int(state)] == 1.0 and 0 <= feats.min() and feats.max() <= 1


def test_whole_episode_accounts_for_every_task_and_event():
    scenario = get_scenario("locality-sort", maps=12, reduces=3, jobs=1)
    sim = scenario.simulation(seed=2)
    driver = InProcessDriver(create("fifo"))
    events = []
    while sim.advance():
        events += sim.take_events()
        sim.apply(driver.schedule(sim.observe()))
    events += sim.take_events()
    kinds = [e.kind for e in events]
    assert kinds.count("container_started") == 15 and kinds.count("container_finished") == 15
    assert kinds.count("job_finished") == 1
    m = sim.metrics()
    assert sim.map_states.sum() == 12
    assert m["cache_locality"] + m["data_locality"] + m["rack_locality"] + m["off_rack"] == pytest.approx(1.0)
    # The job cannot end before its slowest map plus a reduce; nor take longer than everything run serially.
    fastest = map_runtime_s(APPS["sort"], 128 * MB, 0) * 0.5
    assert fastest < m["job_time_s"] < 15 * 60
    assert m["job_time_s"] == m["makespan_s"]


def test_bad_parameters_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="block_mb"):
        get_scenario("locality-wordcount", block_mb=100)
    with pytest.raises(ValueError, match="unknown parameter.*'cache'; parameters: .*cache_gb"):
        get_scenario("locality-wordcount", cache=3)
    with pytest.raises(ValueError, match="HiBench size"):
        get_scenario("locality-terasort", size="huge")


def test_hibench_size_sets_the_map_count():
    sim = YarnSimulation(WorkloadConfig(app="wordcount", size="large", block_mb=256), seed=0)
    assert sim.input.num_blocks == -(-3_200_000_000 // (256 * MB))


def _ask(cached_hosts_per_block, hosts_per_block, missed):
    blocks = tuple(BlockInfo(f"b{i}", 128 * MB, hosts=h, cached_hosts=c,
                             racks=tuple("/rack1" if int(x[2]) % 2 else "/rack2" for x in h))
                   for i, (h, c) in enumerate(zip(hosts_per_block, cached_hosts_per_block)))
    counts = {}
    for b in blocks:
        for h in b.hosts:
            counts[h] = counts.get(h, 0) + 1
    loc = tuple(LocalityRequest(h, c) for h, c in counts.items()) + (LocalityRequest(ANY, len(blocks)),)
    a = Ask("a", application_id="app1", resource=Resource(1024, 1), num_containers=len(blocks), locality=loc,
            job=JobMetadata(input_blocks=blocks))
    a.scheduling_opportunities = missed
    return a


def _obs(ask, host="dn1", rack="/rack1"):
    return ScheduleObservation(node=_node(host, rack), asks=[ask], cluster=ClusterSummary(num_nodes=6, num_racks=2))


def test_acl_takes_cached_blocks_at_once_and_waits_c_times_fraction_for_them():
    acl = create("acl", c=3)
    hosts = [("dn1", "dn2", "dn4"), ("dn1", "dn3", "dn6"), ("dn3", "dn2", "dn4")]
    # Two of three blocks cached (fraction 2/3): C = ceil(3 * 2/3) = 2 skips.
    ask = _ask([("dn1",), ("dn3",), ()], hosts, missed=1)
    d = acl.schedule(_obs(ask))  # dn1 caches block 0: one cache-local container, nothing else while waiting
    assert [(a.count, a.locality.name) for a in d.assignments] == [(1, "CACHE_LOCAL")]
    ask = _ask([("dn3",), ("dn3",), ()], hosts, missed=2)
    assert acl.schedule(_obs(ask)).assignments == []      # dn1 caches nothing: skip (2 <= C)
    ask = _ask([("dn3",), ("dn3",), ()], hosts, missed=3)
    d = acl.schedule(_obs(ask))                           # C exhausted: disk-local like Delay
    assert sum(a.count for a in d.assignments if a.locality.name in ("CACHE_LOCAL", "NODE_LOCAL")) == 2
    # After the cache wait, Delay's rules apply to the opportunities missed since: same as Delay at missed - C.
    delay = create("delay")
    for missed in (3, 5, 8, 9, 12):
        ask = _ask([("dn3",), ("dn3",), ()], [("dn3", "dn2", "dn4")] * 3, missed=missed)
        later = _ask([("dn3",), ("dn3",), ()], [("dn3", "dn2", "dn4")] * 3, missed=missed - 2)
        assert acl.schedule(_obs(ask)) == delay.schedule(_obs(later))


def test_acl_without_cache_wait_is_delay_scheduling():
    acl, delay = create("acl", c=0), create("delay")
    for missed in (1, 6, 7, 20):
        ask = _ask([("dn3",), (), ()], [("dn3", "dn2", "dn4"), ("dn5", "dn2", "dn4"), ("dn1", "dn2", "dn4")], missed)
        assert acl.schedule(_obs(ask)) == delay.schedule(_obs(ask))
    with pytest.raises(ValueError):
        create("acl", c=-1)


def _mean(scenario, policy, metric, episodes=6):
    return float(np.mean([e[metric] for e in run_policy(scenario, policy, episodes, 0, progress=False)]))


def test_papers_ordering_fifo_delay_acl_on_local_task_rate():
    sc = get_scenario("locality-wordcount")
    rates = [_mean(sc, p, "local_task_rate", 10) for p in ("fifo", "delay", "acl")]
    assert rates[0] < rates[1] < rates[2], rates


def test_clqlmrs_trends_cache_size_and_map_count():
    caches = [_mean(get_scenario("locality-wordcount", maps=100, jobs=1, cache_gb=c), "acl", "cache_locality", 3)
              for c in (2, 4, 8)]
    assert caches[0] < caches[1] < caches[2], caches
    local = [_mean(get_scenario("locality-wordcount", maps=m), "fifo", "local_task_rate", 6) for m in (10, 20, 50)]
    assert local[0] < local[1] < local[2], local


def test_join_runs_two_stages_and_its_second_reads_an_uncached_file_written_by_the_reducers():
    sc = get_scenario("locality-join", maps=10, jobs=2, interarrival_s=2)
    sim = sc.simulation(seed=1)
    driver = InProcessDriver(create("fifo"))
    finished = 0
    while sim.advance():
        finished += sum(e.kind == "job_finished" for e in sim.take_events())
        sim.apply(driver.schedule(sim.observe()))
    finished += sum(e.kind == "job_finished" for e in sim.take_events())
    assert finished == 4 and len(sim.jobs) == 4
    second = [j for j in sim.jobs if j.stage == 1]
    first = {j.index: j for j in sim.jobs if j.stage == 0}
    for j in second:
        assert (j.data.input.cached < 0).all()                             # no cache directive on query output
        writers = set(first[j.index].reducer_nodes)
        assert set(j.data.input.replicas[:, 0].tolist()) <= writers        # first replica on a writing reducer
        assert j.submit_ms == first[j.index].finish_ms and j.root_submit_ms == first[j.index].submit_ms
    assert sim.map_states.sum() == sim.expected_maps
    with pytest.raises(ValueError, match="give maps"):
        get_scenario("locality-join", size="small")
