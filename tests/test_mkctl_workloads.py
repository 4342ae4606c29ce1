"""mkctl's workload commands (rollout, set image, expose, drain) next to the real kubectl.

As in test_mkctl_write.py, each case gets two namespaces set up alike: kubectl runs in
one, mkctl in the other, and both must print the same, exit alike and leave the same
objects. Here the deployment and replicaset controllers run (and the disruption
controller, for drain), and a fake kubelet makes each namespace's pods Running and
Ready, so rollouts really progress and budgets really count healthy pods.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.controllers.deployment.controller import DeploymentController
from minikube_py.controllers.disruption import DisruptionController
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.replicaset import ReplicaSetController
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet
from tests.test_mkctl import REPO, Output, Result, assert_same, mkctl_command, normalized
from tests.test_mkctl_write import Pair, WriteClis

RunControllers = Callable[..., Awaitable[ControllerManager]]
VIOLATES_BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture(scope="module")
def clis(kubeconfig: Path, apiserver: APIServerProcess,
         tmp_path_factory: pytest.TempPathFactory) -> WriteClis:
    return WriteClis(kubeconfig, tmp_path_factory.mktemp("mkctl-workloads-cache"), apiserver.url)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workload-manifests")


@pytest.fixture
async def controllers(run_controllers: RunControllers) -> None:
    await run_controllers(DeploymentController, ReplicaSetController, DisruptionController)


class KubeletsFor:
    """A fake kubelet for each namespace of a Pair, while the test runs."""

    def __init__(self, client: Client, pair: Pair, *, delay: float = 0.0) -> None:
        self.kubelets = [FakeKubelet(client, namespace, delay=delay)
                         for namespace in (pair.kubectl_ns, pair.mkctl_ns)]

    async def __aenter__(self) -> KubeletsFor:
        for kubelet in self.kubelets:
            await kubelet.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for kubelet in self.kubelets:
            await kubelet.__aexit__(*exc)


async def both(pair: Pair, case: str) -> tuple[Result, Result]:
    return await asyncio.to_thread(pair.run, case)


async def same(pair: Pair, case: str) -> Result:
    """Run the case with both; they must agree. mkctl's result."""
    expected, actual = await both(pair, case)
    assert_same(expected, actual)
    return actual


async def rolled_out(pair: Pair) -> None:
    """Wait, with kubectl, until both namespaces' rollouts of `web` are done."""
    for namespace in (pair.kubectl_ns, pair.mkctl_ns):
        done = await asyncio.to_thread(pair.clis.kubectl, "rollout", "status", "deploy/web",
                                       "--timeout=60s", "-n", namespace)
        assert done.code == 0, done.err


async def observed(pair: Pair) -> None:
    """Until the deployment controller has seen both namespaces' last change to `web`
    (status.observedGeneration), which `rollout status` waits for before it says more."""
    async def seen() -> bool:
        deployments = [await asyncio.to_thread(deployment_of, pair, namespace)
                       for namespace in (pair.kubectl_ns, pair.mkctl_ns)]
        return all((d.get("status") or {}).get("observedGeneration") ==
                   d["metadata"]["generation"] for d in deployments)

    await eventually(seen, what="both deployments' last change observed")


async def budgets_count(pair: Pair, healthy: int) -> None:
    """Until the disruption controller has counted `healthy` pods in both namespaces'
    budget `guard` at its current generation: an eviction is then judged by that count,
    not refused because the budget is still being processed."""
    async def counted() -> bool:
        for namespace in (pair.kubectl_ns, pair.mkctl_ns):
            found = await asyncio.to_thread(pair.clis.kubectl, "get", "pdb", "guard", "-n",
                                            namespace, "-o", "json")
            budget = json.loads(found.out)
            status = budget.get("status") or {}
            if (status.get("observedGeneration") != budget["metadata"]["generation"]
                    or status.get("currentHealthy") != healthy):
                return False
        return True

    await eventually(counted, what=f"{healthy} healthy pods counted by both budgets")


