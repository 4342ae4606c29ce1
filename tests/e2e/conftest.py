"""The cluster that a lane's ordinary cluster test modules share (lane_cluster).

Each `minikube-py up` costs 15-35 s and much of the machine's two cores (every node's
containerd unpacks the images, etcd and the API server start, the add-ons roll out), its
`down --purge` a few seconds more. Most of lane B's modules need nothing but an ordinary
cluster they reach through its API server, its nodes and its pods; those listed in
tests/conftest.py SHARED_CLUSTER_TESTS share one instead of each running their own:

    lane_cluster (session)     a LaneCluster: `up` at its first use, LANE_CLUSTER_FLAGS
      .namespaces(...)         a module's own namespaces, with a kubeconfig that works in
                               the first; deleted at the module's end with what it made
    pytest_runtest_teardown    `down --purge` after the last sharing test, before the
                               lane's next module runs an `up` of its own on the network

Each sharing module works in namespaces of its own, claimed by name (two modules cannot
claim one) and made fresh (a leftover one fails the claim), and removes whatever it makes
outside them (ingress/gateway: the Gateway API CRDs and GatewayClasses, the data plane
the gateway controller made in kube-system). The modules that change the cluster for all
keep an `up` of their own: a second `up`, HA, the cluster autoscaler's nodes, the
dashboard's `down` and `up` again, `--secure`'s check that `down` leaves nothing
(docs/decisions.md). The containerd restart, which kills a node's containerd, shares the
cluster last of all and ends it with the `down` it checks.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from tests.conftest import shares_the_lane_cluster
from tests.e2e.helpers import until
from tests.test_cluster_cli import launcher, leftovers

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
# One set of flags that serves every sharing module: two workers (storage places a
# StatefulSet's pods and claims on both, NetworkPolicy probes across nodes, ingress/gateway
# reaches the load balancers from node-1's network namespace), the metrics server's 2 s
# resolution (`kubectl top` in test_into_the_pod), kubeadm's layout (the default, named
# because test_kubeadm_layout checks it).
LANE_CLUSTER_FLAGS = ("--nodes", "2", "--layout", "kubeadm",
                      "--extra-config=metrics.metric-resolution=2s")
NETWORK_VARIABLES = ("MINIKUBE_PY_NETWORK_PREFIX", "MINIKUBE_PY_NODE_NETWORK")


class LaneCluster:
    """One `up` for the sharing modules of a lane: started at first use, stopped with
    `down --purge` by stop(), which may come early (before another `up` on the lane's
    network) and again at the session's end (then it does nothing)."""

    def __init__(self, home: Path, views: Path) -> None:
        self.home = home  # MINIKUBE_PY_HOME: state, logs, pki, nodes' folders, kubeconfig
        self.views = views  # a kubeconfig per claim, working in its first namespace
        self.env: dict[str, str] | None = None  # `up`'s environment while it runs
        self.claimed: dict[str, str] = {}  # namespace -> the module that claimed it

    def started(self) -> Path:
        """The cluster's home, after `up` (when it does not run yet) and its nodes Ready."""
        if self.env is None:
            # the lane's network variables, as pytest_runtest_setup set them for this test
            self.env = {**os.environ, "MINIKUBE_PY_HOME": str(self.home)}
            try:
                self.launcher("up", *LANE_CLUSTER_FLAGS)
                self.kubectl(self.home / "kubeconfig", "wait", "--for=condition=Ready",
                             "node", "--all", "--timeout=120s")
            except BaseException:
                with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
                    self.stop()  # whatever of it started; the next use tries `up` again
                raise
        return self.home

    def stop(self) -> None:
        """`down --purge`, and nothing of the cluster left: no process or mount naming its
        home, no network namespace, link or route of its node network, no FORWARD rule
        for its bridge."""
        if self.env is None:
            return
        env, self.env = self.env, None
        self.claimed.clear()
        down = launcher(self.home, "down", "--purge", check=False, env=env)
        with pytest.MonkeyPatch.context() as patch:  # leftovers() reads the lane's network
            for name in NETWORK_VARIABLES:
                if name in env:
                    patch.setenv(name, env[name])
                else:
                    patch.delenv(name, raising=False)
            left = leftovers(self.home)
        prefix = env.get("MINIKUBE_PY_NETWORK_PREFIX") or "mk-"
        forward = subprocess.run(["iptables", "-w", "-S", "FORWARD"], capture_output=True,
                                 text=True).stdout if shutil.which("iptables") else ""
        left += [rule for rule in forward.splitlines() if f" {prefix}" in rule]
        assert down.returncode == 0 and left == [], (down.stdout + down.stderr, left)

    @contextmanager
    def namespaces(self, owner: str, first: str, *more: str) -> Iterator[Path]:
        """The namespaces `first` and `more`, new, for the module `owner`: yields a
        directory whose kubeconfig is the cluster's with `first` as its context's namespace
        (kubectl, mkctl and the Python client read it). At the end they are deleted, with
        everything in them, and the volumes their claims had."""
        names = (first, *more)
        taken = {name: self.claimed[name] for name in names if name in self.claimed}
        assert not taken, f"{owner}: namespaces already claimed: {taken}"
        home = self.started()
        self.claimed.update(dict.fromkeys(names, owner))
        view = self.views / first
        try:
            for name in names:  # create, not apply: one a crashed run left fails here
                self.kubectl(home / "kubeconfig", "create", "namespace", name)
            view.mkdir(parents=True, exist_ok=True)
            config = yaml.safe_load((home / "kubeconfig").read_text())
            for context in config["contexts"]:
                context["context"]["namespace"] = first
            (view / "kubeconfig").write_text(yaml.safe_dump(config))
            for name in names:  # a pod may name no account until the controller made it
                until(lambda name=name: self.kubectl(
                    home / "kubeconfig", "get", "serviceaccount", "default", "-n", name,
                    check=False).returncode == 0, f"the default ServiceAccount of {name}")
            yield view
        finally:
            try:
                self.delete_namespaces(names)
            finally:
                shutil.rmtree(view, ignore_errors=True)
                for name in names:
                    self.claimed.pop(name, None)

    def delete_namespaces(self, names: tuple[str, ...]) -> None:
        """Delete the namespaces, their pods first with a short grace (a `sleep` as a
        container's first process ignores SIGTERM and would hold each for 30 s), and wait
        until the volumes their claims had are deleted too (a PersistentVolume belongs to
        no namespace)."""
        if self.env is None:  # the cluster did not come up
            return
        kubeconfig = self.home / "kubeconfig"
        for name in names:
            self.kubectl(kubeconfig, "delete", "pods", "--all", "-n", name, "--grace-period=1",
                         "--wait=false", check=False)
        self.kubectl(kubeconfig, "delete", "namespace", *names, "--ignore-not-found",
                     "--timeout=180s")

        def their_volumes() -> list[str]:
            volumes = json.loads(self.kubectl(kubeconfig, "get", "pv", "-o", "json").stdout)
            return [volume["metadata"]["name"] for volume in volumes["items"]
                    if (volume["spec"].get("claimRef") or {}).get("namespace") in names]
        until(lambda: not their_volumes(), lambda: f"the volumes {their_volumes()} to go")

    def launcher(self, *args: str) -> subprocess.CompletedProcess[str]:
        assert self.env is not None
        return launcher(self.home, *args, timeout=600, env=self.env)

    @staticmethod
    def kubectl(kubeconfig: Path, *args: str, check: bool = True
                ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", *args],
                              capture_output=True, text=True, timeout=240)
        assert done.returncode == 0 or not check, (args, done.stdout + done.stderr)
        return done


LANE_CLUSTER = pytest.StashKey[LaneCluster]()


@pytest.fixture(scope="session")
def lane_cluster(request: pytest.FixtureRequest, fast_tmp: Path) -> Iterator[LaneCluster]:
    """The cluster the lane's ordinary modules share (this file's docstring says why).
    Its `up` comes at the first `started()` or `namespaces()`; a module uses it only
    through namespaces it claims. Registered in the session's stash so that
    pytest_runtest_teardown can stop it as soon as the last sharing test is done."""
    cluster = LaneCluster(fast_tmp / "lane-cluster", fast_tmp / "lane-cluster-namespaces")
    request.config.stash[LANE_CLUSTER] = cluster
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the last test that shares the lane's cluster (the next one does not, or
    there is none), and after its module's fixtures deleted their namespaces, `down
    --purge` the cluster: the lane's next module runs an `up` of its own on the same node
    network, and a cluster left running would only cost CPU until the session's end.
    The sharing modules come first in their lane (tests/conftest.py sorts them there)."""
    try:
        return (yield)
    finally:
        cluster = item.config.stash.get(LANE_CLUSTER, None)
        if cluster is not None and (nextitem is None
                                    or not shares_the_lane_cluster(nextitem.nodeid)):
            cluster.stop()
