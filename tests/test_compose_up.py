"""`docker-compose up` for real, with Debian's Docker engine (docker.io 20.10) and
docker-compose (1.29): the base image made here (compose/debian-base.sh: debootstrap and
`docker import`), `docker-compose build` and `up -d`; then, with the real kubectl on the
kubeconfig the stack writes to compose/kubeconfig: the control-plane node and both
workers Ready, kube-system as kubeadm's cluster lists it (the control plane's static
pods on the control-plane node, kube-proxy on every node, coredns, the local-path
provisioner) with every pod running, an nginx Deployment with a pod on each worker, its
Service answering by DNS name from pods, `kubectl exec` and `logs`, a claim of the
default StorageClass bound to a volume a pod writes to; then `docker-compose down` (the
volumes kept) and `up -d` again, after which the same Deployment serves again; and
`docker-compose down -v` leaving no container, network, volume, network namespace or
iptables rule of the stack.

The cold and the warm `up -d` are timed by benchmarks/cluster_up.py's own function (its
--compose mode measures the same two, more times); the times are printed.

Each phase's time is printed (run with -s to see it): the base image and the build are
cached by Docker (the base image by its recipe's hash), so a run after the first builds
only the layers the code changed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.cluster_up import timed_compose_up
from minikube_py.cluster.compose import host_cas_in_build_context
from tests.docker_engine import (
    HostNetwork,
    docker,
    docker_engine,
    namespaces,
)
from tests.e2e.helpers import until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "mkpy-compose-test"
KUBECONFIG = ROOT / "compose" / "kubeconfig" / "admin.conf"
KUBECTL = Path(sys.executable).with_name("kubectl")
NODES = ("node-1", "node-2")
CONTROL_PLANE = "control-plane"
STATIC_PODS = {f"{name}-{CONTROL_PLANE}" for name in
               ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")}

NGINX = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: nginx, labels: {app: nginx}}
spec:
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
         labelSelector: {matchLabels: {app: nginx}}}
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports: [{containerPort: 80}]
        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 1}
"""


CLAIM = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  nodeSelector: {kubernetes.io/hostname: node-2}
  restartPolicy: Never
  containers:
  - name: writer
    image: busybox:1.36
    command: [sh, -c, "echo kept > /data/file && cat /data/file"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data}}
"""


def kube_system() -> dict[str, tuple[str, str]]:
    """kube-system's pods: name -> (node, phase); the node is "" until the pod is bound."""
    listed = kubectl("get", "pods", "-n", "kube-system", "-o", "jsonpath={range .items[*]}"
                     "{.metadata.name} {.spec.nodeName} {.status.phase}{'\\n'}{end}").stdout
    return {name: (node, phase) for name, node, phase in
            (line.split(" ") for line in listed.splitlines() if line.strip())}


def kube_system_runs_as_kubeadms() -> bool:
    """The static pods' mirrors on the control-plane node, a kube-proxy pod on each of the
    three nodes, coredns and the local-path provisioner, every pod Running."""
    pods = kube_system()
    proxies = sorted(node for name, (node, _) in pods.items() if name.startswith("kube-proxy-"))
    return (all(pods.get(name, ("", ""))[0] == CONTROL_PLANE for name in STATIC_PODS)
            and proxies == sorted((CONTROL_PLANE, *NODES))
            and any(name.startswith("coredns-") for name in pods)
            and any(name.startswith("local-path-provisioner-") for name in pods)
            and all(phase == "Running" for _, phase in pods.values()))


def serves_from_shell() -> bool:
    """Whether `kubectl exec shell -- wget` gets nginx's page through its Service."""
    try:
        page = kubectl("exec", "shell", "--", "wget", "-qO-",
                       "http://nginx.default.svc.cluster.local", check=False, timeout=60)
    except subprocess.TimeoutExpired:
        return False
    return page.returncode == 0 and "Welcome to nginx!" in page.stdout


def privileged_possible() -> bool:
    """Whether this host's capability bounding set has every capability its kernel knows,
    which Docker gives a privileged container."""
    status = Path("/proc/self/status").read_text()
    bounding = int(next(line.split()[1] for line in status.splitlines()
                        if line.startswith("CapBnd:")), 16)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    return bounding & ((1 << (last + 1)) - 1) == (1 << (last + 1)) - 1


def compose_files() -> list[str]:
    """docker-compose.yml, and compose/unprivileged-nodes.yml where privileged fails."""
    files = [ROOT / "docker-compose.yml"]
    if not privileged_possible():
        files.append(ROOT / "compose" / "unprivileged-nodes.yml")
    return [flag for file in files for flag in ("-f", str(file))]