def deployment_of(pair: Pair, namespace: str) -> Obj:
    found = pair.clis.kubectl("get", "deploy", "web", "-n", namespace, "-o", "json")
    assert found.code == 0, found.err
    return json.loads(found.out)


async def test_rollout_and_set_image_change_deployments_as_kubectl_does(
        clis: WriteClis, files: Path, controllers: None, api_client: Client) -> None:
    pair = Pair(clis, files, ["create deployment web --image=nginx:1.25 --replicas=2"])
    async with KubeletsFor(api_client, pair):
        await rolled_out(pair)
        await same(pair, "rollout status deploy/web")
        await same(pair, "rollout status deployment web --watch=false")
        await same(pair, "rollout history deploy/web")
        await same(pair, "set image deploy/web nginx=nginx:1.27")
        await same(pair, "set image deploy/web nginx=nginx:1.27")  # unchanged: silent
        await rolled_out(pair)
        for case in ("rollout history deploy/web", "rollout history deploy/web --revision=1",
                     "rollout history deploy/web --revision=7",
                     "rollout undo deploy/web --to-revision=9", "rollout undo deploy/web"):
            await same(pair, case)
        await rolled_out(pair)
        for case in ("rollout history deploy/web", "rollout undo deploy/web --dry-run=client",
                     "rollout undo deploy/web --dry-run=server",
                     "rollout restart deploy/web --dry-run=server",
                     "rollout undo deploy/web --to-revision=3",
                     "rollout pause deploy/web", "rollout pause deploy/web",
                     "rollout restart deploy/web", "rollout undo deploy/web",
                     "rollout resume deploy/web", "rollout resume deploy/web",
                     "set image deploy/web nope=busybox", "set image deploy/web",
                     "set image cm/nothing a=b", "set image deploy/web '*=busybox:1.36' -o name",
                     "set image deploy/web nginx=nginx:1.28 --dry-run=client",
                     "set image deploy/web nginx=nginx:1.28 --dry-run=client "
                     "-o jsonpath={{.spec.template.spec.containers[0].image}}",
                     "set image deploy/web nginx=nginx:1.29 --dry-run=server "
                     "-o jsonpath={{.spec.template.spec.containers[0].image}}",
                     "rollout status", "rollout status deploy/nope",
                     "rollout status deploy/web --timeout=soon",
                     "rollout status deploy/web --revision=-1", "rollout bogus",
                     "set bogus"):
            await same(pair, case)
        await rolled_out(pair)
        await same(pair, "rollout restart deploy/web")
        await rolled_out(pair)
        await same(pair, "rollout history deploy/web")
    kubectl_made, mkctl_made = (deployment_of(pair, ns) for ns in (pair.kubectl_ns,
                                                                  pair.mkctl_ns))
    for deployment in (kubectl_made, mkctl_made):
        annotations = deployment["spec"]["template"]["metadata"].pop("annotations")
        assert set(annotations) == {"kubectl.kubernetes.io/restartedAt"}
    assert mkctl_made["spec"] == kubectl_made["spec"]
    assert mkctl_made["metadata"]["annotations"] == kubectl_made["metadata"]["annotations"]


def test_rollout_and_set_alone_print_their_help_and_fail_as_kubectl(clis: WriteClis) -> None:
    """kubectl prints the help of `rollout` on stdout, that of `set` on stderr; both exit 1."""
    for group, stream in (("rollout", "out"), ("set", "err")):
        for result in (clis.kubectl(group), clis.mkctl(group)):
            assert result.code == 1
            assert getattr(result, stream).startswith(
                "Manage the rollout of one or many resources." if group == "rollout" else
                "Configure application resources.")


