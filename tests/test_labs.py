"""The controller lab (labs/controller) as students run it: a subprocess against a real cluster.

The ReplicaSet and Deployment controllers, the garbage collector and FakeKubelet play the
rest of the cluster, so replicas become ready and the lab's report has numbers to follow.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.deployment.controller import DeploymentController
from minikube_py.controllers.garbagecollector import GarbageCollector
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.replicaset import ReplicaSetController
from tests.api_helpers import configmap, eventually
from tests.fake_kubelet import FakeKubelet

RunControllers = Callable[..., Awaitable[ControllerManager]]
LAB_CONTROLLER = (Path(__file__).resolve().parents[1] / "labs" / "controller"
                  / "deployment_controller.py")
SAFETY_TIMEOUT = 60  # seconds: the lab stops by itself even if a test never stops it


class Lab:
    """The running lab program and every line it printed so far (stdout and stderr)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            self.lines.append(line.decode().rstrip("\n"))

    async def printed(self, line: str, timeout: float = 15) -> None:
        async def seen() -> bool:
            return line in self.lines
        await eventually(seen, timeout, what=f"the lab to print {line!r}; it printed "
                         f"{self.lines}")

    async def stop(self) -> int:
        """SIGTERM, as a service manager stops it; returns the exit status."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            status = await self.process.wait()
        await self.reader
        return status


@asynccontextmanager
async def run_lab(kubeconfig: Path, namespace: str, *extra: str) -> AsyncIterator[Lab]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(LAB_CONTROLLER), f"--kubeconfig={kubeconfig}",
        f"--namespace={namespace}", *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    lab = Lab(process)
    try:
        yield lab
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def deployment(name: str, replicas: int) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                         {"name": "app", "image": "localhost/echo:1"}]}}}}


def report_says(replicas: int, ready: int) -> dict[str, str]:
    return {"replicas": str(replicas), "readyReplicas": str(ready),
            "availableReplicas": str(ready), "images": "localhost/echo:1"}


async def wait_for_report(api_client: Client, namespace: str, name: str,
                          data: dict[str, str]) -> Obj:
    configmaps = api_client.resource("configmaps")

    async def matches() -> Obj | None:
        try:
            report = await configmaps.get(name, namespace)
        except NotFound:
            return None
        return report if report.get("data") == data else None
    return await eventually(matches, 20, what=f"ConfigMap {name} to say {data}")


async def test_lab_reports_a_deployment_follows_its_scale_and_is_collected_with_it(
        api_client: Client, kubeconfig: Path, namespace: str,
        run_controllers: RunControllers) -> None:
    await run_controllers(ReplicaSetController, DeploymentController, GarbageCollector)
    deployments = api_client.resource("deployments")
    configmaps = api_client.resource("configmaps")
    key = f"{namespace}/web"
    async with FakeKubelet(api_client, namespace), \
            run_lab(kubeconfig, namespace, f"--timeout={SAFETY_TIMEOUT}") as lab:
        await lab.printed("Caches synced; starting 4 workers")
        web = await deployments.create(deployment("web", 2), namespace)

        report = await wait_for_report(api_client, namespace, "web-report", report_says(2, 2))
        assert report["metadata"]["ownerReferences"] == [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
            "uid": web["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]

        await deployments.patch("web", {"spec": {"replicas": 3}}, namespace)
        await wait_for_report(api_client, namespace, "web-report", report_says(3, 3))

        await configmaps.delete("web-report", namespace)  # the lab writes it again
        rewritten = await wait_for_report(api_client, namespace, "web-report",
                                          report_says(3, 3))
        assert rewritten["metadata"]["uid"] != report["metadata"]["uid"]

        await deployments.delete("web", namespace)

        async def report_collected() -> bool:
            try:
                await configmaps.get("web-report", namespace)
            except NotFound:
                return True
            return False
        await eventually(report_collected, 20, what="the garbage collector to delete the report")
        await lab.printed(f"Deployment {key} no longer exists")
        assert await lab.stop() == 0

    for line in (f"Deployment ADDED: {key}", f"Deployment UPDATED: {key}",
                 f"Deployment DELETED: {key}", f"Reconciling deployment {key} (replicas: 2)",
                 f"Reconciling deployment {key} (replicas: 3)",
                 f"Created ConfigMap {namespace}/web-report",
                 f"Updated ConfigMap {namespace}/web-report"):
        assert line in lab.lines


async def test_lab_never_overwrites_a_configmap_it_does_not_own(
        api_client: Client, kubeconfig: Path, namespace: str) -> None:
    configmaps = api_client.resource("configmaps")
    await configmaps.create(configmap("web-report", {"mine": "yes"}), namespace)
    async with run_lab(kubeconfig, namespace, f"--timeout={SAFETY_TIMEOUT}") as lab:
        await lab.printed("Caches synced; starting 4 workers")
        await api_client.resource("deployments").create(deployment("web", 2), namespace)
        error = (f"Error reconciling deployment {namespace}/web: "
                 'configmaps "web-report" already exists')
        await lab.printed(error)
        assert (await configmaps.get("web-report", namespace))["data"] == {"mine": "yes"}

        await configmaps.delete("web-report", namespace)  # the retry with backoff then wins
        await wait_for_report(api_client, namespace, "web-report", report_says(2, 0))
        assert await lab.stop() == 0


async def test_lab_stops_by_itself_after_its_timeout(kubeconfig: Path, namespace: str) -> None:
    async with run_lab(kubeconfig, namespace, "--timeout=1") as lab:
        async with asyncio.timeout(10):
            assert await lab.process.wait() == 0
        await lab.reader
    assert "Caches synced; starting 4 workers" in lab.lines
