"""The live console (`policy-engine serve --ui-port`) in a real browser: headless Chromium from Debian's packages
(`chromium`, `chromium-driver`; .ci/run installs them) driven by selenium. A real engine, real emulator runs over
gRPC (one active, one in shadow mode), and the page's numbers checked against the engine's /metrics."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from policy_engine.cli import start_engine_subprocess
from policy_engine.metrics_scrape import Metrics
from policy_engine.waiting import wait_until

MODEL = Path(__file__).resolve().parents[1] / "models" / "clqlmrs-mini.safetensors"

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
LOCS = ("cache_local", "node_local", "rack_local", "off_switch")

if not (CHROMIUM and CHROMEDRIVER):
    if os.environ.get("CI") == "true":  # .ci/run installs them: missing there is a failure, not a skip
        raise RuntimeError("CI=true but chromium / chromedriver are not installed (.ci/run installs them)")
    pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; "
                ".ci/run does it)", allow_module_level=True)

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _metrics(port: int) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for s in Metrics.scrape(f"http://127.0.0.1:{port}/metrics", timeout=5).samples}


def _total(metrics, name: str, **labels) -> float:
    return sum(v for (n, ls), v in metrics.items() if n == name and all(dict(ls).get(k) == x
                                                                         for k, x in labels.items()))


def _emulator(target: str, *extra: str) -> None:
    r = subprocess.run([sys.executable, "-m", "emulator.cli", "run", "--scenario", "locality-wordcount",
                        "--policy", "clqlmrs", "--remote", target, "--episodes", "1", "--no-progress", "--json",
                        *extra], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def _wait(predicate, timeout: float = 15.0, what: str = "") -> None:
    wait_until(predicate, timeout, what, interval_s=0.2)


@pytest.fixture
def console(tmp_path):
    metrics_port = _free_port()
    # CLQLMRS with a model: the page shows its version and checksum, and its online learner
    proc, target = start_engine_subprocess("clqlmrs", ["--model", str(MODEL), "--metrics-port", str(metrics_port),
                                                       "--ui-port", "0"])
    url = None
    for line in proc.stdout:
        if "console=" in line:
            url = line.split("console=", 1)[1].split()[0]
            break
    assert url and url.startswith("http://127.0.0.1:"), "serve --ui-port printed no console URL"
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1250", "--proxy-server=direct://", "--proxy-bypass-list=*"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        yield driver, url, target, metrics_port, proc
    finally:
        driver.quit()
        proc.terminate()
        proc.wait(timeout=30)


def _text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def _bar(driver, element_id: str) -> dict[str, float]:
    el = driver.find_element(By.ID, element_id)
    return {loc: float(el.get_attribute("data-" + loc.replace("_", "")) or 0) for loc in LOCS}


def test_console_shows_what_metrics_show_and_updates_and_shadow_mixes(console, tmp_path):
    driver, url, target, metrics_port, proc = console
    from policy_engine.artifact import load_artifact

    meta = load_artifact(str(MODEL), policy="clqlmrs")[1]
    driver.get(url)
    _wait(lambda: _text(driver, "status") == "live", what="the page to poll /api/state")
    assert _text(driver, "policy") == "clqlmrs"
    assert _text(driver, "model-checksum") == meta["checksum"]
    assert meta["checksum"][:12] in _text(driver, "model-version")
    assert _text(driver, "decisions-total") == "0"
    assert not driver.find_element(By.ID, "shadow").is_displayed()  # no shadow traffic yet
    first_update = driver.find_element(By.TAG_NAME, "body").get_attribute("data-updated")

    # active mode: the engine's own placements
    _emulator(target)
    m = _metrics(metrics_port)
    decisions = _total(m, "yarnrl_decisions_total")
    assert decisions > 0
    # the page updates by itself (no reload) until it shows what /metrics shows
    _wait(lambda: _text(driver, "decisions-total") == f"{decisions:.0f}", what=f"{decisions:.0f} decisions on the page")
    assert driver.find_element(By.TAG_NAME, "body").get_attribute("data-updated") != first_update
    engine_mix = _bar(driver, "mix-engine")
    assert engine_mix == {loc: _total(m, "yarnrl_assigned_containers_total", locality=loc) for loc in LOCS}
    assert sum(engine_mix.values()) > 0
    learner = _text(driver, "learner")
    assert learner.startswith("queue ") and int(learner.split("updates ")[1].split(",")[0]) > 0
    assert "not watched" in _text(driver, "rm-status")
    # latency: a number in ms, and the rate chart has drawn a line
    assert float(_text(driver, "latency-p99")) >= float(_text(driver, "latency-p50")) > 0
    _wait(lambda: driver.find_elements(By.CSS_SELECTOR, "#chart-rate path"), what="the decisions/s line")

    # a reload (the same file: "unchanged") lands in the page's reload history
    proc.send_signal(signal.SIGHUP)
    _wait(lambda: "SIGHUP" in _text(driver, "reloads") and "unchanged" in _text(driver, "reloads"),
          what="the reload in the history")

    # shadow mode: the engine asked, YARN's stand-in (fifo) placing, placements reported with the decision id
    _emulator(target, "--shadow", "fifo")
    m = _metrics(metrics_port)
    decisions = _total(m, "yarnrl_decisions_total")
    _wait(lambda: _text(driver, "decisions-total") == f"{decisions:.0f}", what="the shadow run's decisions")
    _wait(lambda: driver.find_element(By.ID, "shadow").is_displayed(), what="the shadow section")
    shadow_engine = {loc: _total(m, "yarnrl_shadow_containers_total", placed_by="engine", locality=loc)
                     for loc in LOCS}
    shadow_yarn = {loc: _total(m, "yarnrl_shadow_containers_total", placed_by="yarn", locality=loc) for loc in LOCS}
    assert sum(shadow_engine.values()) > 0 and sum(shadow_yarn.values()) > 0
    _wait(lambda: _bar(driver, "mix-shadow-yarn") == shadow_yarn, what="YARN's mix on the page")
    assert _bar(driver, "mix-shadow-engine") == shadow_engine
    assert _text(driver, "shadow-decisions") == f"{_total(m, 'yarnrl_shadow_decisions_total'):.0f}"
    # both mixes drawn over time
    _wait(lambda: driver.find_elements(By.CSS_SELECTOR, "#chart-mix-shadow-yarn rect")
          and driver.find_elements(By.CSS_SELECTOR, "#chart-mix-shadow-engine rect"), what="the shadow mix plots")
    shot = os.environ.get("YARNRL_CONSOLE_SCREENSHOT", str(tmp_path / "console.png"))
    assert driver.save_screenshot(shot)
    assert Path(shot).stat().st_size > 10_000
