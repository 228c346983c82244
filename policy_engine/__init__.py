"""yarn-rl policy engine: scheduling policies behind one gRPC protocol (yarnrl.v1)."""

__version__ = "0.1.0"
PROTOCOL_VERSION = "yarnrl.v1"
