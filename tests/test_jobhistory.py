"""emulator.jobhistory: a MapReduce job's phases from its history file (the input that lets `emulator calibrate`
tell ApplicationMaster start-up from shuffle time)."""

import json

import pytest

from emulator.jobhistory import (JobHistoryError, mean_phases, parse_jhist, phases)

NS = "org.apache.hadoop.mapreduce.jobhistory."


def _ev(kind: str, record: str, **fields) -> str:
    return json.dumps({"type": kind, "event": {NS + record: fields}})


def jhist(submit=1_000_000, launch=1_009_000, maps=((1_011_000, 1_021_000), (1_012_000, 1_026_000)),
          reduce=(1_015_000, 1_040_000, 1_041_000, 1_050_000), finish=1_052_000, header="Avro-Json") -> str:
    """A history file shaped as an ApplicationMaster writes it: header, schema line, one event per line with blank
    lines between (the times are ms; `reduce` = (start, shuffle finish, sort finish, finish))."""
    job = "job_1_0001"
    lines = [header, '{"type":"record","name":"Event"}',
             _ev("AM_STARTED", "AMStarted", applicationAttemptId="appattempt_1_0001_000001", startTime=submit + 2000,
                 containerId="c1", nodeManagerHost="worker1", nodeManagerPort=1, nodeManagerHttpPort=2),
             _ev("JOB_SUBMITTED", "JobSubmitted", jobid=job, jobName="wordcount", userName="root", submitTime=submit,
                 jobConfPath="x", acls={}, jobQueueName="default", workflowId={"string": ""}),
             _ev("JOB_INITED", "JobInited", jobid=job, launchTime=launch, totalMaps=len(maps), totalReduces=1,
                 jobStatus="INITED", uberized=False)]
    for i, (start, end) in enumerate(maps):
        att = f"attempt_1_0001_m_00000{i}_0"
        lines.append(_ev("MAP_ATTEMPT_STARTED", "TaskAttemptStarted", taskid=f"task_1_0001_m_00000{i}",
                         taskType="MAP", attemptId=att, startTime=start, trackerName=f"worker{i + 1}", httpPort=1,
                         shufflePort=2, containerId=f"c{i + 2}",
                         locality={"string": "NODE_LOCAL" if i == 0 else "RACK_LOCAL"}, avataar={"string": "VIRGIN"}))
        lines.append(_ev("MAP_ATTEMPT_FINISHED", "MapAttemptFinished", taskid=f"task_1_0001_m_00000{i}",
                         attemptId=att, taskType="MAP", taskStatus="SUCCEEDED", mapFinishTime=end - 100,
                         finishTime=end, hostname=f"worker{i + 1}", port=1, rackname="/rack1", state="map",
                         counters={}, clockSplits=[], cpuUsages=[], vMemKbytes=[], physMemKbytes=[]))
    if reduce:
        start, shuffled, sorted_, end = reduce
        att = "attempt_1_0001_r_000000_0"
        lines.append(_ev("REDUCE_ATTEMPT_STARTED", "TaskAttemptStarted", taskid="task_1_0001_r_000000",
                         taskType="REDUCE", attemptId=att, startTime=start, trackerName="worker3", httpPort=1,
                         shufflePort=2, containerId="c9", locality={"string": "OFF_SWITCH"}))
        lines.append(_ev("REDUCE_ATTEMPT_FINISHED", "ReduceAttemptFinished", taskid="task_1_0001_r_000000",
                         attemptId=att, taskType="REDUCE", taskStatus="SUCCEEDED", shuffleFinishTime=shuffled,
                         sortFinishTime=sorted_, finishTime=end, hostname="worker3", port=1, rackname="/rack2",
                         state="reduce", counters={}, clockSplits=[], cpuUsages=[], vMemKbytes=[], physMemKbytes=[]))
    lines.append(_ev("JOB_FINISHED", "JobFinished", jobid=job, finishTime=finish, finishedMaps=len(maps),
                     finishedReduces=1, failedMaps=0, failedReduces=0, totalCounters={}, mapCounters={},
                     reduceCounters={}))
    return "\n".join(lines[:2]) + "\n" + "\n\n".join(lines[2:]) + "\n"


def test_phases_of_a_job():
    p = phases(parse_jhist(jhist()))
    assert p["am_startup_s"] == pytest.approx(9.0)        # launch - submit
    assert p["first_map_s"] == pytest.approx(2.0)         # first map attempt start - launch
    assert p["map_s"] == pytest.approx((10.0 + 14.0) / 2)
    assert p["shuffle_tail_s"] == pytest.approx(14.0)     # shuffle finish 1_040_000 - last map 1_026_000
    assert p["reduce_s"] == pytest.approx(10.0)           # finish - shuffle finish
    assert p["commit_s"] == pytest.approx(2.0)            # job finish - last task (the reduce)
    assert (p["maps"], p["reduces"], p["data_local_maps"]) == (2, 1, 1)


def test_resourcemanager_times_replace_the_historys_own():
    job = parse_jhist(jhist())
    p = phases(job, submit_ms=999_000, end_ms=1_053_500)
    assert p["am_startup_s"] == pytest.approx(10.0)
    assert p["commit_s"] == pytest.approx(3.5)
    with pytest.raises(JobHistoryError, match="negative commit_s"):
        phases(job, end_ms=1_049_000)  # an end before the last task: another job's times


