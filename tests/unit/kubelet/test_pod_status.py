"""generateAPIPodStatus: phase, conditions and container statuses from the runtime's state."""

from __future__ import annotations

import pytest

from minikube_py.kubelet.pod_status import StatusInputs, generate_pod_status
from minikube_py.kubelet.podstate import ContainerRecord, PodRuntimeStatus, SandboxRecord


def pod(policy: str = "Always", containers=("app",), init=(), status=None) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"restartPolicy": policy,
                     "initContainers": [{"name": n, "image": "busybox"} for n in init],
                     "containers": [{"name": n, "image": "busybox"} for n in containers]},
            "status": status or {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "True"}]}}


def record(name: str, state: str, code: int = 0, attempt: int = 0) -> ContainerRecord:
    return ContainerRecord(f"{name}{attempt}", name, attempt, state, 100.0 + attempt,
                           started_at=101.0 + attempt,
                           finished_at=102.0 + attempt if state == "exited" else 0.0,
                           exit_code=code, image_ref="sha256:abc", restart_count=attempt)


def runtime(*records: ContainerRecord, ready: bool = True) -> PodRuntimeStatus:
    status = PodRuntimeStatus(uid="u1", sandboxes=[SandboxRecord("s", 0, ready, 1.0,
                                                                 ip="10.244.0.5")])
    status.containers = sorted(records, key=lambda r: r.attempt, reverse=True)
    return status


def generate(p: dict, status: PodRuntimeStatus, **kwargs) -> dict:
    return generate_pod_status(p, status, StatusInputs(node_ips=["192.168.1.2"],
                                                       now=lambda: 200.0, **kwargs))


def conditions(status: dict) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


@pytest.mark.parametrize(("policy", "records", "phase"), [
    ("Always", (), "Pending"),
    ("Always", (record("app", "running"),), "Running"),
    ("Always", (record("app", "exited", 0),), "Running"),      # will be restarted
    ("OnFailure", (record("app", "exited", 0),), "Succeeded"),
    ("OnFailure", (record("app", "exited", 1),), "Running"),   # will be restarted
    ("Never", (record("app", "exited", 0),), "Succeeded"),
    ("Never", (record("app", "exited", 3),), "Failed"),
])
def test_phase_follows_container_states_and_restart_policy(policy, records, phase):
    assert generate(pod(policy), runtime(*records))["phase"] == phase


def test_running_pod_reports_ip_host_ip_qos_and_ready_conditions():
    status = generate(pod(), runtime(record("app", "running")))
    assert status["podIP"] == "10.244.0.5" and status["podIPs"] == [{"ip": "10.244.0.5"}]
    assert status["hostIP"] == "192.168.1.2" and status["qosClass"] == "BestEffort"
    assert conditions(status) == {"PodScheduled": "True", "PodReadyToStartContainers": "True",
                                  "Initialized": "True", "ContainersReady": "True",
                                  "Ready": "True"}
    app = status["containerStatuses"][0]
    assert app["state"] == {"running": {"startedAt": "1970-01-01T00:01:41Z"}}
    assert app["ready"] and app["started"] and app["containerID"] == "containerd://app0"
    assert app["imageID"] == "sha256:abc"


def test_readiness_probe_failure_makes_the_pod_not_ready():
    status = generate(pod(), runtime(record("app", "running")), is_ready=lambda name: False)
    assert conditions(status)["Ready"] == "False"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "ContainersNotReady"
    assert ready["message"] == "containers with unready status: [app]"


def test_crash_loop_shows_waiting_reason_with_last_terminated_state():
    status = generate(pod(), runtime(record("app", "exited", 1, attempt=2)),
                      waiting={"app": ("CrashLoopBackOff", "back-off 20s restarting")})
    app = status["containerStatuses"][0]
    assert app["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert app["lastState"]["terminated"]["exitCode"] == 1
    assert app["lastState"]["terminated"]["reason"] == "Error"
    assert app["restartCount"] == 2 and status["phase"] == "Running"


def test_restarted_container_keeps_the_previous_instance_as_last_state():
    status = generate(pod(), runtime(record("app", "exited", 137, 0),
                                     record("app", "running", attempt=1)))
    app = status["containerStatuses"][0]
    assert "running" in app["state"] and app["restartCount"] == 1
    assert app["lastState"]["terminated"]["exitCode"] == 137


def test_pending_init_container_leaves_pod_pending_and_not_initialized():
    status = generate(pod(init=("setup",)), runtime(record("setup", "running")))
    assert status["phase"] == "Pending"
    initialized = next(c for c in status["conditions"] if c["type"] == "Initialized")
    assert initialized["status"] == "False"
    assert initialized["message"] == "containers with incomplete status: [setup]"
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"


def test_failed_init_container_of_a_never_pod_fails_the_pod():
    status = generate(pod("Never", init=("setup",)), runtime(record("setup", "exited", 1)))
    assert status["phase"] == "Failed"


def test_terminal_phase_never_changes_back():
    finished = pod("Never", status={"phase": "Succeeded"})
    assert generate(finished, runtime(record("app", "running")))["phase"] == "Succeeded"


def test_completed_pod_is_not_ready_with_reason_pod_completed():
    status = generate(pod("Never"), runtime(record("app", "exited", 0), ready=False))
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")


def test_deleted_pod_ends_succeeded_or_failed_by_exit_codes():
    assert generate(pod(), runtime(record("app", "exited", 0)),
                    terminating=True)["phase"] == "Succeeded"
    assert generate(pod(), runtime(record("app", "exited", 143)),
                    terminating=True)["phase"] == "Failed"


def test_unchanged_condition_keeps_its_transition_time():
    first = generate(pod(), runtime(record("app", "running")))
    again = generate(pod(status=first), runtime(record("app", "running")))
    assert first["conditions"] == again["conditions"]


def test_image_pull_error_is_the_waiting_reason():
    status = generate(pod(), runtime(), waiting={"app": ("ErrImagePull", "rpc error: x")})
    assert status["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "ErrImagePull", "message": "rpc error: x"}}
    assert status["phase"] == "Pending"
