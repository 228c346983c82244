"""The generated protocol modules, built from proto/yarnrl/v1/scheduler.proto.

The code lives in policy_engine/_generated/ and is committed, so an installed engine (a wheel, `pip install .`)
needs neither proto/ nor grpcio-tools at run time. `make proto` (tools/genproto.py) regenerates it after the
contract changes; tests/test_generated_code.py fails when the committed code is stale.
"""

from __future__ import annotations

from policy_engine._generated.yarnrl.v1 import scheduler_pb2 as pb
from policy_engine._generated.yarnrl.v1 import scheduler_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["PolicyEngine"].full_name

__all__ = ["pb", "pb_grpc", "SERVICE_NAME"]
