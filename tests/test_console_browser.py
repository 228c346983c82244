"""The live console in a real browser: `policy-engine serve --ui-port`, decisions driven by the emulator over gRPC,
the page opened in headless Chromium (Debian's chromium + chromium-driver, via selenium), its numbers checked
against the engine's /metrics, its refreshing, and a shadow-mode run showing the engine's and YARN's locality mix.

YARNRL_CONSOLE_SCREENSHOT=PATH saves the page (docs/console.png in the README is made that way)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from policy_engine.console import parse_metrics

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if not (CHROMIUM and CHROMEDRIVER):
    if os.environ.get("CI") == "true":  # .ci/run installs them: missing there is a failure, not a skip
        raise RuntimeError("the console's browser test needs Debian's chromium and chromium-driver")
    pytest.skip("no chromium + chromedriver (apt-get install chromium chromium-driver; .ci/run does)",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

LOCALITIES = ("cache_local", "node_local", "rack_local", "off_switch")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def engine():
    port, metrics, ui = free_port(), free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "policy_engine.cli", "serve", "--policy", "clqlmrs", "--port",
                             str(port), "--metrics-port", str(metrics), "--ui-port", str(ui)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    line = ""
    for line in proc.stdout:
        if "listening on" in line:
            break
    assert f"console=http://127.0.0.1:{ui}/" in line, line
    yield {"target": f"127.0.0.1:{port}", "metrics": f"http://127.0.0.1:{metrics}/metrics",
           "ui": f"http://127.0.0.1:{ui}/", "env": env}
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def metrics(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return parse_metrics(r.read().decode())


def by_locality(samples, name: str, **match) -> dict[str, int]:
    out = {loc: 0 for loc in LOCALITIES}
    for labels, v in samples.get(name, ()):
        if all(labels.get(k) == x for k, x in match.items()) and labels["locality"] in out:
            out[labels["locality"]] += int(v)
    return out


def emulate(engine, *extra) -> None:
    cmd = [sys.executable, "-m", "emulator.cli", "run", "--scenario", "locality-wordcount", "--param", "jobs=2",
           "--episodes", "1", "--policy", "clqlmrs", "--remote", engine["target"], "--no-progress", "--json", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, env=engine["env"], timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def page_counts(browser, div: str) -> dict[str, int]:
    spans = browser.find_elements(By.CSS_SELECTOR, f"#{div} span.count")
    return {s.get_attribute("data-locality"): int(float(s.get_attribute("data-count"))) for s in spans}


def wait_for(browser, what, timeout=15):
    return WebDriverWait(browser, timeout, poll_frequency=0.2).until(lambda _: what())


def updates(browser) -> int:
    return int(browser.find_element(By.TAG_NAME, "body").get_attribute("data-updates") or 0)


def test_console_matches_metrics_updates_and_shows_shadow(engine, browser):
    browser.get(engine["ui"])
    wait_for(browser, lambda: updates(browser) >= 1)
    assert browser.find_element(By.ID, "policy").text == "clqlmrs"
    first = updates(browser)
    wait_for(browser, lambda: updates(browser) >= first + 2)  # it refreshes by itself

    # active: the engine places
    emulate(engine)
    m = metrics(engine["metrics"])
    decisions = int(sum(v for _, v in m["yarnrl_decisions_total"]))
    assigned = by_locality(m, "yarnrl_assigned_containers_total")
    assert decisions > 0 and sum(assigned.values()) > 0
    wait_for(browser, lambda: browser.find_element(By.ID, "decisions-total").text == str(decisions))
    assert page_counts(browser, "mix-assigned") == assigned
    assert not browser.find_element(By.ID, "shadow-figure").is_displayed()  # no shadow decisions yet
    # the decisions/s chart drew the burst
    wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#chart-rate polyline"))
    assert re.fullmatch(r"[0-9.]+ ms", browser.find_element(By.ID, "p99").text) or \
        browser.find_element(By.ID, "p99").text == "-"

    # shadow: fifo (in-process, standing in for YARN) places; the engine is asked on the same heartbeats
    emulate(engine, "--shadow-native", "fifo")
    m = metrics(engine["metrics"])
    shadow_engine = by_locality(m, "yarnrl_shadow_containers_total", placed_by="engine")
    shadow_yarn = by_locality(m, "yarnrl_shadow_containers_total", placed_by="yarn")
    decisions = int(sum(v for _, v in m["yarnrl_decisions_total"]))
    assert sum(shadow_engine.values()) > 0 and sum(shadow_yarn.values()) > 0
    assert by_locality(m, "yarnrl_assigned_containers_total") == assigned  # shadow decisions are never "assigned"
    wait_for(browser, lambda: browser.find_element(By.ID, "decisions-total").text == str(decisions))
    assert browser.find_element(By.ID, "shadow-figure").is_displayed()
    assert page_counts(browser, "mix-shadow-engine") == shadow_engine
    assert page_counts(browser, "mix-shadow-yarn") == shadow_yarn
    assert browser.find_element(By.ID, "mode").text.startswith("shadow")
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-shadow-yarn rect")
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-shadow-engine rect")
    shot = os.environ.get("YARNRL_CONSOLE_SCREENSHOT")
    if shot:
        time.sleep(2)
        browser.save_screenshot(shot)
