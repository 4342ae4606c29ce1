"""computePodActions: what the kubelet decides to do for a pod, given the runtime's state."""

from __future__ import annotations

import pytest

from minikube_py.kubelet.pod_actions import compute_pod_actions, container_hash
from minikube_py.kubelet.podstate import ContainerRecord, PodRuntimeStatus, SandboxRecord


def pod(restart_policy: str = "Always", init: tuple[str, ...] = (),
        containers: tuple[str, ...] = ("app",)) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"restartPolicy": restart_policy,
                     "initContainers": [{"name": n, "image": "i"} for n in init],
                     "containers": [{"name": n, "image": "i"} for n in containers]}}


def runtime(*containers: ContainerRecord, sandbox_ready: bool = True,
            sandbox: bool = True) -> PodRuntimeStatus:
    status = PodRuntimeStatus(uid="u1")
    if sandbox:
        status.sandboxes.append(SandboxRecord("s1", 0, sandbox_ready, 1.0, ip="10.0.0.2"))
    status.containers = sorted(containers, key=lambda c: c.attempt, reverse=True)
    return status


def running(name: str, attempt: int = 0, spec: dict | None = None) -> ContainerRecord:
    return ContainerRecord(f"{name}-{attempt}", name, attempt, "running", float(attempt),
                           hash=container_hash(spec) if spec else "")


def exited(name: str, code: int, attempt: int = 0) -> ContainerRecord:
    return ContainerRecord(f"{name}-{attempt}", name, attempt, "exited", float(attempt),
                           exit_code=code)


def no_failure(name: str) -> None:
    return None


def actions(p: dict, status: PodRuntimeStatus, liveness=no_failure):
    return compute_pod_actions(p, status, liveness_failure=liveness, startup_failure=no_failure)


def test_new_pod_creates_a_sandbox_and_starts_every_container():
    result = actions(pod(containers=("a", "b")), runtime(sandbox=False))
    assert result.create_sandbox and result.sandbox_attempt == 0
    assert [c["name"] for c in result.containers_to_start] == ["a", "b"]
    assert not result.kill_pod


def test_new_pod_with_init_containers_starts_only_the_first_init_container():
    result = actions(pod(init=("i1", "i2")), runtime(sandbox=False))
    assert result.next_init_container["name"] == "i1"
    assert result.containers_to_start == []


@pytest.mark.parametrize(("records", "expected_next"), [
    ((running("i1"),), None),                       # the first one still runs: wait
    ((exited("i1", 0),), "i2"),                     # done: the next one
    ((exited("i1", 0), exited("i2", 1)), "i2"),     # failed: run it again (Always)
])
def test_init_containers_run_one_at_a_time_in_order(records, expected_next):
    result = actions(pod(init=("i1", "i2")), runtime(*records))
    name = result.next_init_container["name"] if result.next_init_container else None
    assert name == expected_next
    assert result.containers_to_start == []


def test_failed_init_container_of_a_never_pod_fails_the_pod():
    result = actions(pod("Never", init=("i1",)), runtime(exited("i1", 2)))
    assert result.init_failed and result.kill_pod
    assert result.next_init_container is None


def test_app_containers_start_once_every_init_container_succeeded():
    result = actions(pod(init=("i1",)), runtime(exited("i1", 0)))
    assert [c["name"] for c in result.containers_to_start] == ["app"]


@pytest.mark.parametrize(("policy", "code", "restarts"), [
    ("Always", 0, True), ("Always", 1, True),
    ("OnFailure", 0, False), ("OnFailure", 1, True),
    ("Never", 0, False), ("Never", 1, False),
])
def test_exited_container_restarts_by_restart_policy(policy, code, restarts):
    result = actions(pod(policy), runtime(exited("app", code)))
    assert bool(result.containers_to_start) == restarts
    # nothing left running and nothing to start: the sandbox is stopped
    assert result.kill_pod == (not restarts)


def test_liveness_failure_kills_and_restarts_the_container():
    p = pod()
    record = running("app", spec=p["spec"]["containers"][0])
    result = actions(p, runtime(record), liveness=lambda name: "Container app failed liveness")
    assert [k.record.id for k in result.containers_to_kill] == [record.id]
    assert [c["name"] for c in result.containers_to_start] == ["app"]


def test_liveness_failure_of_a_never_pod_kills_without_restart():
    p = pod("Never")
    result = actions(p, runtime(running("app")), liveness=lambda name: "failed")
    assert len(result.containers_to_kill) == 1 and result.containers_to_start == []


def test_changed_container_spec_replaces_the_container():
    p = pod()
    record = running("app", spec={"name": "app", "image": "old"})
    result = actions(p, runtime(record))
    assert "definition changed" in result.containers_to_kill[0].message


def test_running_container_with_same_spec_is_kept():
    p = pod()
    result = actions(p, runtime(running("app", spec=p["spec"]["containers"][0])))
    assert not (result.containers_to_kill or result.containers_to_start or result.kill_pod)


def test_dead_sandbox_is_recreated_with_the_next_attempt():
    result = actions(pod(), runtime(exited("app", 137), sandbox_ready=False))
    assert result.create_sandbox and result.sandbox_attempt == 1 and result.kill_pod


def test_never_pod_whose_containers_ran_does_not_get_a_new_sandbox():
    result = actions(pod("Never"), runtime(exited("app", 0), sandbox_ready=False))
    assert not result.create_sandbox and result.containers_to_start == []