async def test_rollout_status_follows_the_rollout_until_it_is_done(
        clis: WriteClis, files: Path, controllers: None, api_client: Client) -> None:
    """Pods take a second to start, so the rollout is still going when mkctl starts."""
    pair = Pair(clis, files, ["create deployment web --image=nginx:1.25 --replicas=3"])
    async with KubeletsFor(api_client, pair, delay=1.0):
        await rolled_out(pair)
        changed = clis.mkctl("set", "image", "deploy/web", "nginx=nginx:1.27",
                             "-n", pair.mkctl_ns)
        assert changed.out == "deployment.apps/web image updated\n"
        status = await asyncio.to_thread(clis.mkctl, "rollout", "status", "deploy/web",
                                         "--timeout=60s", "-n", pair.mkctl_ns)
    lines = status.out.splitlines()
    assert status.code == 0, status.err
    assert lines[-1] == 'deployment "web" successfully rolled out'
    assert len(lines) > 1
    assert all(line.startswith('Waiting for deployment "web" rollout to finish: ')
               for line in lines[:-1])


async def test_rollout_status_of_a_paused_rollout_times_out_as_kubectl_does(
        clis: WriteClis, files: Path, controllers: None, api_client: Client) -> None:
    pair = Pair(clis, files, ["create deployment web --image=nginx:1.25 --replicas=2"])
    async with KubeletsFor(api_client, pair):
        await rolled_out(pair)
        await same(pair, "rollout pause deploy/web")
        await same(pair, "set image deploy/web nginx=nginx:1.27")
        await observed(pair)
        expected, actual = await both(pair, "rollout status deploy/web --timeout=2s")
    assert actual.err == expected.err == "error: timed out waiting for the condition\n"
    assert actual.code == expected.code == 1
    assert set(actual.out.splitlines()) == set(expected.out.splitlines()) == {
        'Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been '
        "updated..."}


STATEFUL = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: busybox:1.36}]}
"""
DAEMON = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox:1.36}]}
"""


def test_rollout_of_daemonsets_and_statefulsets_as_kubectl(clis: WriteClis, files: Path
                                                           ) -> None:
    """No controller runs for them here: status waits for the spec to be observed, and
    they have no history (no ControllerRevisions) yet."""
    (files / "stateful.yaml").write_text(STATEFUL)
    (files / "daemon.yaml").write_text(DAEMON)
    pair = Pair(clis, files, ["create -f {files}/stateful.yaml",
                              "create -f {files}/daemon.yaml"])
    for case in ("rollout status ds/agent --watch=false", "rollout status sts/db --watch=false",
                 "rollout status ds/agent --timeout=1s", "rollout status sts/db --timeout=1s",
                 "rollout restart ds/agent", "rollout restart statefulset/db",
                 "rollout pause ds/agent", "rollout resume sts/db",
                 "rollout history ds/agent", "rollout undo sts/db", "rollout undo cm/none",
                 "rollout status cm/none"):
        expected, actual = pair.run(case)
        assert_same(expected, actual)
    for kind in ("ds/agent", "sts/db"):
        annotations = [json.loads(pair.clis.kubectl("get", kind, "-n", namespace, "-o",
                                                    "json").out)["spec"]["template"][
            "metadata"]["annotations"] for namespace in (pair.kubectl_ns, pair.mkctl_ns)]
        assert [set(found) for found in annotations] == [
            {"kubectl.kubernetes.io/restartedAt"}] * 2


TWO_PORTS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: two, labels: {app: two, tier: front}}
spec:
  selector: {matchLabels: {app: two}}
  template:
    metadata: {labels: {app: two, extra: e1}}
    spec:
      containers:
      - {name: a, image: a, ports: [{containerPort: 80, name: http},
                                    {containerPort: 53, protocol: UDP}]}
      - {name: b, image: b, ports: [{containerPort: 9000}]}
