"""The HiBench runner's report format and job commands, and the docker tools' behaviour without an engine.

No cluster needed: the report lines are checked against HiBench's gen_report arithmetic and printf layout, the
commands against HiBench's prepare/run scripts. The runs themselves are in tests/cluster.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

import hibench  # noqa: E402
from docker_cluster import images  # noqa: E402

WHEN = dt.datetime(2026, 11, 23, 19, 52, 55)


def test_report_line_is_hibench_printf_and_arithmetic(tmp_path):
    line = hibench.report_line("wordcount", 36737, 127.0414, 4, WHEN)
    # printf "%-12s %-10s %-8s %-20s %-20s %-20s %-20s": a Type longer than 12 pushes the rest, as in HiBench
    assert line == ("HadoopWordcount 2026-11-23 19:52:55 " + f"{36737:<20} " + f"{'127.041':<20} "
                    + f"{289:<20} " + f"{72:<20}")
    # bc: duration with scale 3, throughput = size / duration truncated, per node = that / nodes truncated
    assert int(36737 / 127.041) == 289 and 289 // 4 == 72
    header = hibench.REPORT_FORMAT % hibench.REPORT_HEADER
    assert header.split() == ["Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)",
                              "Throughput/node"]
    report = tmp_path / "hibench.report"
    report.write_text(header + "\n" + line + "\n" + hibench.report_line("terasort", 3_200_000, 120.1414, 4, WHEN)
                      + "\n")
    rows = hibench.parse_report(report)
    assert [r["Type"] for r in rows] == ["HadoopWordcount", "HadoopTerasort"]
    assert rows[1]["Duration(s)"] == "120.141" and rows[1]["Throughput(bytes/s)"] == str(int(3_200_000 / 120.141))


def test_report_with_a_foreign_header_or_ragged_line_is_refused(tmp_path):
    bad = tmp_path / "r"
    bad.write_text("Type Date Time\n")
    with pytest.raises(ValueError, match="header"):
        hibench.parse_report(bad)
    bad.write_text((hibench.REPORT_FORMAT % hibench.REPORT_HEADER) + "\nHadoopSort 2026-11-23 1 2\n")
    with pytest.raises(ValueError, match="does not match"):
        hibench.parse_report(bad)


def test_commands_are_hibenchs():
    jar = "/x/examples.jar"
    # wordcount/sort prepare: randomtextwriter with totalbytes, bytespermap = size / 8 maps, 8 maps, 8 reduces
    prep = hibench.prepare_command("wordcount", 32_000, "/in", jar)
    assert prep[:4] == ["hadoop", "jar", jar, "randomtextwriter"]
    assert "mapreduce.randomtextwriter.totalbytes=32000" in prep and "mapreduce.randomtextwriter.bytespermap=4000" in prep
    assert "mapreduce.job.maps=8" in prep and "mapreduce.job.reduces=8" in prep and prep[-1] == "/in"
    # terasort prepare: teragen ROWS
    tg = hibench.prepare_command("terasort", 32_000, "/in", jar)
    assert tg[3] == "teragen" and tg[-2:] == ["32000", "/in"]
    wc = hibench.run_command("wordcount", "/in", "/out", jar)
    assert "mapreduce.job.inputformat.class=org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat" in wc
    assert "mapreduce.job.tags=yarnrl.input=/in" in wc and wc[-2:] == ["/in", "/out"]
    srt = hibench.run_command("sort", "/in", "/out", jar)
    assert srt[3] == "sort" and srt[srt.index("-r") + 1] == "8" and "-outKey" in srt
    ts = hibench.run_command("terasort", "/in", "/out", jar)
    assert ts[3] == "terasort" and "mapreduce.job.reduces=8" in ts
    # HiBench's profile sizes
    assert hibench.PROFILES["wordcount"]["small"] == 320_000_000 and hibench.PROFILES["terasort"]["tiny"] == 32_000


def test_unknown_policy_or_workload_is_refused_before_any_job():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hibench.py"), "--policies", "nope"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown policy 'nope'" in r.stderr
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hibench.py"), "--workloads", "kmeans"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "kmeans" in r.stderr


def test_no_docker_engine_is_one_line_saying_how_to_start_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(images.DockerUnavailable) as e:
        images.connect()
    msg = str(e.value)
    assert "\n" not in msg and "dockerd --iptables=false" in msg and "no-such.sock" in msg
    r = subprocess.run([sys.executable, "-m", "docker_cluster", "down"], capture_output=True,
                       text=True, timeout=60, env={**__import__("os").environ, "DOCKER_HOST": f"unix://{tmp_path}/x"})
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Start one" in r.stderr


def test_image_inputs_hash_changes_with_any_input(tmp_path):
    files = images.hadoop_inputs()
    names = {p.relative_to(ROOT).as_posix() for p in files}
    # recipe, configs, launcher, and the plugin's sources all decide whether yarnrl/hadoop is rebuilt
    assert {"docker/hadoop/Dockerfile", "docker/hadoop/pom.xml", "docker/hadoop/conf/yarn-site.xml.in",
            "docker/hadoop/bin/topology.sh", "yarn_plugin/pom.xml"} <= names
    assert any(n.startswith("yarn_plugin/src/main/java/") for n in names)
    assert images.content_hash(files, "a") != images.content_hash(files, "b")
    assert images.content_hash(files, "a") == images.content_hash(list(reversed(files)), "a")
    engine = {p.relative_to(ROOT).as_posix() for p in images.engine_inputs()}
    assert "policy_engine/server.py" in engine and "docker/engine/requirements.txt" in engine
