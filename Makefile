# The two set-up commands of the README: `make demo` and `make test`. Both build everything they need from a
# fresh checkout (a virtual environment in .venv with yarn-rl and the extras they use).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install proto plugin clean images cluster-up cluster-down federation-up federation-down
MVN ?= mvn

DEMO_STAMP := $(VENV)/.installed-demo

# setup.py and the .pyx: the emulator's compiled event loop is built by the install (rebuilt when they change)
$(STAMP): pyproject.toml setup.py emulator/multicluster/_fastloop.pyx
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all]'
	touch $(STAMP) $(DEMO_STAMP)

# The demo's install: the engine and the emulator only (no torch, no test tools): ~400 MB, about a minute.
# A full install (`make install`, `make test`) satisfies it too.
$(DEMO_STAMP): pyproject.toml setup.py emulator/multicluster/_fastloop.pyx
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[emulator]'
	touch $(DEMO_STAMP)

install: $(STAMP)

# Regenerate the committed protocol code (policy_engine/_generated) after editing proto/; needs grpcio-tools
# ([test] extra). tests/test_generated_code.py fails while the committed code is stale.
proto: $(STAMP)
	$(PY) tools/genproto.py

# Every step below talks to real `policy-engine serve` processes over gRPC on loopback ("--remote spawn").
demo: $(DEMO_STAMP)
	$(VENV)/bin/policy-engine demo
	$(VENV)/bin/emulator compare --scenario locality-wordcount --policies fifo,delay,acl --episodes 5 --remote spawn
	$(VENV)/bin/emulator compare --scenario multicluster-uniform --policies sf-e,rl-fc \
	    --model rl-fc=models/rl-fc-uniform.safetensors --against sf-e --episodes 3 --remote spawn

# Python tests, then the plugin: Maven builds the shaded jar and runs its unit tests and the mini-cluster
# integration tests, which start the engine from this .venv (so `install` comes first).
test: install
	$(PY) -m pytest -q
	$(MVN) -B -q -f yarn_plugin/pom.xml verify -Dyarnrl.python=$(abspath $(PY))

# The ResourceManager plugin jar alone: yarn_plugin/target/yarnrl-yarn-plugin-0.1.0.jar
plugin:
	$(MVN) -B -q -f yarn_plugin/pom.xml package -DskipTests

# A real multi-host Hadoop in containers (docker/README.md): images from Debian packages, Maven Central and PyPI,
# rebuilt only when their inputs changed; then NameNode, ResourceManager + RlScheduler, 4 workers in 2 racks, the
# engine (POLICY) and a client. Needs a running Docker engine.
POLICY ?= fifo
CLUSTER ?= yarnrl
images: install
	$(PY) -m docker_cluster.images

cluster-up: images
	$(PY) -m docker_cluster up --name $(CLUSTER) --policy $(POLICY)

cluster-down:
	$(PY) -m docker_cluster down --name $(CLUSTER)

# A YARN Federation in containers (docker_cluster/federation.py): ZooKeeper, a 3.4.2 Router with the learned Router policy
# (org.yarnrl.federation), FEDERATION sub-clusters (an RM + a worker each, SC_MEMORY MB per worker), HDFS, the engine
# (FED_POLICY) and a client. benchmarks/federation.py restarts the engine per policy.
FED ?= yarnrl-fed
FEDERATION ?= 2
SC_MEMORY ?= 4096,2048
SC_IDS ?= SC5,SC3
FED_POLICY ?= maf
# e.g. FED_ARGS=--amrmproxy: DSRAP across sub-clusters (every NodeManager runs the AMRMProxy; docker_cluster/federation.py)
FED_ARGS ?=
federation-up: install
	$(PY) -m docker_cluster up --name $(FED) --federation $(FEDERATION) --sc-ids $(SC_IDS) --sc-memory $(SC_MEMORY) \
	    --policy $(FED_POLICY) $(FED_ARGS)

federation-down:
	$(PY) -m docker_cluster down --name $(FED)

clean:
	rm -rf $(VENV) yarn_plugin/target