def compose(*args: str, timeout: float = 600, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["docker-compose", "-p", PROJECT, *compose_files(), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if check and done.returncode != 0:
        raise AssertionError(f"docker-compose {' '.join(args)} failed:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def kubectl(*args: str, check: bool = True, timeout: float = 180
            ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(KUBECTL), f"--kubeconfig={KUBECONFIG}", *args],
                          capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
    return done


def ours(kind: str) -> list[str]:
    """The stack's containers, networks or volumes, as Docker lists them by its label."""
    listed = docker(kind, "ls", *(["-a"] if kind == "container" else []), "-q", "--filter",
                    f"label=com.docker.compose.project={PROJECT}").stdout
    return listed.split()


def phase(times: dict[str, float], name: str, started: float) -> float:
    times[name] = time.monotonic() - started
    print(f"compose test: {name} took {times[name]:.0f} s", flush=True)
    return time.monotonic()


def test_docker_compose_up_runs_a_cluster_and_down_leaves_nothing(fast_tmp: Path) -> None:
    times: dict[str, float] = {}
    with docker_engine(fast_tmp / "dockerd.log"):
        before, spaces = HostNetwork.now(), namespaces()
        started = time.monotonic()
        subprocess.run([str(ROOT / "compose" / "debian-base.sh")], check=True, timeout=900,
                       capture_output=True, env={**os.environ, "DOCKER": "/usr/bin/docker"})
        started = phase(times, "base image", started)
        with host_cas_in_build_context():
            compose("build", timeout=1800)
        started = phase(times, "docker-compose build", started)
        KUBECONFIG.unlink(missing_ok=True)
        try:
            timed_compose_up(PROJECT)
            started = phase(times, "cold up -d until every node is Ready", started)
            until(kube_system_runs_as_kubeadms, "kube-system runs as kubeadm's does", 300)
            started = phase(times, "every kube-system pod running", started)
            nginx = fast_tmp / "nginx.yaml"
            nginx.write_text(NGINX)
            kubectl("apply", "-f", str(nginx))
            kubectl("rollout", "status", "deployment/nginx", "--timeout=300s")
            placed = kubectl("get", "pods", "-l", "app=nginx", "-o",
                             "jsonpath={.items[*].spec.nodeName}").stdout.split()
            assert sorted(placed) == list(NODES)
            kubectl("expose", "deployment", "nginx", "--port=80")
            # by name from a pod on node-1 (its logs), and from one on node-2 (exec)
            kubectl("run", "client", "--image=busybox:1.36", "--restart=Never",
                    '--overrides={"spec": {"nodeName": "node-1"}}', "--",
                    "sh", "-c", "until wget -qO- http://nginx; do sleep 1; done")
            kubectl("run", "shell", "--image=busybox:1.36",
                    '--overrides={"spec": {"nodeName": "node-2"}}', "--", "sleep", "3600")
            kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/client",
                    "--timeout=180s")
            assert "Welcome to nginx!" in kubectl("logs", "client").stdout
            kubectl("wait", "--for=condition=Ready", "pod/shell", "--timeout=180s")
            page = kubectl("exec", "shell", "--", "wget", "-qO-",
                           "http://nginx.default.svc.cluster.local")
            assert "Welcome to nginx!" in page.stdout
            # the default StorageClass: the local-path provisioner makes node-2's volume once
            # the scheduler has placed the pod (WaitForFirstConsumer: a nodeSelector, not a
            # nodeName, which would skip the scheduler and leave the claim Pending)
            claim = fast_tmp / "claim.yaml"
            claim.write_text(CLAIM)
            kubectl("apply", "-f", str(claim))
            kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/writer",
                    "--timeout=180s")
            assert kubectl("logs", "writer").stdout == "kept\n"
            assert kubectl("get", "pvc", "data", "-o",
                           "jsonpath={.status.phase}").stdout == "Bound"
            started = phase(times, "the workload checks", started)
            compose("down", timeout=600)  # the containers go; the volumes (etcd's) stay
            timed_compose_up(PROJECT)
            started = phase(times, "warm up -d until every node is Ready", started)
            # The pods' status still shows them Ready at their old addresses until each
            # kubelet has started them again and reported it (as after a node reboot):
            # wait until the Service answers from the shell pod.
            until(serves_from_shell, "nginx's Service answers the shell pod again", 300)
            started = phase(times, "the same Deployment serving again", started)
        finally:
            logs = compose("logs", "--no-color", timeout=120, check=False)
            (fast_tmp / "compose.log").write_text(logs.stdout + logs.stderr)
            compose("down", "-v", "--timeout", "30", timeout=600)
            phase(times, "down -v", started)
            KUBECONFIG.unlink(missing_ok=True)
            # the images earlier builds left untagged (they carry the base image's label)
            docker("image", "prune", "-f", "--filter", "label=org.minikube-py.recipe")
        assert (ours("container"), ours("network"), ours("volume")) == ([], [], [])
        assert namespaces() - spaces == set()
        assert HostNetwork.now().changed_since(before) == [], "the stack's rules stayed"
    print(f"compose test: {times}", flush=True)
