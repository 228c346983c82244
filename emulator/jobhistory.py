"""MapReduce job history (`.jhist`) files: a real job's phases, for `emulator calibrate`.

A MapReduce ApplicationMaster writes one history file per job (Avro events, one per line in the JSON encoding) and
moves it to `mapreduce.jobhistory.intermediate-done-dir` when the job ends, with or without a JobHistory server. Job
times alone cannot tell the ApplicationMaster's start-up from a slow shuffle (both lengthen a job); the events can:

    am_startup_s   JOB_INITED.launchTime - submit       AM container allocated, launched, JVM up, job set up
    first_map_s    first MAP_ATTEMPT_STARTED - launch   the first map container asked for, allocated and launched
    map_s          mean MAP_ATTEMPT_FINISHED.finishTime - its attempt's startTime (start-up, read, compute, spill)
    shuffle_tail_s mean reduce shuffleFinishTime - the last map's finish (what the shuffle adds after the maps)
    reduce_s       mean reduce finishTime - shuffleFinishTime (merge, reduce, output write)
    commit_s       job end - the last task's finish (output commit, AM shut-down, history)

`submit` and `job end` are the ResourceManager's application start and finish when given (the job times the
benchmarks report), else the history's own JOB_SUBMITTED and JOB_FINISHED times.

Only the JSON encoding is read (`mapreduce.jobhistory.jhist.format=json`, a per-job setting the benchmarks pass at
submission; Hadoop 3's default is binary): a binary file is refused with a message naming that setting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

JSON_HEADER = "Avro-Json"
BINARY_HEADER = "Avro-Binary"
JSON_FORMAT_OPTION = "mapreduce.jobhistory.jhist.format=json"


class JobHistoryError(ValueError):
    """A history file this module cannot read (binary encoding, not a history file, a broken event)."""


@dataclass
class Attempt:
    task: str
    kind: str            # MAP or REDUCE
    start_ms: int
    finish_ms: int | None = None
    shuffle_finish_ms: int | None = None
    sort_finish_ms: int | None = None
    host: str = ""
    locality: str | None = None
    status: str | None = None


@dataclass
class JobHistory:
    job_id: str = ""
    submit_ms: int | None = None
    launch_ms: int | None = None
    am_start_ms: int | None = None
    finish_ms: int | None = None
    status: str | None = None
    total_maps: int = 0
    total_reduces: int = 0
    attempts: dict[str, Attempt] = field(default_factory=dict)

    def successful(self, kind: str) -> list[Attempt]:
        return [a for a in self.attempts.values()
                if a.kind == kind and a.finish_ms is not None and (a.status or "SUCCEEDED") == "SUCCEEDED"]


def _record(event: dict) -> dict:
    """The event's record (the union branch's single value: {"org.apache...TaskAttemptStarted": {...}})."""
    if not isinstance(event, dict) or len(event) != 1:
        raise JobHistoryError("an event without exactly one record")
    (rec,) = event.values()
    if not isinstance(rec, dict):
        raise JobHistoryError("an event record that is not an object")
    return rec


def _opt(v):
    """An Avro optional value in the JSON encoding ({"string": "x"} or null)."""
    if isinstance(v, dict) and len(v) == 1:
        return next(iter(v.values()))
    return v


def parse_jhist(text: str) -> JobHistory:
    """One job's history from the text of its `.jhist` file (JSON encoding)."""
    lines = text.splitlines()
    if not lines:
        raise JobHistoryError("an empty history file")
    head = lines[0].strip()
    if head == BINARY_HEADER or text.startswith(BINARY_HEADER):
        raise JobHistoryError(f"a binary-encoded history file; submit the job with -D {JSON_FORMAT_OPTION}")
    if head != JSON_HEADER:
        raise JobHistoryError(f"not a MapReduce history file (first line {head[:40]!r}, expected {JSON_HEADER!r})")
    job = JobHistory()
    for no, line in enumerate(lines[2:], start=3):  # line 2 is the Avro schema
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
            kind, rec = ev["type"], _record(ev["event"])
            _apply(job, kind, rec)
        except JobHistoryError as e:
            raise JobHistoryError(f"line {no}: {e}") from None
        except (ValueError, KeyError, TypeError) as e:
            raise JobHistoryError(f"line {no}: a broken event ({type(e).__name__}: {e})") from None
    if job.submit_ms is None:
        raise JobHistoryError("no JOB_SUBMITTED event")
    return job


