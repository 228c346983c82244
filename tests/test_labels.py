"""policy_engine.labels: a map container's read level replayed from the job's blocks as MapReduce's AM assigns maps."""

from __future__ import annotations

from heartbeats import node, observe

from policy_engine.engine import Engine
from policy_engine.labels import LocalityLabeler, task_order
from policy_engine.policy import create
from policy_engine.types import (
    Ask,
    BlockInfo,
    ContainerFinished,
    ContainerStarted,
    JobMetadata,
    Locality,
    LocalityRequest,
    NodeAdded,
    Resource,
)

# four hosts in two racks, replication 2 (one replica per rack), b0 and b2 cached
BLOCKS = (
    BlockInfo("/in/part-0@0", 900, ("n1", "n3"), ("n1",), ("/r1", "/r2")),
    BlockInfo("/in/part-1@0", 1000, ("n2", "n3"), (), ("/r1", "/r2")),
    BlockInfo("/in/part-2@0", 800, ("n2", "n4"), ("n4",), ("/r1", "/r2")),
    BlockInfo("/in/part-3@0", 700, ("n2", "n4"), (), ("/r1", "/r2")),
)
RACK = {"n1": "/r1", "n2": "/r1", "n3": "/r2", "n4": "/r2", "n5": "/r3"}


def maps_ask(pending: int = 4) -> Ask:
    hosts = {}
    for b in BLOCKS:
        for h in b.hosts:
            hosts[h] = hosts.get(h, 0) + 1
    loc = tuple(LocalityRequest(h, n) for h, n in hosts.items()) + (LocalityRequest("/r1", 4), LocalityRequest("/r2", 4))
    return Ask("app1_01/20/0", application_id="app1", priority=20, resource=Resource(1024, 1),
               num_containers=pending, locality=loc, job=JobMetadata(input_blocks=BLOCKS, input_paths=("/in",)))


def started(cid: str, host: str, ask_id: str = "app1_01/20/0", locality: int = Locality.NODE_LOCAL):
    return ContainerStarted(container_id=cid, application_id="app1", node_id=f"{host}:8041", ask_id=ask_id,
                            locality=Locality(locality))


def labelled(labeler: LocalityLabeler, ev):
    labeler.label(ev)
    return Locality(ev.locality), ev.rack_cached, ev.input_block_id


def seeded_labeler() -> LocalityLabeler:
    labeler = LocalityLabeler()
    for h, r in RACK.items():
        labeler.label(NodeAdded(node_id=f"{h}:8041", host=h, rack=r))
    labeler.annotate(observe(node("n1"), [maps_ask()]))
    return labeler


def test_task_order_is_longest_split_first_ties_in_input_order():
    assert [b.block_id for b in task_order(BLOCKS)] == ["/in/part-1@0", "/in/part-0@0", "/in/part-2@0",
                                                        "/in/part-3@0"]
    tie = (BlockInfo("x", 5), BlockInfo("y", 5), BlockInfo("z", 6))
    assert [b.block_id for b in task_order(tie)] == ["z", "x", "y"]


def test_labels_follow_the_application_masters_choice_on_each_host():
    labeler = seeded_labeler()
    # n3 holds disk replicas of part-1 (task 0) and part-0 (task 1): the AM runs task 0 there, read from disk
    assert labelled(labeler, started("c1", "n3")) == (Locality.NODE_LOCAL, None, "/in/part-1@0")
    # n1 caches part-0, now the first pending map with a replica on n1
    assert labelled(labeler, started("c2", "n1")) == (Locality.CACHE_LOCAL, None, "/in/part-0@0")
    # n1 has nothing local left; part-2 has a disk replica in /r1 (n2) and its cached one in /r2: DRL
    assert labelled(labeler, started("c3", "n1", locality=Locality.RACK_LOCAL)) == (Locality.RACK_LOCAL, False,
                                                                                    "/in/part-2@0")
    # a node in a third rack: nothing of part-3 there, off-switch
    assert labelled(labeler, started("c4", "n5", locality=Locality.OFF_SWITCH)) == (Locality.OFF_SWITCH, None,
                                                                                    "/in/part-3@0")
    assert labeler.labelled == {"cl": 1, "dl": 1, "crl": 0, "drl": 1, "no": 1}
    # ContainerFinished carries the started label; a repeated ContainerStarted does not consume a second block
    fin = ContainerFinished(container_id="c2", application_id="app1", locality=Locality.NODE_LOCAL)
    assert labelled(labeler, fin) == (Locality.CACHE_LOCAL, None, "/in/part-0@0")


def test_rack_local_with_a_cached_replica_in_the_rack_is_crl():
    labeler = seeded_labeler()
    for cid in ("e1", "e2"):  # part-1 and part-0, both with a disk replica on n3
        labelled(labeler, started(cid, "n3"))
    # n3 (/r2) again: nothing local is left; part-2 has a replica in /r2 (n4), cached there: CRL
    assert labelled(labeler, started("e3", "n3", locality=Locality.RACK_LOCAL)) == (Locality.RACK_LOCAL, True,
                                                                                     "/in/part-2@0")
    # a host the labeler has never seen (no rack known): the first pending map, read off-switch
    assert labelled(labeler, started("e4", "n9")) == (Locality.OFF_SWITCH, None, "/in/part-3@0")


