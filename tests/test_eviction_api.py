"""pods/eviction: a pod is deleted only if its PodDisruptionBudget can spare it, as
upstream's EvictionREST decides, through the official Python client and `kubectl drain`.

No kubelet runs: pods are bound to a Node object made through the API, their status
written through the status subresource, and so is each budget's (as the disruption
controller would). Pods have terminationGracePeriodSeconds 0, so a delete removes them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.controllers.disruption import DisruptionController
from minikube_py.controllers.manager import ControllerManager
from tests.api_helpers import eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
RunControllers = Callable[..., Awaitable[ControllerManager]]
LABELS = {"app": "web"}
VIOLATES_BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."


@pytest.fixture
def core(kubeconfig: Path) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


@pytest.fixture
def policy(kubeconfig: Path) -> Iterator[client.PolicyV1Api]:
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.PolicyV1Api(api_client)
    api_client.close()


@pytest.fixture
def node(core: client.CoreV1Api) -> Iterator[str]:
    """A Node object (no kubelet behind it) for the test's pods to be bound to."""
    name = f"node-{uuid.uuid4().hex[:8]}"
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    yield name
    core.delete_node(name)


def make_pod(core: client.CoreV1Api, namespace: str, name: str, node: str, *,
             phase: str = "Running", ready: bool = True, labels: Obj | None = None,
             grace: int = 0) -> Obj:
    """A pod on `node` whose status says `phase` (and Ready when `ready`)."""
    core.create_namespaced_pod(namespace, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": LABELS if labels is None else labels},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": grace,
                 "containers": [{"name": "app", "image": "busybox:1.36"}]}})
    pod = core.read_namespaced_pod(name, namespace).to_dict()
    flag = "True" if ready else "False"
    status = {"phase": phase,
              "conditions": [{"type": "Ready", "status": flag},
                             {"type": "ContainersReady", "status": flag}]}
    core.replace_namespaced_pod_status(name, namespace, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "resourceVersion": pod["metadata"]["resource_version"]},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox:1.36"}]},
        "status": status})
    return pod


def make_budget(policy: client.PolicyV1Api, namespace: str, name: str, *,
                allowed: int, current: int = 2, desired: int = 1,
                observed: bool = True, selector: Obj | None = None) -> None:
    """A PDB over LABELS (or `selector`); its status, as the disruption controller would
    write it, allows `allowed` disruptions."""
    created = policy.create_namespaced_pod_disruption_budget(namespace, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": desired,
                 "selector": {"matchLabels": LABELS} if selector is None else selector}})
    generation = created.metadata.generation
    policy.replace_namespaced_pod_disruption_budget_status(name, namespace, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "resourceVersion": created.metadata.resource_version},
        "spec": policy.api_client.sanitize_for_serialization(created.spec),
        "status": {"disruptionsAllowed": allowed, "currentHealthy": current,
                   "desiredHealthy": desired, "expectedPods": current,
                   "observedGeneration": generation if observed else generation - 1}})


def budget_status(policy: client.PolicyV1Api, namespace: str, name: str) -> Obj:
    response = policy.read_namespaced_pod_disruption_budget(name, namespace,
                                                            _preload_content=False)
    return json.loads(response.data)["status"]


def eviction(name: str, namespace: str, **delete_options: Any) -> client.V1Eviction:
    return client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        delete_options=client.V1DeleteOptions(**delete_options) if delete_options else None)


def evict(core: client.CoreV1Api, name: str, namespace: str, **options: Any) -> Obj:
    """POST the eviction; the answer's status code and body."""
    try:
        response = core.create_namespaced_pod_eviction(
            name, namespace, eviction(name, namespace, **options), _preload_content=False)
        return {"code": response.status, "body": json.loads(response.data)}
    except ApiException as err:
        return {"code": err.status, "body": json.loads(err.body)}


def pod_names(core: client.CoreV1Api, namespace: str) -> set[str]:
    return {p.metadata.name for p in core.list_namespaced_pod(namespace).items}


