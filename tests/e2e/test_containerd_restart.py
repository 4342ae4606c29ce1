"""A node's containerd killed in a running cluster: the supervisor starts it again, and the
node's pods run on untouched (the same containers, processes and IPs, Ready throughout,
no restart). Then `down` still leaves nothing behind: no shim, mount, namespace or link.

The cluster is the lane's shared one (lane_cluster), and this module is the last to use it
(tests/conftest.py sorts it there): it ends the cluster itself, with the `down` it checks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from minikube_py.process import start_ticks
from tests.api_helpers import until
from tests.e2e.conftest import LaneCluster
from tests.e2e.helpers import read_log_from
from tests.test_cluster_cli import alive, component_processes, kubectl, outlived

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
POD = """
apiVersion: v1
kind: Pod
metadata: {name: steady}
spec:
  nodeSelector: {kubernetes.io/hostname: node-1}
  containers:
  - name: echo
    image: localhost/echo:1.0
    ports: [{containerPort: 8080}]
    # probes every second, each failure acted on at once: a runtime call that failed
    # while containerd was down and counted as a failed probe would show
    livenessProbe: {exec: {command: ["true"]}, periodSeconds: 1, failureThreshold: 1}
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1, failureThreshold: 1}
"""
SEEN = ('jsonpath={.status.podIP} {.status.containerStatuses[0].containerID} '
        '{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].ready}'
        '{"\\n"}')


def task_pids(home: Path) -> dict[str, int]:
    """Container id -> the pid of its process, as node-1's containerd lists its tasks."""
    listed = subprocess.run(
        ["ctr", "--address", str(home / "nodes" / "node-1" / "containerd.sock"),
         "--namespace", "k8s.io", "tasks", "ls"],
        capture_output=True, text=True, timeout=30, check=True).stdout
    return {line.split()[0]: int(line.split()[1]) for line in listed.splitlines()[1:]}


def test_a_killed_containerd_is_restarted_and_its_pods_run_on_untouched(
        lane_cluster: LaneCluster) -> None:
    with lane_cluster.namespaces(__name__, "containerd-restart") as view:
        killed_and_restarted(lane_cluster, view)


def killed_and_restarted(lane_cluster: LaneCluster, view: Path) -> None:
    """`home` is the cluster's (its nodes, logs and pid files), `view` the kubeconfig's
    folder that works in the module's namespace."""
    home = lane_cluster.home
    subprocess.run([KUBECTL, f"--kubeconfig={view / 'kubeconfig'}", "apply", "-f", "-"],
                   input=POD, capture_output=True, text=True, check=True, timeout=60)
    kubectl(view, "wait", "--for=condition=Ready", "pod/steady", "--timeout=60s")
    before = kubectl(view, "get", "pod", "steady", "-o", SEEN).stdout.strip()
    pod_ip, container_id, restarts, ready = before.split()
    assert (restarts, ready) == ("0", "true")
    tasks = task_pids(home)
    assert container_id.removeprefix("containerd://") in tasks
    # what node-1's kubelet and the supervisor log from here on (the modules before
    # this one logged on the same cluster)
    kubelet_log = home / "logs" / "node-1" / "kubelet.log"
    supervisor_log = home / "logs" / "supervisor.log"
    kubelet_logged, supervisor_logged = (kubelet_log.stat().st_size,
                                         supervisor_log.stat().st_size)

    # every status the pod has from now on, as a watch sees it
    watch = subprocess.Popen(
        [KUBECTL, f"--kubeconfig={view / 'kubeconfig'}", "get", "pod", "steady",
         "--watch", "--output-watch-events=false", "-o", SEEN],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        pid_file = home / "run" / "node-1" / "containerd.pid"
        killed = int(pid_file.read_text())
        os.kill(killed, signal.SIGKILL)
        until(lambda: not alive(killed), "containerd to exit", 15, interval=0.2)

        def restarted() -> bool:
            try:
                pid = int(pid_file.read_text())
            except (OSError, ValueError):
                return False
            return pid != killed and alive(pid)

        until(restarted, "the supervisor to start containerd again", 60, interval=0.2)

        def exec_answers() -> bool:
            """kubectl exec: API server -> kubelet -> CRI Exec on the new containerd."""
            answer = subprocess.run(
                [KUBECTL, f"--kubeconfig={view / 'kubeconfig'}", "exec", "steady", "--",
                 "echo", "through"], capture_output=True, text=True, timeout=60)
            return answer.returncode == 0 and answer.stdout == "through\n"

        until(exec_answers, "the kubelet to exec through the new containerd", 60,
              interval=0.2)
        page = urllib.request.urlopen(f"http://{pod_ip}:8080/", timeout=5).read()
        assert page.decode() == f"pod=steady ip={pod_ip}\n"
        after = kubectl(view, "get", "pod", "steady", "-o", SEEN).stdout.strip()
    finally:
        watch.terminate()
        watched, _ = watch.communicate(timeout=30)

    assert after == before
    assert all(line == before for line in watched.split("\n") if line), watched
    assert task_pids(home) == tasks  # the same containers, the same processes
    supervised = read_log_from(supervisor_log, supervisor_logged)
    assert "node-1/containerd is running again" in supervised
    # at most one line that containerd was gone (none if no call fell in the gap),
    # one that it was back for each, and no traceback
    logged = read_log_from(kubelet_log, kubelet_logged)
    lost = logged.count("is unavailable, reconnecting")
    assert lost <= 1 and logged.count("answers again") == lost
    assert "Traceback" not in logged
    events = json.loads(kubectl(view, "get", "events", "--field-selector",
                                "involvedObject.name=steady", "-o", "json").stdout)
    reasons = [(event["reason"], event["message"]) for event in events["items"]]
    assert not [(reason, message) for reason, message in reasons
                if reason in ("Killing", "SandboxChanged", "BackOff", "Failed")
                or "probe failed" in message], reasons

    # down still removes it all: the pod's shims and mounts went with the node (stop()
    # runs `down --purge` and asserts that nothing of the cluster is left)
    running = component_processes(home) | {pid: start_ticks(pid) for pid in tasks.values()}
    lane_cluster.stop()
    assert outlived(running) == []