def test_non_map_containers_keep_the_plugins_label_and_asks_see_only_pending_blocks():
    labeler = seeded_labeler()
    am = started("am", "n2", ask_id="app1_01/0/0", locality=Locality.OFF_SWITCH)
    assert labelled(labeler, am) == (Locality.OFF_SWITCH, None, "")
    labelled(labeler, started("c1", "n1"))  # part-0 (cached on n1)
    ask = maps_ask(pending=3)
    labeler.annotate(observe(node("n1"), [ask]))
    assert [b.block_id for b in ask.job.input_blocks] == ["/in/part-1@0", "/in/part-2@0", "/in/part-3@0"]
    # a map attempt failed and is asked for again: the ledger gives a block back rather than show too few
    ask = maps_ask(pending=4)
    labeler.annotate(observe(node("n1"), [ask]))
    assert len(ask.job.input_blocks) == 4


def test_rack_cached_and_the_block_id_survive_the_protocol():
    from policy_engine.codec import decode_event, encode_event

    ev = ContainerStarted(container_id="c", application_id="a", locality=Locality.RACK_LOCAL, rack_cached=False,
                          input_block_id="/in/part-2@0")
    msg = encode_event(ev)
    assert msg.container_started.HasField("rack_cached") and not msg.container_started.rack_cached
    assert decode_event(msg) == ev
    unknown = encode_event(ContainerStarted(container_id="c", locality=Locality.NODE_LOCAL))
    assert not unknown.container_started.HasField("rack_cached")
    assert decode_event(unknown).rack_cached is None


def test_engine_relabels_events_before_learners_see_them():
    labeler = seeded_labeler()
    engine = Engine(create("fifo"))
    engine.annotators.append(labeler.annotate)
    engine.event_annotators.append(labeler.label)
    seen = []
    engine.listeners.append(lambda ev: seen.append(ev.locality))
    engine.report([started("c1", "n1")])
    assert seen == [Locality.CACHE_LOCAL]  # n1: part-1 (task 0) has no replica there; part-0 is cached on n1
    assert labeler.labelled["cl"] == 1


def _unlabelled_labeler(blocks_known: bool) -> tuple[LocalityLabeler, list]:
    """A labeler whose blocks come from a locator-like cache that answers only once `blocks_known[0]`."""
    known = [blocks_known]
    calls = []

    def blocks_of(paths):
        calls.append(paths)
        return BLOCKS if known[0] and paths == ("/in",) else None

    labeler = LocalityLabeler(blocks_of=blocks_of)
    for h, r in RACK.items():
        labeler.label(NodeAdded(node_id=f"{h}:8041", host=h, rack=r))
    labeler._known = known  # the test flips it when "WebHDFS answers"
    return labeler, calls


def test_native_map_containers_are_labelled_when_the_maps_ask_went_by_before_its_blocks():
    # the map ask is observed while WebHDFS has not answered yet (no blocks), and FIFO places every map at once;
    # the blocks arrive before the containers' ContainerStarted: the ledger is built then, from the locator
    labeler, calls = _unlabelled_labeler(False)
    ask = maps_ask()
    ask.job = JobMetadata(input_paths=("/in",))
    labeler.annotate(observe(node("n1"), [ask]))
    labeler._known[0] = True
    assert labelled(labeler, started("c1", "n3")) == (Locality.NODE_LOCAL, None, "/in/part-1@0")
    assert labelled(labeler, started("c2", "n1")) == (Locality.CACHE_LOCAL, None, "/in/part-0@0")
    assert calls == [("/in",)]  # built once, then the ledger is used
    assert labeler.labelled == {"cl": 1, "dl": 1, "crl": 0, "drl": 0, "no": 0}


def test_native_map_containers_of_asks_never_observed_are_labelled_by_priority():
    # the engine saw only the ApplicationMaster's ask (it names the input too); the map asks were placed
    # natively (deadline misses) and never observed: map containers are told apart by MapReduce's map priority
    labeler, _ = _unlabelled_labeler(True)
    am_ask = Ask("app1_01/0/0", application_id="app1", priority=0, resource=Resource(1024, 1), num_containers=1,
                 job=JobMetadata(input_paths=("/in",)))
    labeler.annotate(observe(node("n2"), [am_ask]))
    assert labelled(labeler, started("am", "n2", ask_id="app1_01/0/0", locality=Locality.OFF_SWITCH)) == (
        Locality.OFF_SWITCH, None, "")
    assert labelled(labeler, started("c1", "n1", ask_id="app1_01/20/0")) == (Locality.CACHE_LOCAL, None,
                                                                            "/in/part-0@0")
    # a reduce (priority 10, never observed either) keeps the plugin's label and consumes no block
    assert labelled(labeler, started("r1", "n4", ask_id="app1_01/10/0", locality=Locality.OFF_SWITCH)) == (
        Locality.OFF_SWITCH, None, "")
    assert labelled(labeler, started("c2", "n4", ask_id="app1_01/20/0")) == (Locality.CACHE_LOCAL, None,
                                                                            "/in/part-2@0")
    assert labeler.labelled == {"cl": 2, "dl": 0, "crl": 0, "drl": 0, "no": 0}


