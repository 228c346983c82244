"""DeepRM (Mao, Alizadeh, Menache & Kandula, HotNets 2016): which waiting job runs next, learned with REINFORCE.

policy.py (deeprm-pg), sjf.py / packer.py (the paper's baselines), random_policy.py (deeprm-random), view.py
(DeepRM's state built from real YARN heartbeats, kept by the engine); sim.py / script.py (DeepRM's simulator, a
scripted job sequence), env.py (gymnasium), train.py (the REINFORCE learner), scenarios.py. docs/algorithms/deeprm.md.
"""
