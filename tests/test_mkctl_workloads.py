"""mkctl's workload commands (rollout, set image, expose) next to the real kubectl.

As in test_mkctl_write.py, each case gets two namespaces set up alike: kubectl runs in
one, mkctl in the other, and both must print the same, exit alike and leave the same
objects. Here the deployment and replicaset controllers run (and the disruption
controller, for drain), and a fake kubelet makes each namespace's pods Running and
Ready, so rollouts really progress and budgets really count healthy pods.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from minikube_py.client.rest import Client
from minikube_py.controllers.deployment.controller import DeploymentController
from minikube_py.controllers.disruption import DisruptionController
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.replicaset import ReplicaSetController
from tests.fake_kubelet import FakeKubelet
from tests.test_mkctl import Result, assert_same
from tests.test_mkctl_write import Pair, WriteClis

RunControllers = Callable[..., Awaitable[ControllerManager]]
Obj = dict[str, Any]
VIOLATES_BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture(scope="module")
def clis(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> WriteClis:
    return WriteClis(kubeconfig, tmp_path_factory.mktemp("mkctl-workloads-cache"))


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
        for case in ("rollout history deploy/web", "rollout undo deploy/web --to-revision=3",
                     "rollout pause deploy/web", "rollout pause deploy/web",
                     "rollout restart deploy/web", "rollout undo deploy/web",
                     "rollout resume deploy/web", "rollout resume deploy/web",
                     "set image deploy/web nope=busybox", "set image deploy/web",
                     "set image cm/nothing a=b", "set image deploy/web '*=busybox:1.36' -o name",
                     "set image deploy/web nginx=nginx:1.28 --dry-run=client",
                     "rollout status", "rollout status deploy/nope",
                     "rollout status deploy/web --timeout=soon",
                     "rollout status deploy/web --revision=-1"):
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
        await asyncio.sleep(1)
        expected, actual = await both(pair, "rollout status deploy/web --timeout=2s")
    assert actual.err == expected.err == "error: timed out waiting for the condition\n"
    assert actual.code == expected.code == 1
    assert set(actual.out.splitlines()) == set(expected.out.splitlines()) == {
        'Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been '
        "updated..."}


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