def _apply(job: JobHistory, kind: str, rec: dict) -> None:
    if kind == "JOB_SUBMITTED":
        job.job_id, job.submit_ms = rec["jobid"], int(rec["submitTime"])
    elif kind == "AM_STARTED":
        job.am_start_ms = int(rec["startTime"])
    elif kind == "JOB_INITED":
        job.launch_ms = int(rec["launchTime"])
        job.total_maps, job.total_reduces = int(rec["totalMaps"]), int(rec["totalReduces"])
    elif kind == "JOB_FINISHED":
        job.finish_ms, job.status = int(rec["finishTime"]), "SUCCEEDED"
    elif kind in ("JOB_FAILED", "JOB_KILLED", "JOB_ERROR"):
        job.finish_ms, job.status = int(rec["finishTime"]), str(rec.get("jobStatus", kind[4:]))
    elif kind in ("MAP_ATTEMPT_STARTED", "REDUCE_ATTEMPT_STARTED"):
        job.attempts[rec["attemptId"]] = Attempt(rec["taskid"], kind.split("_")[0], int(rec["startTime"]),
                                                 host=str(rec.get("trackerName", "")),
                                                 locality=_opt(rec.get("locality")))
    elif kind in ("MAP_ATTEMPT_FINISHED", "REDUCE_ATTEMPT_FINISHED"):
        a = job.attempts.get(rec["attemptId"])
        if a is None:
            raise JobHistoryError(f"{kind} for attempt {rec['attemptId']} that never started")
        a.finish_ms, a.status, a.host = int(rec["finishTime"]), str(rec.get("taskStatus", "SUCCEEDED")), \
            str(rec.get("hostname", a.host))
        if kind == "REDUCE_ATTEMPT_FINISHED":
            a.shuffle_finish_ms, a.sort_finish_ms = int(rec["shuffleFinishTime"]), int(rec["sortFinishTime"])
    elif kind.endswith(("_ATTEMPT_FAILED", "_ATTEMPT_KILLED")) and kind.split("_")[0] in ("MAP", "REDUCE"):
        a = job.attempts.get(rec["attemptId"])
        if a is not None:
            a.finish_ms, a.status = int(rec["finishTime"]), kind.rsplit("_", 1)[1]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def phases(job: JobHistory, submit_ms: int | None = None, end_ms: int | None = None) -> dict:
    """The job's phases in seconds (see the module's docstring); a phase the history cannot show is None.
    `submit_ms` / `end_ms`: the ResourceManager's application start and finish, when known."""
    submit = submit_ms if submit_ms is not None else job.submit_ms
    end = end_ms if end_ms is not None else job.finish_ms
    maps, reduces = job.successful("MAP"), job.successful("REDUCE")
    s = 1000.0
    last_map = max((a.finish_ms for a in maps), default=None)
    last_task = max((a.finish_ms for a in maps + reduces), default=None)
    first_map = min((a.start_ms for a in maps), default=None)
    out = {
        "am_startup_s": (job.launch_ms - submit) / s if job.launch_ms is not None else None,
        "first_map_s": (first_map - job.launch_ms) / s if first_map is not None and job.launch_ms else None,
        "map_s": _mean([(a.finish_ms - a.start_ms) / s for a in maps]),
        "shuffle_tail_s": _mean([max(0, a.shuffle_finish_ms - last_map) / s for a in reduces
                                 if a.shuffle_finish_ms is not None and last_map is not None]),
        "reduce_s": _mean([(a.finish_ms - a.shuffle_finish_ms) / s for a in reduces
                           if a.shuffle_finish_ms is not None]),
        "commit_s": (end - last_task) / s if end is not None and last_task is not None else None,
        "maps": len(maps), "reduces": len(reduces),
        "data_local_maps": sum(1 for a in maps if a.locality == "NODE_LOCAL"),
    }
    for k, v in out.items():
        if isinstance(v, float) and v < 0:
            raise JobHistoryError(f"{job.job_id}: negative {k} ({v:.3f} s): the history and the given "
                                  f"submit/end times are not of the same job or clock")
    return out


def mean_phases(per_job: list[dict]) -> dict:
    """Per phase, the mean over the jobs that have it (a run of several concurrent jobs)."""
    keys = {k for p in per_job for k in p}
    return {k: _mean([p[k] for p in per_job if p.get(k) is not None]) for k in sorted(keys)}
