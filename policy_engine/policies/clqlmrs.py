"""The `clqlmrs` policy lives in its own package, policy_engine.clqlmrs (config, encoding, model, policy, learner);
importing it here is what registers it with the policy registry."""

from policy_engine.clqlmrs.policy import ClqlmrsPolicy

__all__ = ["ClqlmrsPolicy"]
