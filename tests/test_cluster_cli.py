"""`minikube-py up / status / down` as a new user runs them: real processes, real kubectl."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikube_py.images.catalog import ECHO, build_image
from minikube_py.process import start_ticks
from tests.api_helpers import until

pytestmark = pytest.mark.slow


def launcher(home: Path, *args: str, check: bool = True, timeout: float = 300,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`minikube-py ARGS` in `home`, in `env` (else this process's environment). A run
    past `timeout` fails with what it printed so far (each of `up`'s steps says its
    second), and so does a failed one when `check`."""
    command = f"minikube-py {' '.join(args)}"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "minikube_py.cluster", *args], capture_output=True,
            text=True, timeout=timeout,
            env={**(os.environ if env is None else env), "MINIKUBE_PY_HOME": str(home)})
    except subprocess.TimeoutExpired as expired:
        raise AssertionError(f"{command} still ran after {timeout} s; it printed:\n"
                             f"{_text(expired.stdout)}{_text(expired.stderr)}") from None
    if check and done.returncode != 0:
        raise AssertionError(f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


def _text(output: str | bytes | None) -> str:
    """TimeoutExpired's output: bytes even for a text run, or None."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def pids(home: Path) -> list[int]:
    """Every running component's, a node's included (run/node-N/*.pid)."""
    return [int(f.read_text()) for f in (home / "run").rglob("*.pid")] if (
        home / "run").exists() else []


def component_processes(home: Path) -> dict[int, int | None]:
    """The running components' processes (as `pids`), each with its start (ticks since
    boot): a pid alone names a process only until the kernel hands it out again (a pid
    file of a process gone long ago may name a stranger by now), the pair names one for
    good."""
    return {pid: start_ticks(pid) for pid in pids(home) if alive(pid)}


def outlived(before: dict[int, int | None]) -> list[int]:
    """The processes of `component_processes(...)` that still run: the same pid, started at the
    same tick."""
    return [pid for pid, start in before.items() if alive(pid) and start_ticks(pid) == start]


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:  # gone, even between the two looks
        return False


def kubectl(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    command = Path(sys.executable).with_name("kubectl")
    return subprocess.run([str(command), f"--kubeconfig={home / 'kubeconfig'}", *args],
                          capture_output=True, text=True, timeout=180, check=check)


def network_prefix() -> str:
    """The prefix of the node network the cluster tests' `up` builds: the lane's
    MINIKUBE_PY_NETWORK_PREFIX (tests/conftest.py), else mk-."""
    return os.environ.get("MINIKUBE_PY_NETWORK_PREFIX") or "mk-"


def node_network() -> ipaddress.IPv4Network:
    """The range of that node network: the lane's MINIKUBE_PY_NODE_NETWORK, else mk-'s."""
    return ipaddress.IPv4Network(os.environ.get("MINIKUBE_PY_NODE_NETWORK")
                                 or "172.18.0.0/24")


def in_node(node: str, *command: str) -> str:
    """A command's output in the node's network namespace."""
    return subprocess.run(["nsenter", f"--net=/var/run/netns/{network_prefix()}{node}",
                           *command],
                          capture_output=True, text=True, timeout=30, check=True).stdout


def answer_from_here(url: str, timeout: float = 60) -> str:
    """The page at `url`, fetched from this machine once it answers (a Service's rules
    reach the proxies a moment after the Service); `timeout` bounds a failure only."""
    deadline = time.monotonic() + timeout
    while True:
        fetched = subprocess.run(["busybox", "wget", "-q", "-O-", url], capture_output=True,
                                 text=True, timeout=30)
        if fetched.returncode == 0 or time.monotonic() > deadline:
            return fetched.stdout + fetched.stderr
        time.sleep(0.5)


def mounts_and_processes(home: Path) -> list[str]:
    """The mounts and the processes whose command lines name `home`."""
    marker = str(home)
    found = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
             if marker in line]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(f"process {entry.name}")
            except OSError:
                continue
    return found


def host_network() -> tuple[list[str], list[str], list[str]]:
    """This machine's network namespaces, links and routes, a line each."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True,
                                text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "route", "show"], capture_output=True, text=True).stdout
    return namespaces.splitlines(), links.splitlines(), routes.splitlines()


def leftovers(home: Path) -> list[str]:
    """Processes and mounts of the cluster in `home`, and the node network (namespaces,
    links, routes through a node), if any survived."""
    namespaces, links, routes = host_network()
    prefix, network = network_prefix(), node_network()
    return (mounts_and_processes(home) + [line for line in namespaces
                                          if line.startswith(prefix)]
            + [line for line in links if f": {prefix}" in line]
            + [line for line in routes if " via " in line
               and ipaddress.ip_address(line.split(" via ")[1].split()[0]) in network])


# The pods a new user starts, with readiness probes: Ready then means answering.
ECHO_POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: web-{node}, labels: {{run: web-{node}}}}}
spec:
  nodeName: {node}
  containers:
  - name: web
    image: localhost/echo:1.0
    ports: [{{containerPort: 8080}}]
    readinessProbe: {{httpGet: {{path: /, port: 8080}}, periodSeconds: 1}}
"""
NGINX_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: nginx, labels: {app: nginx}}
spec:
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports: [{containerPort: 80}]
        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 1}
"""


def test_up_starts_every_component_and_down_purge_leaves_nothing(fast_tmp: Path) -> None:
    home = fast_tmp / "launcher-home"
    try:
        # the processes layout: this test counts and kills each component's process
        # (tests/e2e/test_kubeadm_layout.py checks the default, kubeadm's)
        started = launcher(home, "up", "--nodes", "2", "--layout", "processes")
        assert f"export KUBECONFIG={home / 'kubeconfig'}" in started.stdout
        assert "node-2: 172.18.0.12 (network namespace mk-node-2)" in started.stdout
        again = launcher(home, "up")  # idempotent: nothing is started twice
        assert again.returncode == 0 and "node-2/kubelet: already running" in again.stdout
        refused = launcher(home, "up", "--nodes", "3", check=False)
        assert refused.returncode == 1 and "runs with 2 nodes" in refused.stderr
        running = pids(home)
        # the control plane, DNS, metrics, the trace receiver, 3 per node, and the
        # supervisor (the local-path provisioner and the gateway controller are
        # Deployments' pods)
        assert len(running) == 15 and all(alive(pid) for pid in running)
        assert ("local-path-provisioner, gateway-controller: applied (Deployments in "
                "kube-system") in started.stdout
        kubectl(home, "wait", "--for=condition=Ready", "node", "--all", "--timeout=120s")
        for deployment in ("local-path-provisioner", "gateway-controller"):
            kubectl(home, "rollout", "status", f"deployment/{deployment}", "-n",
                    "kube-system", "--timeout=180s")
        status = launcher(home, "status")
        for component in ("registry", "etcd", "tracing", "apiserver", "controller-manager",
                          "scheduler", "dns", "metrics",
                          "node-1/containerd",
                          "node-1/kubelet",
                          "node-1/proxy",
                          "node-2/containerd", "node-2/kubelet", "node-2/proxy"):
            assert re.search(rf"^{component}: running \(pid \d+\), ready$", status.stdout,
                             re.M), status.stdout
        # the two pods are the local-path provisioner's and the gateway controller's
        listed = re.search(r"nodes: 2\n  node-1: Ready, (\d+) pods\n  node-2: Ready, (\d+) pods",
                           status.stdout)
        assert listed is not None and sum(map(int, listed.groups())) == 2, status.stdout
        kubelet_log = launcher(home, "logs", "kubelet", "--node", "node-2")
        written = (home / "logs" / "node-2" / "kubelet.log").read_text()
        assert kubelet_log.stdout and written.startswith(kubelet_log.stdout)
        which = launcher(home, "logs", "kubelet", check=False)
        assert which.returncode == 1 and "say which with --node (node-1, node-2)" in (
            which.stderr)
        unknown = launcher(home, "logs", "kubelet-x", check=False)
        assert unknown.returncode == 1 and "no component named 'kubelet-x'" in unknown.stderr
        on_host = launcher(home, "logs", "apiserver", "--node", "node-1", check=False)
        assert on_host.returncode == 1 and "runs on the host" in on_host.stderr
        # a component that dies is started again by the supervisor
        assert "supervisor: running" in status.stdout
        crashed = int((home / "run" / "scheduler.pid").read_text())
        os.kill(crashed, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            again = launcher(home, "status", check=False).stdout
            restarted = re.search(r"^scheduler: running \(pid (\d+)\), ready$", again, re.M)
            if restarted and int(restarted.group(1)) != crashed:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the scheduler was not restarted: {again}")
        assert "scheduler is running again" in (home / "logs" / "supervisor.log").read_text()
        assert "kube-system" in kubectl(home, "get", "namespaces").stdout
        # a new user's first pods: one on each node, each answering from this machine
        # (Ready once its readiness probe answers: without one, Ready means started,
        # not yet listening)
        pods = fast_tmp / "launcher-pods.yaml"
        pods.write_text("---\n".join(ECHO_POD.format(node=node) for node in ("node-1", "node-2")))
        kubectl(home, "apply", "-f", str(pods))
        for node in ("node-1", "node-2"):
            kubectl(home, "wait", "--for=condition=Ready", f"pod/web-{node}", "--timeout=120s")
            pod_ip = kubectl(home, "get", "pod", f"web-{node}", "-o",
                             "jsonpath={.status.podIP}").stdout
            # each node's pod CIDR is a 10.244.N.0/24 no route of this machine used at the
            # first `up` (another test's node may hold 10.244.2.0/24): the node says which
            pod_cidr = kubectl(home, "get", "node", node, "-o",
                               "jsonpath={.spec.podCIDR}").stdout
            assert ipaddress.ip_address(pod_ip) in ipaddress.ip_network(pod_cidr), (
                node, pod_ip, pod_cidr)
            assert pod_cidr.startswith("10.244."), (node, pod_cidr)
            answer = subprocess.run(["busybox", "wget", "-q", "-O-",
                                     f"http://{pod_ip}:8080/"],
                                    capture_output=True, text=True, timeout=10)
            assert f"web-{node}" in answer.stdout
        # a tutorial's image name: pulled from the cluster's registry
        nginx = fast_tmp / "launcher-nginx.yaml"
        nginx.write_text(NGINX_DEPLOYMENT)
        kubectl(home, "apply", "-f", str(nginx))
        kubectl(home, "wait", "--for=condition=Available", "deployment/nginx",
                "--timeout=120s")
        nginx_ip = kubectl(home, "get", "pods", "-l", "app=nginx", "-o",
                           "jsonpath={.items[0].status.podIP}").stdout
        page = subprocess.run(["busybox", "wget", "-q", "-O-", f"http://{nginx_ip}/"],
                              capture_output=True, text=True, timeout=10)
        assert "Welcome to nginx!" in page.stdout
        # the Service by name, from a pod on each node: cluster DNS at 10.96.0.10 (on this
        # machine), then that node's proxy's rules
        kubectl(home, "expose", "deployment", "nginx", "--port=80")
        for node in ("node-1", "node-2"):
            kubectl(home, "run", f"client-{node}", "--image=busybox:1.36", "--restart=Never",
                    f"--overrides={{\"spec\": {{\"nodeName\": \"{node}\"}}}}", "--",
                    # until the name resolves and the node's proxy has the Service's rules
                    "sh", "-c", "until wget -qO- http://nginx; do sleep 1; done")
        for node in ("node-1", "node-2"):
            kubectl(home, "wait", "--for=jsonpath={.status.phase}=Succeeded",
                    f"pod/client-{node}", "--timeout=120s")
            assert "Welcome to nginx!" in kubectl(home, "logs", f"client-{node}").stdout
            assert "KUBE-SVC-" in in_node(node, "iptables-save", "-t", "nat")
        # and its ClusterIP from this machine, routed through node-1
        cluster_ip = kubectl(home, "get", "service", "nginx", "-o",
                             "jsonpath={.spec.clusterIP}").stdout
        assert "Welcome to nginx!" in answer_from_here(f"http://{cluster_ip}/")
        # a LoadBalancer Service gets an address that answers from this machine
        kubectl(home, "expose", "deployment", "nginx", "--type=LoadBalancer", "--name=lb",
                "--port=8000", "--target-port=80")
        kubectl(home, "wait", "--for=jsonpath={.status.loadBalancer.ingress[0].ip}",
                "service/lb", "--timeout=120s")
        address = kubectl(home, "get", "service", "lb", "-o",
                          "jsonpath={.status.loadBalancer.ingress[0].ip}").stdout
        assert address.startswith("172.18.255.")
        # once node-1's proxy has programmed the address
        assert "Welcome to nginx!" in answer_from_here(f"http://{address}:8000/")
        # an image archive goes to the registry on the bridge and into every node (a
        # node of `up` loads only pause at its start: echo's archive is built here)
        archive = build_image(ECHO, fast_tmp / "archives").path
        loaded = launcher(home, "image", "load", str(archive))
        assert "pushed localhost/echo:1.0 to 172.18.0.1:" in loaded.stdout, loaded.stdout
        assert "loaded localhost/echo:1.0 into node node-2" in loaded.stdout
    finally:
        running = component_processes(home)
        launcher(home, "down", "--purge", check=False)
    assert not home.exists()
    assert outlived(running) == []
    assert leftovers(home) == []
    stopped = launcher(home, "status", check=False)
    assert stopped.returncode == 1 and "controller-manager: stopped" in stopped.stdout
    nothing = launcher(home, "down")  # down on nothing: says so, exits 0
    assert "no cluster to stop" in nothing.stdout


def test_simulated_nodes_join_the_real_one_and_leave_with_down(fast_tmp: Path) -> None:
    home = fast_tmp / "launcher-hollow"
    try:
        launcher(home, "up", "--simulated-nodes", "3", "--layout", "processes")  # as above
        for node in ("node-1", "hollow-node-0", "hollow-node-1", "hollow-node-2"):
            kubectl(home, "wait", "--for=condition=Ready", f"node/{node}", "--timeout=120s")
        status = launcher(home, "status")
        assert re.search(r"^hollow-nodes: running \(pid \d+\), ready$", status.stdout, re.M)
        assert "nodes: 4" in status.stdout
        # the local-path provisioner's pod runs on the real node only (its node affinity):
        # with node-1 cordoned, a new one waits rather than land on a hollow node
        provisioner = ("-n", "kube-system", "-l", "app=local-path-provisioner")
        kubectl(home, "rollout", "status", "deployment/local-path-provisioner", "-n",
                "kube-system", "--timeout=180s")
        assert kubectl(home, "get", "pods", *provisioner, "-o",
                       "jsonpath={.items[*].spec.nodeName}").stdout == "node-1"
        kubectl(home, "cordon", "node-1")
        kubectl(home, "delete", "pods", *provisioner, "--wait=true")

        def unschedulable() -> dict[str, str] | None:
            pods = json.loads(kubectl(home, "get", "pods", *provisioner, "-o", "json").stdout)
            return next((c for pod in pods["items"]
                         for c in (pod.get("status") or {}).get("conditions") or []
                         if c["type"] == "PodScheduled" and c["status"] == "False"), None)

        condition = until(unschedulable, "the new provisioner pod found no node", timeout=120)
        assert condition["reason"] == "Unschedulable", condition
        assert "3 node(s) didn't satisfy plugin(s) [NodeAffinity]" in condition["message"], (
            condition)
        kubectl(home, "uncordon", "node-1")
        kubectl(home, "wait", "--for=condition=Ready", "pods", *provisioner, "--timeout=120s")
        assert kubectl(home, "get", "pods", *provisioner, "-o",
                       "jsonpath={.items[*].spec.nodeName}").stdout == "node-1"
        again = launcher(home, "up")  # remembered: the same hollow nodes, nothing new
        assert again.returncode == 0
        assert "hollow-nodes: running" in launcher(home, "status").stdout
        refused = launcher(home, "up", "--simulated-nodes", "-1", check=False)
        assert refused.returncode == 1 and "--simulated-nodes must be 0 or more" in (
            refused.stderr)
        # kill -9 of everything, as a crash of the machine's session would: `up` cleans
        # up what the dead node left and starts it all again
        crashed = pids(home)
        for pid in crashed:
            os.kill(pid, signal.SIGKILL)
        recovered = launcher(home, "up")
        assert "node-1/kubelet: ready" in recovered.stdout, recovered.stdout
        assert not set(crashed) & set(pids(home))
        kubectl(home, "wait", "--for=condition=Ready", "node/node-1", "--timeout=120s")
        kubectl(home, "run", "after-crash", "--image=busybox:1.36", "--restart=Never",
                '--overrides={"spec": {"nodeName": "node-1"}}', "--", "true")  # not hollow
        kubectl(home, "wait", "--for=jsonpath={.status.phase}=Succeeded",
                "pod/after-crash", "--timeout=120s")
    finally:
        running = component_processes(home)
        launcher(home, "down", "--purge", check=False)
    assert outlived(running) == []
    assert leftovers(home) == []


def test_a_second_home_leaves_a_running_clusters_network_alone(fast_tmp: Path) -> None:
    """The node network's names are fixed by its prefix, so two homes would share one:
    `up` in a second home refuses while the first home's cluster runs, before it writes
    anything, and `down` in it stops short of the first cluster's network."""
    from minikube_py.cluster.cli import DEFAULT_PORTS, NETWORK_OWNERS

    if os.geteuid() != 0:
        pytest.skip("the node network needs root")
    first, second = fast_tmp / "owner-home", fast_tmp / "second-home"
    (first / "run").mkdir(parents=True)
    (first / "run" / "apiserver.pid").write_text(f"{os.getpid()}\n")  # a live process
    NETWORK_OWNERS.mkdir(parents=True, exist_ok=True)
    owners = {prefix: NETWORK_OWNERS / f"{prefix}owner" for prefix in ("mk-", "mkq-")}
    saved = {prefix: path.read_text() if path.exists() else None
             for prefix, path in owners.items()}
    try:
        for path in owners.values():
            path.write_text(f"{first.resolve()}\n")
        refused = launcher(second, "up", "--nodes", "1", check=False)
        assert refused.returncode == 1
        assert refused.stderr == (
            f"error: the node network mk-* is the network of the cluster in "
            f"{first.resolve()}, which is running: stop it first "
            f"(MINIKUBE_PY_HOME={first.resolve()} minikube-py down)\n")
        assert not second.exists() or not any(second.iterdir())
        second.mkdir(exist_ok=True)
        (second / "cluster.json").write_text(json.dumps({
            "network": {"prefix": "mkq-", "nodeNetwork": "172.31.250.0/24"},
            "podCIDRs": {"node-1": "10.251.1.0/24"}, "nodes": 1, "ports": DEFAULT_PORTS}))
        stopped = launcher(second, "down", check=False)
        assert f"left the node network mkq-* alone: it is the network of the cluster in " \
               f"{first.resolve()}, which is running" in stopped.stdout, stopped
        assert owners["mkq-"].read_text().strip() == str(first.resolve())
    finally:
        for prefix, path in owners.items():
            if saved[prefix] is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(saved[prefix])
