"""Horizontal pod autoscaling on a real cluster: the resource consumer's pods burn CPU,
the kubelet reports it, the metrics server serves it as metrics.k8s.io, and the HPA
controller scales the Deployment, as upstream's test/e2e/autoscaling drives it.

One cluster for the module, its HPA periods shortened by `up --extra-config` (a sync
every 2 s, a 10 s downscale stabilization, a 10 s CPU initialization period) and its
metrics scraped every 2 s, so that each case takes seconds where upstream's take minutes.
The Deployments of the behavior cases are made with the cluster, so that their pods have
run long enough for metrics by the time their cases start. Load is driven as upstream's
ResourceConsumer drives it: POST /ConsumeCPU to the consumers' Service (from a pod of
the cluster's), sent again each time a request's duration ends, until the case stops it.

Upstream's behavior cases size load in "replicas": usageForReplicas(n) is the CPU of
n - 0.5 pods at the target (HPA rounds up), with the same request (here 200m where
upstream has 500m: this machine has 2 cores) and target (25%).

The cluster also runs the cluster autoscaler (`up --autoscale-nodes 0:2`), its periods
shortened too (a scan every 2 s, a node unneeded for 20 s goes): a pod that fits no node
makes it add a network-namespace node, and the node goes with its namespace and veth
once the pod does. It runs as its own user, cluster-autoscaler, with upstream's roles.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.helpers import apply, get, until
from tests.test_cluster_cli import kubectl, launcher

pytestmark = pytest.mark.slow

IMAGE = "localhost/resource-consumer:1.0"
SYNC_PERIOD = 2.0
DOWNSCALE_STABILIZATION = 10.0
EXTRA_CONFIG = (
    f"controller-manager.horizontal-pod-autoscaler-sync-period={SYNC_PERIOD:.0f}s",
    f"controller-manager.horizontal-pod-autoscaler-downscale-stabilization="
    f"{DOWNSCALE_STABILIZATION:.0f}s",
    "controller-manager.horizontal-pod-autoscaler-cpu-initialization-period=10s",
    "metrics.metric-resolution=2s",
    "cluster-autoscaler.scan-interval=2s",
    "cluster-autoscaler.scale-down-unneeded-time=20s",
    "cluster-autoscaler.scale-down-delay-after-add=10s",
)
AUTOSCALE_NODES = "0:2"

POD_CPU_REQUEST = 200  # millicores: upstream's 500m, scaled to a 2-core machine
TARGET_PERCENT = 25  # upstream's targetCPUUtilizationPercent
LIMIT_WINDOW = 15  # seconds: upstream's limitWindowLength of 1 minute, shortened


def usage_for_replicas(replicas: int) -> int:
    """usageForReplicas: the millicores of `replicas` - 0.5 pods at the target."""
    per_replica = POD_CPU_REQUEST * TARGET_PERCENT // 100
    return replicas * per_replica - per_replica // 2


def consumer(name: str, replicas: int, cpu_request: int) -> str:
    """A Deployment of resource consumers and the Service in front of them.

    Each pod is Ready once its server answers, not when its container starts: the HPA
    trusts a new pod's CPU from a metric window after it turned Ready, and the CPU a
    starting Python spends before it listens (a second of a loaded machine) would
    otherwise count as load: 50m more on one of three pods of 100m under 125m of load
    reads 58%, past the target's tolerance, and asks for a fourth."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: consumer
        image: {IMAGE}
        ports: [{{containerPort: 8080}}]
        resources: {{requests: {{cpu: {cpu_request}m, memory: 32Mi}}}}
        readinessProbe: {{httpGet: {{path: /Metrics, port: 8080}}, periodSeconds: 1}}
---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  selector: {{app: {name}}}
  ports: [{{port: 8080}}]
"""


def behavior_hpa(name: str, behavior: str) -> str:
    """CreateCPUHorizontalPodAutoscalerWithBehavior: CPU at 25%, 1 to 10 pods."""
    return f"""
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: {name}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {{name: cpu, target: {{type: Utilization, averageUtilization: {TARGET_PERCENT}}}}}
  behavior: {behavior}
