"""In-process and remote (a real `policy-engine serve` over gRPC) give identical episodes for a fixed seed."""

import pytest

from emulator.drivers import make_driver
from emulator.scenario import get_scenario


@pytest.mark.parametrize("scenario,params,policies", [
    ("locality-wordcount", {"maps": 12, "jobs": 2, "interarrival_s": 3}, ["delay", "acl"]),
    ("deeprm", {"load": 0.75, "simu_len": 30}, ["deeprm-random", "packer"]),
])
def test_in_process_and_remote_agree(scenario, params, policies):
    sc = get_scenario(scenario, **params)
    for policy in policies:
        with make_driver(policy) as local:
            a = [sc.run_episode(local, seed) for seed in (0, 1)]
        with make_driver(policy, remote="spawn") as remote:
            assert remote.mode == "remote"
            b = [sc.run_episode(remote, seed) for seed in (0, 1)]
        assert a == b, (policy, a, b)