"""
EXPOSE_SETUP = ["create deployment web --image=nginx --port=80",
                "create -f {files}/two.yaml", "run solo --image=busybox --labels=a=b,c=d "
                                              "--port=8080",
                "create configmap settings"]
EXPOSE_CASES = [
    "expose deploy web", "expose deployment/web --port=8080 --target-port=80",
    "expose deploy two", "expose deploy two --port=5 --target-port=http --type=NodePort",
    "expose deploy two --dry-run=client -o json", "expose deploy web --name=other -o name",
    "expose pod solo", "expose pod solo --port=1 --selector=z=1 --labels=q=r",
    "expose deploy web --protocol=UDP --port=53 --dry-run=client -o yaml",
    "expose deploy web --dry-run=server", "expose deploy web --type=Weird --name=weird",
    "expose deploy web --port=abc", "expose deploy nope --port=1", "expose cm settings",
    "expose", "expose deploy web --bogus",
    "expose deploy web --external-ip=192.0.2.10,192.0.2.11 --type=LoadBalancer "
    "--load-balancer-ip=192.0.2.20 --session-affinity=ClientIP --dry-run=client -o json",
    "expose deploy web --name=fixed --cluster-ip=None",
]


def services_of(pair: Pair, namespace: str) -> list[Obj]:
    """The namespace's Services, without what the server allocates (IPs, node ports)."""
    items = pair.objects(namespace, "svc")
    for item in items:
        for key in ("clusterIP", "clusterIPs"):
            item["spec"].pop(key, None)
        for port in item["spec"].get("ports") or []:
            port.pop("nodePort", None)
    return items


@pytest.mark.parametrize("case", EXPOSE_CASES)
def test_expose_makes_the_service_kubectl_makes(clis: WriteClis, files: Path, case: str
                                                ) -> None:
    (files / "two.yaml").write_text(TWO_PORTS)
    pair = Pair(clis, files, EXPOSE_SETUP)
    expected, actual = pair.run(case)
    assert_same(expected, actual)
    assert services_of(pair, pair.mkctl_ns) == services_of(pair, pair.kubectl_ns)


SERVICE_SETUP = ["create service clusterip front --tcp=80:8080,443:8443",
                 "create service clusterip bare --clusterip=None"]
SERVICE_CASES = ["expose svc front --name=again", "expose service/front --name=one --port=81",
                 "expose svc bare --name=x --port=1"]


@pytest.mark.parametrize("case", SERVICE_CASES)
def test_expose_of_a_service_copies_its_selector_and_ports_as_kubectl(
        clis: WriteClis, files: Path, case: str) -> None:
    pair = Pair(clis, files, SERVICE_SETUP)
    expected, actual = pair.run(case)
    assert_same(expected, actual)
    assert services_of(pair, pair.mkctl_ns) == services_of(pair, pair.kubectl_ns)


# -- drain ---------------------------------------------------------------------------

def pod_on(node: str, name: str, *, labels: Obj | None = None, volumes: bool = False) -> str:
    spec: Obj = {"nodeName": node, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "app", "image": "busybox:1.36"}]}
    if volumes:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "labels": labels or {"app": name}},
                       "spec": spec})


class TwinNodes:
    """A node for kubectl and one for mkctl (no kubelet behind them), each with the same
    pods in the Pair's namespace of its program."""

    def __init__(self, pair: Pair) -> None:
        self.pair = pair
        ident = uuid.uuid4().hex[:6]
        self.names = {pair.kubectl_ns: f"drain-{ident}-k", pair.mkctl_ns: f"drain-{ident}-m"}
        for name in self.names.values():
            node = json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
            assert pair.clis.kubectl("create", "-f", "-", input=node).code == 0

    def add_pod(self, name: str, **options: Any) -> None:
        for namespace, node in self.names.items():
            made = self.pair.clis.kubectl("create", "-n", namespace, "-f", "-",
                                          input=pod_on(node, name, **options))
            assert made.code == 0, made.err

    def delete(self) -> None:
        self.pair.clis.kubectl("delete", "node", *self.names.values())

    def run(self, case: str) -> tuple[Result, Result]:
        results = []
        clis = self.pair.clis
        for (namespace, node), program in zip(self.names.items(),
                                              (clis.kubectl, clis.mkctl_input), strict=True):
            result = program(*case.replace("NODE", node).split())
            results.append(normalized(Result(
                *(text.replace(node, "NODE").replace(namespace, "NS")
                  for text in (result.out, result.err)), result.code)))
        return results[0], results[1]

    def pods(self, namespace: str) -> set[str]:
        listed = self.pair.clis.kubectl("get", "pods", "-n", namespace, "-o", "name")
        return set(listed.out.split())