"""


@pytest.fixture(scope="module")
def cluster(fast_tmp: Path) -> Iterator[Path]:
    home = fast_tmp / "autoscaling"
    config = [flag for setting in EXTRA_CONFIG for flag in ("--extra-config", setting)]
    try:
        launcher(home, "up", *config, f"--autoscale-nodes={AUTOSCALE_NODES}")
        launcher(home, "image", "build", IMAGE)
        apply(home, consumer("web", 1, 100) + "---" + consumer("steady", 3, POD_CPU_REQUEST)
              + "---" + consumer("limited", 1, POD_CPU_REQUEST))
        kubectl(home, "run", "load", f"--image={IMAGE}", "--command", "--", "sleep", "36000")
        for name in ("web", "steady", "limited"):
            kubectl(home, "rollout", "status", f"deployment/{name}", "--timeout=120s")
        kubectl(home, "wait", "--for=condition=Ready", "pod/load", "--timeout=120s")
        yield home
    finally:
        launcher(home, "down", "--purge", check=False)


def ready_replicas(home: Path, name: str) -> int:
    """The Deployment's replicas, once all of them are ready (else -1)."""
    status = get(home, "deployment", name)
    wanted = status["spec"]["replicas"]
    return wanted if (status["status"].get("readyReplicas") or 0) == wanted else -1


def condition(hpa: Any, kind: str) -> dict[str, str]:
    return next((c for c in (hpa.get("status") or {}).get("conditions") or []
                 if c["type"] == kind), {})


NOT_DELIVERED = 3
POST = f"""
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(urllib.request.Request('{{url}}', method='POST'), timeout=5).read()
except urllib.error.URLError as error:
    sys.exit({NOT_DELIVERED} if isinstance(error.reason, ConnectionRefusedError) else 4)
"""
"""One ConsumeCPU request from the load pod; exit status NOT_DELIVERED when the
connection was refused (the request reached no consumer), 4 when it may have."""


class Load:
    """rc.ConsumeCPU(millicores): keep `millicores` burning behind a Service, one request
    at a time, each sent again when its duration ends; `stop()` sends no more (the one
    burning ends within its duration). The requests come from the module's `load` pod,
    as upstream's come from its resource-consumer controller pod: only through the
    cluster, so the module needs no route from the host to the Services."""

    DURATION = 5  # seconds per request

    def __init__(self, home: Path, service: str) -> None:
        self.home = home
        self.url = f"http://{service}:8080"
        self.millicores = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def consume_cpu(self, millicores: int) -> None:
        self.millicores = millicores
        if not self.thread.is_alive():
            self.thread.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            if self.millicores > 0:
                query = f"millicores={self.millicores}&durationSec={self.DURATION}"
                sent = kubectl(self.home, "exec", "load", "--", "python3", "-c",
                               POST.format(url=f"{self.url}/ConsumeCPU?{query}"), check=False)
                if sent.returncode == NOT_DELIVERED:  # refused: a pod going away, again
                    self.stopped.wait(0.5)
                    continue
                # else sent, or perhaps sent: a request that timed out on a busy machine
                # may be burning already, and a second one now would double the load
            self.stopped.wait(self.DURATION)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=30)


@pytest.fixture
def load(cluster: Path) -> Iterator[Callable[[str], Load]]:
    started: list[Load] = []

    def start(service: str) -> Load:
        started.append(Load(cluster, service))
        return started[-1]

    yield start
    for each in started:
        each.stop()


RESCALED = re.compile(r"^I(\d{4} \d\d:\d\d:\d\d\.\d{6}) .*Successfully rescaled HPA "
                      r"(\S+) from (\d+) to (\d+)")


def rescales(home: Path, hpa: str) -> list[tuple[datetime, int, int]]:
    """The controller-manager's log lines of the HPA's scales: when, from, to."""
    found = []
    log = kubectl(home, "logs", "-n", "kube-system", "kube-controller-manager-control-plane")
    for line in log.stdout.splitlines():
        match = RESCALED.match(line)
        if match and match.group(2) == f"default/{hpa}":
            found.append((datetime.strptime(match.group(1), "%m%d %H:%M:%S.%f"),
                          int(match.group(3)), int(match.group(4))))
    return found