def test_no_label_without_blocks_and_an_application_the_engine_never_saw():
    labeler, _ = _unlabelled_labeler(False)
    assert labelled(labeler, started("c1", "n1")) == (Locality.NODE_LOCAL, None, "")
    labeler.annotate(observe(node("n1"), [Ask("app1_01/20/0", application_id="app1", num_containers=4,
                                              locality=maps_ask().locality, job=JobMetadata(input_paths=("/in",)))]))
    assert labelled(labeler, started("c2", "n1")) == (Locality.NODE_LOCAL, None, "")  # blocks still unknown
    assert sum(labeler.labelled.values()) == 0


def _window_labeler() -> LocalityLabeler:
    labeler = seeded_labeler()
    labeler.label(NodeAdded(node_id="n6:8041", host="n6", rack="/r1"))  # a host with no replica, in /r1
    return labeler


def _at(ev, ms: int):
    ev.timestamp_ms = ms
    return ev


def test_containers_of_one_allocate_window_get_the_application_masters_three_passes():
    # A (n6, /r1: nothing on the host) then B (n3) in one AM heartbeat: the AM gives B its host-local part-1
    # first, then A a rack-local map (part-0, cached on n1 in /r1: CRL). One at a time A would have taken part-1.
    labeler = _window_labeler()
    assert labelled(labeler, _at(started("a", "n6", locality=Locality.RACK_LOCAL), 10_000)) == (
        Locality.RACK_LOCAL, False, "/in/part-1@0")  # alone so far
    assert labelled(labeler, _at(started("b", "n3"), 10_400)) == (Locality.NODE_LOCAL, None, "/in/part-1@0")
    # A's label is corrected: what its ContainerFinished carries, and the counts
    fin = ContainerFinished(container_id="a", application_id="app1", locality=Locality.RACK_LOCAL)
    assert labelled(labeler, fin) == (Locality.RACK_LOCAL, True, "/in/part-0@0")
    assert labeler.labelled == {"cl": 0, "dl": 1, "crl": 1, "drl": 0, "no": 0}
    # the next window starts from what this one consumed: n3 has nothing local left (part-1 and part-0 are gone)
    assert labelled(labeler, _at(started("c", "n3", locality=Locality.RACK_LOCAL), 12_000)) == (
        Locality.RACK_LOCAL, True, "/in/part-2@0")


def test_containers_of_different_allocate_windows_are_labelled_one_at_a_time():
    labeler = _window_labeler()
    assert labelled(labeler, _at(started("a", "n6", locality=Locality.RACK_LOCAL), 10_000)) == (
        Locality.RACK_LOCAL, False, "/in/part-1@0")
    assert labelled(labeler, _at(started("b", "n3"), 11_500)) == (Locality.NODE_LOCAL, None, "/in/part-0@0")
    assert labeler.labelled == {"cl": 0, "dl": 1, "crl": 0, "drl": 1, "no": 0}


def test_label_counts_are_exported_and_corrected(tmp_path):
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    labeler = LocalityLabeler(registry=registry)
    for h, r in {**RACK, "n6": "/r1"}.items():
        labeler.label(NodeAdded(node_id=f"{h}:8041", host=h, rack=r))
    labeler.annotate(observe(node("n1"), [maps_ask()]))
    labeler.label(_at(started("a", "n6"), 10_000))
    labeler.label(_at(started("b", "n3"), 10_400))
    text = generate_latest(registry).decode()
    assert 'yarnrl_map_containers_read_total{state="crl"} 1.0' in text
    assert 'yarnrl_map_containers_read_total{state="drl"} 0.0' in text
    assert 'yarnrl_map_containers_read_total{state="dl"} 1.0' in text


def test_a_container_released_unused_gives_its_block_back():
    labeler = _window_labeler()
    assert labelled(labeler, _at(started("a", "n3"), 10_000)) == (Locality.NODE_LOCAL, None, "/in/part-1@0")
    # the AM did not need it: released before it ran a task (ContainerExitStatus.ABORTED)
    fin = ContainerFinished(container_id="a", application_id="app1", locality=Locality.NODE_LOCAL, exit_status=-100)
    assert labelled(labeler, fin) == (Locality.NODE_LOCAL, None, "")
    assert labeler.labelled == {"cl": 0, "dl": 0, "crl": 0, "drl": 0, "no": 0}
    # part-1 is pending again: the next container on n3, in a later window, runs it
    assert labelled(labeler, _at(started("b", "n3"), 20_000)) == (Locality.NODE_LOCAL, None, "/in/part-1@0")
    # a map that ran keeps its label when it finishes
    fin = ContainerFinished(container_id="b", application_id="app1", locality=Locality.NODE_LOCAL, exit_status=0)
    assert labelled(labeler, fin) == (Locality.NODE_LOCAL, None, "/in/part-1@0")
    assert labeler.labelled["dl"] == 1