def test_official_client_evicts_a_pod_without_a_budget(
        core: client.CoreV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    core.create_namespaced_pod_eviction("web-0", namespace, eviction("web-0", namespace))
    assert pod_names(core, namespace) == set()


def test_a_budget_allowing_one_lets_one_eviction_through_then_answers_429(
        core: client.CoreV1Api, policy: client.PolicyV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    make_pod(core, namespace, "web-1", node)
    make_budget(policy, namespace, "web", allowed=1)

    core.create_namespaced_pod_eviction("web-0", namespace, eviction("web-0", namespace))
    assert pod_names(core, namespace) == {"web-1"}
    status = budget_status(policy, namespace, "web")
    assert status["disruptionsAllowed"] == 0
    assert set(status["disruptedPods"]) == {"web-0"}
    assert status["disruptedPods"]["web-0"].endswith("Z")
    allowed = next(c for c in status["conditions"] if c["type"] == "DisruptionAllowed")
    assert (allowed["status"], allowed["reason"]) == ("False", "InsufficientPods")

    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction("web-1", namespace, eviction("web-1", namespace))
    assert refused.value.status == 429
    body = json.loads(refused.value.body)
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == VIOLATES_BUDGET
    assert body["details"]["causes"] == [{
        "reason": "DisruptionBudget",
        "message": "The disruption budget web needs 1 healthy pods and has 2 currently"}]
    assert pod_names(core, namespace) == {"web-1"}


def test_a_budget_not_yet_observed_answers_429_still_being_processed(
        core: client.CoreV1Api, policy: client.PolicyV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    make_budget(policy, namespace, "web", allowed=1, observed=False)
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction("web-0", namespace, eviction("web-0", namespace))
    assert refused.value.status == 429
    assert refused.value.headers["Retry-After"] == "10"
    body = json.loads(refused.value.body)
    assert body["details"]["causes"][0]["message"] == (
        "The disruption budget web is still being processed by the server.")
    assert pod_names(core, namespace) == {"web-0"}


def test_a_pod_under_two_budgets_is_not_evicted(
        core: client.CoreV1Api, policy: client.PolicyV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    make_budget(policy, namespace, "web", allowed=1)
    make_budget(policy, namespace, "web-too", allowed=1)
    answer = evict(core, "web-0", namespace)
    assert answer["code"] == 500
    assert answer["body"] == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction "
                   "subresource does not support.", "code": 500}
    assert pod_names(core, namespace) == {"web-0"}


@pytest.mark.parametrize("phase", ["Pending", "Succeeded", "Failed"])
def test_a_pending_or_terminal_pod_is_evicted_despite_a_budget_at_zero(
        core: client.CoreV1Api, policy: client.PolicyV1Api, namespace: str, node: str,
        phase: str) -> None:
    make_pod(core, namespace, "web-0", node, phase=phase, ready=False)
    make_budget(policy, namespace, "web", allowed=0)
    core.create_namespaced_pod_eviction("web-0", namespace, eviction("web-0", namespace))
    assert pod_names(core, namespace) == set()
    assert budget_status(policy, namespace, "web")["disruptionsAllowed"] == 0


def test_an_unready_pod_goes_without_taking_from_a_healthy_budget(
        core: client.CoreV1Api, policy: client.PolicyV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node, ready=False)
    make_budget(policy, namespace, "web", allowed=0, current=1, desired=1)
    core.create_namespaced_pod_eviction("web-0", namespace, eviction("web-0", namespace))
    assert pod_names(core, namespace) == set()
    status = budget_status(policy, namespace, "web")
    assert status["disruptionsAllowed"] == 0
    assert "disruptedPods" not in status


def test_an_empty_selector_budget_covers_every_pod_of_its_namespace(
        core: client.CoreV1Api, policy: client.PolicyV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "other", node, labels={"app": "other"})
    make_budget(policy, namespace, "everything", allowed=0, selector={})
    assert evict(core, "other", namespace)["code"] == 429
    assert pod_names(core, namespace) == {"other"}


def test_an_evicted_pod_is_marked_as_a_disruption_target_before_its_grace_period(
        core: client.CoreV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node, grace=30)
    core.create_namespaced_pod_eviction("web-0", namespace, eviction("web-0", namespace))
    pod = core.read_namespaced_pod("web-0", namespace)
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.deletion_grace_period_seconds == 30
    target = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (target.status, target.reason, target.message) == (
        "True", "EvictionByEvictionAPI", "Eviction API: evicting")
    core.delete_namespaced_pod("web-0", namespace, grace_period_seconds=0)


def test_the_name_in_the_eviction_must_be_the_urls(
        core: client.CoreV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction("web-0", namespace, eviction("other", namespace))
    assert refused.value.status == 400
    body = json.loads(refused.value.body)
    assert (body["reason"], body["message"]) == (
        "BadRequest", "name in URL does not match name in Eviction object")
    assert pod_names(core, namespace) == {"web-0"}


def test_evicting_a_missing_pod_is_404(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as missing:
        core.create_namespaced_pod_eviction("ghost", namespace, eviction("ghost", namespace))
    assert missing.value.status == 404
    assert json.loads(missing.value.body)["message"] == 'pods "ghost" not found'


def test_a_dry_run_eviction_changes_nothing(
        core: client.CoreV1Api, policy: client.PolicyV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    make_budget(policy, namespace, "web", allowed=1)
    before = budget_status(policy, namespace, "web")
    core.create_namespaced_pod_eviction("web-0", namespace, eviction("web-0", namespace),
                                        dry_run="All")
    core.create_namespaced_pod_eviction("web-0", namespace,
                                        eviction("web-0", namespace, dry_run=["All"]))
    assert pod_names(core, namespace) == {"web-0"}
    assert budget_status(policy, namespace, "web") == before
    conditions = core.read_namespaced_pod("web-0", namespace).status.conditions
    assert "DisruptionTarget" not in {c.type for c in conditions}


def test_a_stale_uid_precondition_is_a_conflict(
        core: client.CoreV1Api, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    answer = evict(core, "web-0", namespace, preconditions=client.V1Preconditions(uid="nope"))
    assert answer["code"] == 409
    assert pod_names(core, namespace) == {"web-0"}


def test_eviction_answers_201_with_a_success_status(
        apiserver: APIServerProcess, core: client.CoreV1Api, namespace: str,
        node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    body = json.dumps({"apiVersion": "policy/v1beta1", "kind": "Eviction",
                       "metadata": {"name": "web-0", "namespace": namespace}})
    request = urllib.request.Request(
        f"{apiserver.url}/api/v1/namespaces/{namespace}/pods/web-0/eviction",
        data=body.encode(), method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 201
        assert json.loads(answer.read()) == {"kind": "Status", "apiVersion": "v1",
                                             "metadata": {}, "status": "Success", "code": 201}
    assert pod_names(core, namespace) == set()


def test_discovery_lists_pods_eviction_as_a_policy_v1_eviction(kubectl: Kubectl) -> None:
    resources = json.loads(kubectl("get", "--raw", "/api/v1").stdout)["resources"]
    entry = next(r for r in resources if r["name"] == "pods/eviction")
    assert (entry["group"], entry["version"], entry["kind"], entry["verbs"]) == (
        "policy", "v1", "Eviction", ["create"])
    assert kubectl("auth", "can-i", "create", "pods/eviction").stdout.strip() == "yes"


def test_kubectl_drain_evicts_the_nodes_pods(
        core: client.CoreV1Api, kubectl: Kubectl, namespace: str, node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    make_pod(core, namespace, "web-1", node)
    result = kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                     "--force", "--timeout=30s")
    assert f"evicting pod {namespace}/web-0" in result.stderr + result.stdout
    assert f"node/{node} drained" in result.stdout
    assert pod_names(core, namespace) == set()
    assert core.read_node(node).spec.unschedulable is True


def test_kubectl_drain_without_eviction_deletes_the_nodes_pods(
        core: client.CoreV1Api, kubectl: Kubectl, namespace: str, node: str) -> None:
    """--disable-eviction deletes through client-go's typed client, which sends its
    DeleteOptions as protobuf."""
    make_pod(core, namespace, "web-0", node)
    result = kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                     "--force", "--disable-eviction", "--grace-period=0", "--timeout=30s")
    assert f"node/{node} drained" in result.stdout
    assert pod_names(core, namespace) == set()


def test_kubectl_drain_stops_at_a_budget_that_allows_nothing(
        core: client.CoreV1Api, policy: client.PolicyV1Api, kubectl: Kubectl, namespace: str,
        node: str) -> None:
    make_pod(core, namespace, "web-0", node)
    make_budget(policy, namespace, "web", allowed=0)
    result = kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                     "--force", "--timeout=3s", check=False)
    assert result.returncode != 0
    assert VIOLATES_BUDGET in result.stderr
    assert pod_names(core, namespace) == {"web-0"}


async def test_kubectl_drain_evicts_as_far_as_the_disruption_controllers_budget_allows(
        core: client.CoreV1Api, api_client: Client, kubectl: Kubectl, namespace: str,
        node: str, run_controllers: RunControllers) -> None:
    """Three ready pods, minAvailable 2: the controller allows one disruption, drain takes
    one pod, and the controller then allows none, so the drain times out on the rest."""
    await run_controllers(DisruptionController)
    for name in ("web-0", "web-1", "web-2"):
        await asyncio.to_thread(make_pod, core, namespace, name, node)
    budgets = api_client.resource("poddisruptionbudgets", "policy")
    await budgets.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "web"},
                          "spec": {"minAvailable": 2, "selector": {"matchLabels": LABELS}}},
                         namespace)

    async def allowed(count: int) -> Obj | None:
        status = (await budgets.get("web", namespace)).get("status") or {}
        return status if status.get("disruptionsAllowed") == count and status.get(
            "observedGeneration") == 1 and not status.get("disruptedPods") else None

    await eventually(lambda: allowed(1), what="one disruption allowed")
    result = await asyncio.to_thread(
        kubectl, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
        "--timeout=8s", check=False)
    assert result.returncode != 0
    assert VIOLATES_BUDGET in result.stderr
    assert len(await asyncio.to_thread(pod_names, core, namespace)) == 2
    status = await eventually(lambda: allowed(0), what="no disruption allowed after one")
    assert (status["currentHealthy"], status["desiredHealthy"]) == (2, 2)
