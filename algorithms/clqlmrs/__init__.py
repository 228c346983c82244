"""CLQLMRS (Ghazali et al., J. Cloud Computing 2022; CLQLMRS): SARSA Q-learning for cache and data locality.

One package, one direction of dependencies:
    config    the hyper-parameters and behaviour settings, with their defaults (defined here only)
    encoding  locality states, rewards, the two Q-table encodings, the decision trace (Step)
    model     what is learned: Q-table, visit counts, ε and paper mode's last reached state; saved / loaded
    policy    the `clqlmrs` policy: reads the model, never writes it
    learner   SARSA from decisions and Report events: writes the model (engine-built from the policy registry)
policy and learner both depend on model (and config, encoding), never on each other.

The paper
---------
A launch puts a task in one of five locality states: CL (the node caches the task's block), DL (the node stores
it), CRL / DRL (a node of the same rack caches / stores it) or NO. The reward of a launch in state X is
w_X * N_X / N with w = +1, +0.5, -0.25, -0.5, -1 for CL, DL, CRL, DRL, NO, where N_X counts the job's tasks
launched in state X so far (this one included) and N is the job's task count (Table 2; the example of Fig. 2:
DL, DRL, CL on a 3-task job give +0.5/3, -0.5/3, +1/3). SARSA with α = 0.1, γ = 0.95; ε-greedy with ε = 1,
multiplied by 0.999 every 10 episodes. The paper's Q-table is indexed by (previous state, task → node action).

Two encodings (policy option `mode`)
------------------------------------
* `paper`: faithful. State = the locality state of the previous launch (5 values), action = (task index within
  the job's input, node), hashed into a fixed-size table. It only knows *which* task went *where*, so what it
  learns is tied to one job's block placement on one cluster: a new job or a new node starts from zero.
* `abstract` (default): the Q-table is indexed by what makes a placement good or bad on *any* job and cluster,
  so a table trained on one workload keeps working on another:
    - the candidate's locality level on this node (CL / DL / CRL / DRL / NO),
    - the job's cached input fraction (0, < 1/3, < 2/3, >= 2/3): how much a cache hit is worth waiting for,
      the quantity Adaptive Cache Local scheduling bases its skip count on,
    - how long the ask has waited, in heartbeats per cluster node (< 0.5, < 1, < 2, >= 2): comparable across
      cluster sizes, like CapacityScheduler's locality delays,
    - the node's load (free memory >= or < half): a busy node frees a slot again soon.
  Actions are PLACE (launch one container of this job here) and WAIT (leave the job for another heartbeat).
  Jobs are visited in FIFO order and the first whose action is PLACE gets the container: the table learns the
  skip rule that Delay and ACL fix by hand (wait for a cached or local replica, how long, depending on the
  cached fraction and the time already waited). (`order=q` ranks jobs by Q(s, PLACE) instead, cache-local
  first across jobs; it interleaves jobs and lengthens mean job time, see the policy's options.)
  A WAIT step earns `-wait_cost` (default 0.05): the paper never waits (it has no such action), and without a
  cost of waiting the table would postpone a bad launch for ever (its reward is negative). 0.05 makes waiting for
  ever worth wait_cost / (1 - gamma) = -1, no better than the worst launch (NO: -1 * N_NO / N >= -1); with 0.01
  the learned table waited so long that 3 concurrent WordCounts took 19 % longer than under FIFO. A job that has
  waited `max_wait` (1) heartbeats per cluster node is placed whatever the table says (liveness).

Learning from Report
--------------------
The engine builds a `ClqlmrsLearner` for a learning policy and feeds it, off the decision path, the trace each
decision returns (the (state, action) of every step) and each Report event; a PLACE step's reward comes from the
ContainerStarted (or, when no start was reported, ContainerFinished) event of that application on that node, with
the locality the ApplicationMaster actually got. SARSA updates Q(s, a) once the step's reward and the job's next
(s', a') are known; JobFinished ends the job's trajectory (terminal update) and counts one episode for the ε
schedule. The learner updates its working copy of the model and publishes it to the policy after each Report
batch, so a decision sees what was learned up to the last Report (in-process and behind gRPC alike). The table is
saved atomically (temp file + rename) every `save_every_s` seconds and on close, from the learner's thread.
"""

from algorithms.clqlmrs.config import ONLINE_EPSILON, PAPER_EPSILON, POLICY_NAME, ClqlmrsConfig
from algorithms.clqlmrs.encoding import (
    LOCAL_STATES,
    PLACE,
    REWARD_WEIGHTS,
    WAIT,
    AbstractEncoding,
    LocalityState,
    PaperEncoding,
    Step,
    cached_fraction,
    has_locality_preference,
    locality_reward,
    make_encoding,
    placement,
    read_locality,
    rng_for,
    state_counts,
    state_from_report,
)
from algorithms.clqlmrs.model import ClqlmrsModel, ModelView

__all__ = ["ClqlmrsConfig", "ClqlmrsModel", "ModelView", "ONLINE_EPSILON", "PAPER_EPSILON", "POLICY_NAME",
           "LOCAL_STATES", "PLACE", "WAIT", "REWARD_WEIGHTS", "AbstractEncoding", "LocalityState", "PaperEncoding",
           "Step", "cached_fraction", "has_locality_preference", "locality_reward", "make_encoding", "placement",
           "read_locality", "rng_for", "state_counts", "state_from_report"]