def test_kubectl_autoscale_scales_a_deployment_up_under_load_and_down_after_it(
        cluster: Path, load: Callable[[str], Load]) -> None:
    kubectl(cluster, "autoscale", "deployment", "web", "--cpu-percent=50", "--min=1",
            "--max=5")

    def targets() -> str:
        row = kubectl(cluster, "get", "hpa", "web", "--no-headers").stdout.split()
        shown = " ".join(row[2:4])  # "cpu: 1%/50%"
        return shown if re.fullmatch(r"cpu: \d+%/50%", shown) else ""
    until(targets, "`kubectl get hpa` to show the pods' CPU in TARGETS")

    # 125m on pods of 100m at 50%: 2.5 pods' worth, three pods. As upstream's e2e
    # (EnsureDesiredReplicasInRange(firstScale, firstScale + 1)), one more on the way is
    # within what the load promises: a consumer starved by a busy machine catches up on
    # the CPU it owes, as upstream's consume-cpu does, and a 2 s metric window can read
    # that burst (one run scaled 1 -> 4 -> 3). So: three ready pods with the HPA wanting
    # three, and never more than four.
    web = load("web")
    web.consume_cpu(125)

    def settled_at_three() -> dict[str, Any] | None:
        hpa = get(cluster, "hpa", "web")
        return hpa if (ready_replicas(cluster, "web") == 3
                       and hpa["status"].get("desiredReplicas") == 3) else None
    hpa = until(settled_at_three, "three ready pods, the HPA wanting three", timeout=120)
    utilization = hpa["status"]["currentMetrics"][0]["resource"]["current"]
    assert utilization["averageUtilization"] > 0

    # Its SuccessfulRescale event is not required here: with a 2 s sync, the warnings of
    # the minute before the metrics server's first scrape can use up the event spam
    # filter's burst for this HPA (25 per object, as upstream's), which then drops it.
    # The controller-manager's log line of each scale is checked below.

    # The downscale stabilization window is test_hpa_controller's to check, on metrics it
    # sets: timed from here it has no anchor, for a consumer starved by a busy machine may
    # have burnt nothing for seconds before it is stopped (one run scaled down 9.1 s after
    # this stop, with a 10 s window).
    web.stop()
    until(lambda: ready_replicas(cluster, "web") == 1, "a scale back to one pod", timeout=120)
    sizes = [new for _, _, new in rescales(cluster, "web")]
    assert max(sizes) in (3, 4) and 3 in sizes and sizes[-1] == 1, sizes
    until(lambda: get(cluster, "hpa", "web")["status"]["currentReplicas"] == 1,
          "the HPA's status to count one pod")


def test_with_scale_down_disabled_it_does_not_scale_down(
        cluster: Path, load: Callable[[str], Load]) -> None:
    """Upstream's "with autoscaling disabled shouldn't scale down": three pods, usage for
    one, scaleDown.selectPolicy Disabled. Here the wait ends when the HPA says why it kept
    three pods: it recommends fewer, and ScalingLimited is ScaleDownLimit."""
    apply(cluster, behavior_hpa("steady", "{scaleDown: {selectPolicy: Disabled}}"))
    steady = load("steady")
    steady.consume_cpu(usage_for_replicas(1))

    def limited() -> bool:
        hpa = get(cluster, "hpa", "steady")
        return condition(hpa, "ScalingLimited").get("reason") == "ScaleDownLimit"
    until(limited, "the HPA to hold three pods against a lower recommendation")
    hpa = get(cluster, "hpa", "steady")
    limit = condition(hpa, "ScalingLimited")
    assert (limit["status"], limit["message"]) == (
        "True", "the desired replica count is decreasing faster than the maximum scale rate")
    assert hpa["status"]["desiredReplicas"] == 3
    assert get(cluster, "deployment", "steady")["spec"]["replicas"] == 3
    assert rescales(cluster, "steady") == []


def test_with_scale_up_limited_to_one_pod_per_window_it_adds_one_at_a_time(
        cluster: Path, load: Callable[[str], Load]) -> None:
    """Upstream's "should scale up no more than given number of Pods per minute": one pod,
    usage for three, a Pods policy of 1 per window: 1 -> 2 at once, 2 -> 3 only after the
    window (the controller-manager's log gives when each scale was decided)."""
    apply(cluster, behavior_hpa(
        "limited", "{scaleUp: {selectPolicy: Max, stabilizationWindowSeconds: 0, "
                   f"policies: [{{type: Pods, value: 1, periodSeconds: {LIMIT_WINDOW}}}]}}}}"))
    limited = load("limited")
    limited.consume_cpu(usage_for_replicas(3))
    until(lambda: ready_replicas(cluster, "limited") == 3, "three ready pods", timeout=120)
    scales = rescales(cluster, "limited")
    assert [(old, new) for _, old, new in scales] == [(1, 2), (2, 3)]
    waited_for_3 = (scales[1][0] - scales[0][0]).total_seconds()
    assert waited_for_3 > LIMIT_WINDOW, waited_for_3