def test_map_only_job_has_no_shuffle():
    p = phases(parse_jhist(jhist(reduce=None, finish=1_030_000)))
    assert p["shuffle_tail_s"] is None and p["reduce_s"] is None
    assert p["commit_s"] == pytest.approx(4.0)


def test_mean_over_jobs_skips_missing_phases():
    a = phases(parse_jhist(jhist()))
    b = phases(parse_jhist(jhist(reduce=None, finish=1_030_000)))
    m = mean_phases([a, b])
    assert m["shuffle_tail_s"] == pytest.approx(14.0)
    assert m["commit_s"] == pytest.approx(3.0)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("Avro-Binary\n\x00\x01binary", "jhist.format=json"),
    ("<?xml version='1.0'?>\n<configuration/>", "not a MapReduce history file"),
    ("Avro-Json\n{}\n{\"type\": \"JOB_SUBMITTED\", \"event\": {}}\n", "line 3: an event without exactly one record"),
    ("Avro-Json\n{}\n{not json\n", "line 3: a broken event"),
    ("Avro-Json\n{}\n", "no JOB_SUBMITTED"),
])
def test_bad_files_are_refused_with_a_reason(text, message):
    with pytest.raises(JobHistoryError, match=message):
        parse_jhist(text)


def test_an_attempt_that_finishes_without_starting_is_refused():
    text = jhist().replace('"MAP_ATTEMPT_STARTED"', '"TASK_UPDATED"', 1)
    with pytest.raises(JobHistoryError, match="never started"):
        parse_jhist(text)


class _ClientContainer:
    """The cluster's client container as DockerLab.add_phases sees it: `hdfs dfs -cat` of the globs given prints
    the history files that exist (the second job's appears only on the second call, as a file the AM moves late)."""

    def __init__(self, files: dict[str, str]):
        self.files, self.calls = files, []

    def exec(self, cmd, timeout=600.0, check=True):
        self.calls.append(cmd)
        out = "".join(text for job, text in self.files.items() if job in cmd and (job != "job_1_0002"
                                                                                 or len(self.calls) > 1))
        return 0, out


def test_docker_lab_adds_each_jobs_phases_and_the_run_their_mean():
    import real_locality as rl

    second = jhist(submit=2_000_000, launch=2_005_000, maps=((2_007_000, 2_010_000),), reduce=None,
                   finish=2_012_000).replace("job_1_0001", "job_1_0002")
    lab = rl.DockerLab.__new__(rl.DockerLab)
    lab.cluster = _ClientContainer({"job_1_0001": jhist(), "job_1_0002": second})
    results = [{"succeeded": True, "application_id": "application_1_0001", "submit_ms": 1_000_000,
                "finish_ms": 1_052_000, "seconds": 52.0},
               {"succeeded": True, "application_id": "application_1_0002", "submit_ms": 2_000_000,
                "finish_ms": 2_012_500, "seconds": 12.5},
               {"succeeded": False, "application_id": "application_1_0003", "submit_ms": 0, "finish_ms": 1,
                "seconds": 0.0}]
    lab.add_phases(results, timeout_s=30)
    assert len(lab.cluster.calls) == 2 and "2>/dev/null" in lab.cluster.calls[0]
    assert results[0]["phases"]["am_startup_s"] == pytest.approx(9.0)
    assert results[1]["phases"]["commit_s"] == pytest.approx(2.5)  # the RM's finish, not the history's
    assert "phases" not in results[2]                               # a failed job has no phases to read
    run = rl.summarize_run(results[:2])
    assert run["phases"]["am_startup_s"] == pytest.approx(7.0)
    assert run["phases"]["shuffle_tail_s"] == pytest.approx(14.0)   # only the job with a reducer


def test_docker_lab_reports_a_missing_history_without_failing_the_run():
    import real_locality as rl

    lab = rl.DockerLab.__new__(rl.DockerLab)
    lab.cluster = _ClientContainer({})
    results = [{"succeeded": True, "application_id": "application_1_0001", "submit_ms": 0, "finish_ms": 5000,
                "seconds": 5.0}]
    lab.add_phases(results, timeout_s=0)
    assert "no history file" in results[0]["phases_error"]
    run = rl.summarize_run(results)
    assert "phases" not in run and run["phases_errors"] == [results[0]["phases_error"]]


def test_a_history_file_from_the_container_cluster():
    """A real file: WordCount over 3 small files on the 2-worker container cluster (Hadoop 3.5.0, submitted with
    -D mapreduce.jobhistory.jhist.format=json; tests/data/jobhistory/)."""
    import gzip
    from pathlib import Path

    path = Path(__file__).parent / "data" / "jobhistory" / "wordcount-3maps-container-cluster.jhist.gz"
    job = parse_jhist(gzip.decompress(path.read_bytes()).decode())
    assert (job.job_id, job.status, job.total_maps, job.total_reduces) == ("job_1795783544643_0001", "SUCCEEDED", 3, 1)
    p = phases(job)
    assert (p["maps"], p["reduces"], p["data_local_maps"]) == (3, 1, 3)
    for k in ("am_startup_s", "first_map_s", "map_s", "shuffle_tail_s", "reduce_s", "commit_s"):
        assert 0 <= p[k] < 60, (k, p[k])
    # the phases on the job's critical path add up to no more than the job itself
    assert p["am_startup_s"] + p["first_map_s"] + p["map_s"] <= (job.finish_ms - job.submit_ms) / 1000