async def test_drain_refuses_and_evicts_as_kubectl_does(
        clis: WriteClis, files: Path, controllers: None, api_client: Client) -> None:
    pair = Pair(clis, files, [])
    nodes = TwinNodes(pair)
    try:
        async with KubeletsFor(api_client, pair):
            nodes.add_pod("scratch", volumes=True)
            for case in ("drain NODE --force", "drain NODE --delete-emptydir-data --force "
                                               "--bogus", "drain", "drain nope-node",
                         "drain NODE --timeout=soon", "drain NODE --ignore-daemonsets"):
                assert_same(*await asyncio.to_thread(nodes.run, case))
            nodes.add_pod("bare")
            # two refusals: their order varies in kubectl, so compare them as sets
            expected, actual = await asyncio.to_thread(nodes.run, "drain NODE")
            assert (actual.out, actual.code) == (expected.out, expected.code)
            assert sorted(actual.err.splitlines()[3:]) == sorted(expected.err.splitlines()[3:])
            assert actual.err.splitlines()[1:3] == expected.err.splitlines()[1:3]
            assert actual.err.startswith('error: unable to drain node "NODE" due to error: [')
            for case in ("drain NODE --force --delete-emptydir-data --dry-run=client",
                         "drain NODE --force --delete-emptydir-data --dry-run=server",
                         "drain NODE --dry-run=maybe"):
                expected, actual = await asyncio.to_thread(nodes.run, case)
                assert (actual.err, actual.code) == (expected.err, expected.code)
                assert sorted(actual.out.splitlines()) == sorted(expected.out.splitlines())
            assert nodes.pods(pair.mkctl_ns) == {"pod/bare", "pod/scratch"}
            expected, actual = await asyncio.to_thread(
                nodes.run, "drain NODE --force --delete-emptydir-data --timeout=30s")
            assert actual.err == expected.err
            assert actual.code == expected.code == 0
            assert sorted(actual.out.splitlines()) == sorted(expected.out.splitlines())
            assert actual.out.splitlines()[-1] == "node/NODE drained"
            assert nodes.pods(pair.mkctl_ns) == nodes.pods(pair.kubectl_ns) == set()
    finally:
        nodes.delete()