OVERFLOW = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: overflow}
spec:
  replicas: 1
  selector: {matchLabels: {app: overflow}}
  template:
    metadata: {labels: {app: overflow}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox
        command: [sleep, "36000"]
        resources: {requests: {cpu: 1500m, memory: 16Mi}}
"""
"""1.5 of a node's 2 cores: node-1, which runs the module's consumers, has no room for
it, and the control-plane node is tainted."""


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


def link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def autoscaler_kubeconfig(home: Path) -> str:
    """The --kubeconfig the running cluster autoscaler was started with."""
    pid = (home / "run" / "cluster-autoscaler.pid").read_text().split()[0]
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return next(argument.removeprefix("--kubeconfig=") for argument in arguments
                if argument.startswith("--kubeconfig="))


def test_the_cluster_autoscaler_runs_as_its_own_user(cluster: Path) -> None:
    """Not the admin: the user cluster-autoscaler, which upstream's roles bind."""
    command = Path(sys.executable).with_name("kubectl")
    whoami = subprocess.run([str(command), f"--kubeconfig={autoscaler_kubeconfig(cluster)}",
                             "auth", "whoami", "-o", "json"],
                            capture_output=True, text=True, timeout=60, check=True)
    user = json.loads(whoami.stdout)["status"]["userInfo"]
    assert user["username"] == "cluster-autoscaler", user
    assert "system:masters" not in user.get("groups", []), user


def test_the_cluster_autoscaler_adds_a_node_for_a_pod_that_fits_none_and_removes_it_after(
        cluster: Path) -> None:
    prefix = json.loads((cluster / "cluster.json").read_text())["network"]["prefix"]
    apply(cluster, OVERFLOW)
    try:
        def running_pod() -> Any:
            pods = get(cluster, "pods", "-l", "app=overflow")["items"]
            return next((pod for pod in pods if pod["status"].get("phase") == "Running"),
                        None)
        pod = until(running_pod, "the pod to run on a node the autoscaler added", 120)
        name = pod["metadata"]["name"]
        node_name = pod["spec"]["nodeName"]
        assert re.fullmatch(r"autoscaled-\d+", node_name), node_name
        node = get(cluster, "node", node_name)
        assert node["metadata"]["labels"]["autoscaler.minikube-py.io/node-group"] == (
            "autoscaled")
        assert condition(node, "Ready")["status"] == "True"
        index = node_name.rpartition("-")[2]
        namespace, veth = f"{prefix}{node_name}", f"{prefix}a{index}"
        pod_cidr = ipaddress.ip_network(node["spec"]["podCIDR"])
        assert namespace in ip("netns", "list").split()
        assert link_exists(veth)

        def triggered() -> list[dict[str, Any]]:
            return get(cluster, "events", "--field-selector",
                       f"involvedObject.name={name},reason=TriggeredScaleUp")["items"]
        [event] = until(triggered, "the TriggeredScaleUp event on the pod")
        assert re.fullmatch(r"pod triggered scale-up: \[\{autoscaled \d+->\d+ "
                            r"\(max: 2\)\}\]", event["message"]), event["message"]

        def status() -> Any:
            """The status the autoscaler writes each loop, once it counts the node."""
            written = yaml.safe_load(get(cluster, "configmap", "-n", "kube-system",
                                         "cluster-autoscaler-status")["data"]["status"])
            [group] = written["nodeGroups"]
            return written if group["health"]["nodeCounts"]["registered"]["ready"] else None
        written = until(status, "the cluster-autoscaler-status ConfigMap to count the node")
        assert written["autoscalerStatus"] == "Running"
        [group] = written["nodeGroups"]
        assert (group["name"], group["health"]["minSize"], group["health"]["maxSize"]) == (
            "autoscaled", 0, 2)
    finally:
        kubectl(cluster, "delete", "deployment", "overflow", "--ignore-not-found")

    def removed() -> bool:
        names = kubectl(cluster, "get", "nodes", "-o", "name").stdout.split()
        return f"node/{node_name}" not in names
    # 20 s unneeded, then drained and removed; nothing else of the module needs the node
    until(removed, f"{node_name} to be removed once its pod is gone", 120)
    until(lambda: namespace not in ip("netns", "list").split(),
          f"the network namespace {namespace} to go")
    assert not link_exists(veth)
    routes = [line.split()[0] for line in ip("-4", "route").splitlines()]
    assert str(pod_cidr) not in routes, routes
    assert not (cluster / "nodes" / node_name).exists()
    assert node_name not in json.loads((cluster / "autoscaled.json").read_text())

