# minikube-py: `make up` starts a local cluster, `make test` runs the tests.
# Both install what they need first (Debian packages as root, Python packages into .venv).

# Debian's python3, built with profile-guided and link-time optimization, runs this project's
# code in about 10% less CPU than one built without (docs/decisions.md, "The venv runs on
# Debian's python3"); the nodes' images run it too.
PYTHON ?= /usr/bin/python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
APT_PACKAGES := etcd-server etcd-client python3-venv
PYTEST_ARGS ?=
# Tests run in parallel workers (pytest-xdist): most of their time is spent waiting on the
# servers they start, so 3 workers on 2 cores finish far sooner; tests/conftest.py says
# which tests go to one worker together. TEST_WORKERS=0 runs them in this one process.
TEST_WORKERS ?= 3

.PHONY: up down status test test-fast lint deps apt venv-python proto bytecode bench clean

MK_HOME = $${MINIKUBE_PY_HOME:-$$HOME/.minikube-py}

# The cluster kubeadm's way (a control-plane node whose kubelet runs the control plane as
# static pods, and two workers) and examples/hello (3 echo pods behind a Service at 10.96.0.80).
up: deps bytecode
	$(PY) -m minikube_py.cluster up --nodes 2
	$(VENV)/bin/kubectl --kubeconfig=$(MK_HOME)/kubeconfig apply -f examples/hello/
	$(VENV)/bin/kubectl --kubeconfig=$(MK_HOME)/kubeconfig rollout status deployment/hello --timeout=90s
	@echo "examples/hello answers, each call from one of its 3 pods, chosen at random:"
	@echo "  for i in 1 2 3; do busybox wget -qO- http://10.96.0.80/; done"

down:
	@if [ -x $(PY) ]; then $(PY) -m minikube_py.cluster down; fi

status: deps
	$(PY) -m minikube_py.cluster status

test: deps lint bytecode
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

test-fast: deps bytecode
	$(PY) -m pytest -n $(TEST_WORKERS) -m "not slow" $(PYTEST_ARGS)

lint: deps
	$(VENV)/bin/ruff check minikube_py tests benchmarks tools labs

bench: deps
	$(PY) benchmarks/apiserver.py
	$(PY) benchmarks/controllers.py
	$(PY) benchmarks/scheduler.py
	$(PY) benchmarks/pod_startup.py
	$(PY) benchmarks/hollow_nodes.py
	$(PY) benchmarks/proxy.py
	$(PY) benchmarks/dns.py
	$(PY) benchmarks/cluster_up.py
	$(PY) benchmarks/streaming.py
	$(PY) benchmarks/mkctl.py
	$(PY) benchmarks/density.py

deps: apt venv-python $(STAMP) proto

# A .venv made from another interpreter than $(PYTHON) is made again.
venv-python:
	@if [ -f $(VENV)/pyvenv.cfg ] && ! grep -qx "home = $$($(PYTHON) -c \
			'import os, sys; print(os.path.dirname(sys.executable))' 2>/dev/null)" \
			$(VENV)/pyvenv.cfg; then \
		echo "$(VENV) was made from another python: making it again from $(PYTHON)"; \
		rm -rf $(VENV); \
	fi

# Debian packages: installed only when a command is missing, so repeated runs are quick.
apt:
	@missing=""; \
	command -v etcd >/dev/null 2>&1 || missing="$$missing etcd-server"; \
	command -v etcdctl >/dev/null 2>&1 || missing="$$missing etcd-client"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	command -v containerd >/dev/null 2>&1 || missing="$$missing containerd"; \
	command -v runc >/dev/null 2>&1 || missing="$$missing runc"; \
	test -x /usr/lib/cni/bridge || missing="$$missing containernetworking-plugins"; \
	dpkg-query -W -f='$${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' \
		|| missing="$$missing busybox-static"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v iptables >/dev/null 2>&1 || missing="$$missing iptables"; \
	command -v nft >/dev/null 2>&1 || missing="$$missing nftables"; \
	command -v docker-registry >/dev/null 2>&1 || missing="$$missing docker-registry"; \
	command -v conntrack >/dev/null 2>&1 || missing="$$missing conntrack"; \
	command -v docker-compose >/dev/null 2>&1 || missing="$$missing docker-compose"; \
	command -v haproxy >/dev/null 2>&1 || missing="$$missing haproxy"; \
	command -v dockerd >/dev/null 2>&1 || missing="$$missing docker.io"; \
	command -v debootstrap >/dev/null 2>&1 || missing="$$missing debootstrap"; \
	command -v strip >/dev/null 2>&1 || missing="$$missing binutils"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,proto]'
	@touch $(STAMP)

proto: $(STAMP)
	$(PY) tools/genproto.py

# The package's bytecode (__pycache__/*.pyc), compiled once. Python writes it itself on
# import, except where PYTHONDONTWRITEBYTECODE is set: then every process compiles every
# module it imports again, and a test run starts some 700 (an API server's start took
# 0.97 CPU-s instead of 0.49; benchmarks/RESULTS.md). Only changed modules are compiled.
# The tests' helpers likewise; the test modules themselves pytest imports rewritten, from
# a cache of its own that tools/rewrite_tests.py writes (each worker's collection 26 -> 10
# CPU-s).
bytecode: proto
	$(PY) -m compileall -q minikube_py benchmarks
	$(PY) -m compileall -q -x '/(test_[^/]*|conftest)\.py$$' tests
	$(PY) tools/rewrite_tests.py

clean:
	rm -rf $(VENV) minikube_py/gen .pytest_cache .ruff_cache
	find minikube_py benchmarks tests -name __pycache__ -prune -exec rm -rf {} +