AGENT = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox:1.36}]}
"""


def daemon_pod(node: str, name: str, daemon_set: str, uid: str) -> str:
    """A pod on `node` that names a DaemonSet as its controller (none runs here)."""
    pod = json.loads(pod_on(node, name))
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                           "name": daemon_set, "uid": uid,
                                           "controller": True}]
    return json.dumps(pod)


def test_drain_leaves_daemonset_pods_only_when_told_as_kubectl_does(
        clis: WriteClis, files: Path) -> None:
    """A DaemonSet's pod stops the drain without --ignore-daemonsets and is left with a
    warning with it; a pod whose DaemonSet is gone stops it without --force."""
    pair = Pair(clis, files, [])
    nodes = TwinNodes(pair)
    try:
        for namespace, node in nodes.names.items():
            assert clis.kubectl("create", "-n", namespace, "-f", "-", input=AGENT).code == 0
            uid = clis.kubectl("get", "ds", "agent", "-n", namespace, "-o",
                               "jsonpath={.metadata.uid}").out
            for pod in (daemon_pod(node, "agent-x", "agent", uid),
                        daemon_pod(node, "orphan", "gone", "0000")):
                made = clis.kubectl("create", "-n", namespace, "-f", "-", input=pod)
                assert made.code == 0, made.err
        expected, actual = nodes.run("drain NODE")
        assert (actual.out, actual.code) == (expected.out, expected.code)
        assert sorted(actual.err.splitlines()[1:]) == sorted(expected.err.splitlines()[1:])
        assert ("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
                "NS/agent-x") in actual.err.splitlines()
        for case in ("drain NODE --ignore-daemonsets",
                     "drain NODE --ignore-daemonsets --force --timeout=30s"):
            assert_same(*nodes.run(case))
        assert nodes.pods(pair.mkctl_ns) == nodes.pods(pair.kubectl_ns) == {"pod/agent-x"}
    finally:
        nodes.delete()


async def test_drain_stops_at_a_budget_that_allows_nothing_as_kubectl_does(
        clis: WriteClis, files: Path, controllers: None, api_client: Client) -> None:
    pair = Pair(clis, files, ["create pdb guard --selector=app=guard --min-available=1"])
    nodes = TwinNodes(pair)
    try:
        async with KubeletsFor(api_client, pair):
            nodes.add_pod("guarded", labels={"app": "guard"})
            await budgets_count(pair, 1)
            expected, actual = await asyncio.to_thread(
                nodes.run, "drain NODE --force --timeout=3s")
        assert_same(expected, actual)
        assert (f'error when evicting pods/"guarded" -n "NS" (will retry after 5s): '
                f"{VIOLATES_BUDGET}") in actual.err
        assert 'global timeout reached: 3s' in actual.err
        assert nodes.pods(pair.mkctl_ns) == {"pod/guarded"}
    finally:
        nodes.delete()


async def test_drain_retries_an_eviction_until_the_budget_allows_it(
        clis: WriteClis, files: Path, controllers: None, api_client: Client,
        processes: Callable[..., subprocess.Popen[str]]) -> None:
    """The budget refuses (429) and drain retries every 5 s; once the budget is gone,
    the eviction goes through, the pod goes and the node is drained."""
    pair = Pair(clis, files, ["create pdb guard --selector=app=guard --min-available=2"])
    nodes = TwinNodes(pair)
    node = nodes.names[pair.mkctl_ns]
    try:
        async with KubeletsFor(api_client, pair):
            nodes.add_pod("g1", labels={"app": "guard"})
            nodes.add_pod("g2", labels={"app": "guard"})
            await budgets_count(pair, 2)
            draining = processes(
                mkctl_command(*clis.flags(), "drain", node, "--force"),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONPATH": str(REPO)})
            printed = Output(draining)

            async def retried() -> bool:  # each pod's eviction tried, refused, tried again
                return all(printed.text.count(f"evicting pod {pair.mkctl_ns}/{name}\n") >= 2
                           for name in ("g1", "g2"))

            await eventually(retried, timeout=60, what="each eviction retried")
            assert draining.poll() is None  # still retrying
            assert nodes.pods(pair.mkctl_ns) == {"pod/g1", "pod/g2"}
            removed = clis.kubectl("delete", "pdb", "guard", "-n", pair.mkctl_ns)
            assert removed.code == 0, removed.err
            await asyncio.to_thread(draining.wait, 60)
            assert draining.stderr is not None
            err = draining.stderr.read()
            printed.reader.join()
            out = printed.text
    finally:
        nodes.delete()
    ns = pair.mkctl_ns
    assert draining.returncode == 0, err
    for name in ("g1", "g2"):
        assert (f'error when evicting pods/"{name}" -n "{ns}" (will retry after 5s): '
                f"{VIOLATES_BUDGET}") in err.splitlines()
        assert out.count(f"evicting pod {ns}/{name}\n") >= 2
        assert f"pod/{name} evicted\n" in out
    assert out.startswith(f"node/{node} cordoned\n")
    assert out.endswith(f"node/{node} drained\n")
    assert nodes.pods(ns) == set()
