"""Benchmark: failover of `minikube-py up --ha`'s control plane (issue 30's targets).

Run from the repository root as root: `.venv/bin/python benchmarks/failover.py`
(options: --trials N (20), --home PATH: an `up --ha` cluster of yours, else a scratch
one is made and removed; --only etcd|apiserver|takeover (repeatable): those trials
alone, so that a run fits a shorter slot; --quick: 1 trial each; --no-append). A
scratch cluster is built on the node network `up` chooses: the default one (mk-br0,
mk-control-plane*, mk-node-1 on 172.18.0.0/24, the default ports), so not beside another
cluster there, or the one MINIKUBE_PY_NETWORK_PREFIX and MINIKUBE_PY_NODE_NETWORK name.
A cluster's addresses, namespaces and ports are read from its cluster.json.

Each trial kills one component's process with SIGKILL, as a crash would, found by its
node's network namespace and its command line (what `crictl inspect` shows as its pid):

    etcd leader        (its member by `etcdctl endpoint status`), while a client creates
                       ConfigMaps through haproxy back to back: the time from the kill to
                       the first write, sent after it, that succeeded.
                       Target: p99 <= 2 s. Where it went: until a surviving member
                       names a new leader (each member's Status asked every 20 ms: the
                       election), and from then to that write's answer.
    one API server     (round robin over the nodes), while the official Python client
                       and kubectl each send requests through haproxy in a loop, for 5 s
                       after the kill: a request that fails is retried once, and counted
                       failed when the retry fails too. Target: 0 failed.
    active scheduler   killed together (each the holder of its Lease in kube-system,
    and controller-    found by the identity its pod logs): the time from the kill until
    manager            another holds each Lease (the new holder's acquireTime); a pod
                       created after the kill is bound, and a Deployment scaled to 3
                       gets exactly 3 pods (a watch from before the scale sees 3
                       created). Target: <= 15 s (upstream's lease duration).

After each trial the killed pod is brought back at once by rewriting its manifest with a
new annotation (a new static pod, as `kubeadm upgrade` rewrites them), instead of
waiting out the kubelet's CrashLoopBackOff (10 s, doubling to 5 minutes), and the next
trial waits until every etcd member is healthy and every API server ready again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import aiohttp  # noqa: E402
import grpc  # noqa: E402
import yaml  # noqa: E402

from benchmarks.apiserver import BenchmarkError, percentile, progress  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.apiserver.storage.etcd import EtcdTLS  # noqa: E402
from minikube_py.client.kubeconfig import load_kubeconfig  # noqa: E402
from minikube_py.cluster.kubeadm.ha import CONTROL_PLANES  # noqa: E402
from minikube_py.cluster.kubeadm.init import manifest_dir  # noqa: E402
from minikube_py.cluster.netns import NETNS_DIR, ClusterNetwork  # noqa: E402
from minikube_py.gen.etcd import rpc_pb2, rpc_pb2_grpc  # noqa: E402
from minikube_py.images.components import COMPONENTS  # noqa: E402

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
ETCD_WRITES_P99 = 2.0
TAKEOVER_SECONDS = 15.0
CLIENT_LOOP_AFTER_KILL = 5.0
WRITE_EVERY = 0.05
ELECTION_POLL = 0.02
RESTART_ANNOTATION = "minikube-py.io/failover-restart"
PARTS = ("etcd", "apiserver", "takeover")
LEASES = {"kube-scheduler": "kube-scheduler",
          "kube-controller-manager": "kube-controller-manager"}


def launcher(home: Path, *args: str, timeout: float = 900) -> str:
    done = subprocess.run([sys.executable, "-m", "minikube_py.cluster", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "MINIKUBE_PY_HOME": str(home)})
    if done.returncode != 0:
        raise BenchmarkError(f"minikube-py {' '.join(args)} failed: "
                             f"{(done.stdout + done.stderr).strip()[-2000:]}")
    return done.stdout


@dataclass(frozen=True)
class HACluster:
    """An `up --ha` cluster seen from this machine: its nodes, etcd, processes, Leases."""

    home: Path

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    def saved(self) -> dict[str, Any]:
        """cluster.json: the node network and the ports `up` chose for this cluster."""
        return json.loads((self.home / "cluster.json").read_text())

    def network(self) -> ClusterNetwork:
        """The cluster's node network (its prefix, its range, haproxy's gateway)."""
        network = self.saved()["network"]
        return ClusterNetwork(network["prefix"], network["nodeNetwork"])

    def port(self, name: str) -> int:
        """A port of the cluster's (`apiserver`: each API server's and haproxy's,
        `etcd-client`, `etcd-peer`: each member's)."""
        return int(self.saved()["ports"][name])

    def nodes(self) -> dict[str, str]:
        """control-plane node -> its address."""
        network = self.network()
        return {name: network.control_plane("", name, number).address
                for number, name in enumerate(CONTROL_PLANES, 1)}

    def kubectl(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, f"--kubeconfig={self.kubeconfig}", *args],
                              capture_output=True, text=True, timeout=timeout)

    def etcdctl(self, *args: str) -> str:
        """etcdctl against every member, as the API server's etcd client."""
        pki = self.home / "pki"
        port = self.port("etcd-client")
        endpoints = ",".join(f"https://{address}:{port}" for address in self.nodes().values())
        done = subprocess.run(
            ["etcdctl", f"--endpoints={endpoints}", f"--cacert={pki / 'etcd' / 'ca.crt'}",
             f"--cert={pki / 'apiserver-etcd-client.crt'}",
             f"--key={pki / 'apiserver-etcd-client.key'}", "--command-timeout=2s",
             "--dial-timeout=1s", *args],
            capture_output=True, text=True, timeout=20, env={**os.environ, "ETCDCTL_API": "3"})
        return done.stdout

    def etcd_members(self) -> list[dict[str, Any]]:
        """`etcdctl endpoint status` of each member that answers: its endpoint, its
        member id, the leader it knows."""
        try:
            statuses = json.loads(self.etcdctl("endpoint", "status", "-w", "json") or "[]")
        except json.JSONDecodeError:
            return []
        return [{"endpoint": status["Endpoint"],
                 "member": status["Status"]["header"]["member_id"],
                 "leader": status["Status"]["leader"],
                 "term": status["Status"]["raftTerm"]} for status in statuses]

    def etcd_term(self) -> int:
        """The highest raft term a member reports: it grows with each election."""
        return max((member["term"] for member in self.etcd_members()), default=0)

    def etcd_leader(self) -> str | None:
        """The node whose member every answering member names as leader."""
        return self.etcd_leader_and_term()[0]

    def etcd_leader_and_term(self) -> tuple[str | None, int]:
        """etcd_leader() and etcd_term(), from one `endpoint status`."""
        members = self.etcd_members()
        return self._leader(members), max((member["term"] for member in members), default=0)

    def _leader(self, members: list[dict[str, Any]]) -> str | None:
        leaders = {member["leader"] for member in members}
        if len(members) < len(CONTROL_PLANES) or len(leaders) != 1:
            return None
        leader = leaders.pop()
        endpoint = next((m["endpoint"] for m in members if m["member"] == leader), "")
        return next((name for name, address in self.nodes().items()
                     if f"//{address}:" in endpoint), None)

    def etcd_healthy(self) -> int:
        """How many members answer `endpoint health` (a quorum read each)."""
        try:
            answers = json.loads(self.etcdctl("endpoint", "health", "-w", "json") or "[]")
        except json.JSONDecodeError:
            return 0
        return sum(1 for answer in answers if answer.get("health"))

    def apiserver_ready(self, node: str) -> bool:
        """That node's API server answers /readyz (the check haproxy makes)."""
        context = load_kubeconfig(self.kubeconfig).tls_context()
        try:
            url = f"https://{self.nodes()[node]}:{self.port('apiserver')}/readyz"
            with urllib.request.urlopen(url, timeout=2, context=context) as answer:
                return answer.status == 200
        except OSError:
            return False

    def pid_of(self, node: str, component: str) -> int | None:
        """The pid of a static pod's process on the node: in the node's network
        namespace, its command `component` (etcd) or the component's module."""
        namespace = os.stat(NETNS_DIR / f"{self.network().prefix}{node}").st_ino
        # the images' /usr/local/bin/<component> execs `python3 -m <module>`
        module = next((image.module for image in COMPONENTS if image.name == component), "")
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.stat(entry / "ns" / "net").st_ino != namespace:
                    continue
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0].decode(errors="replace").rpartition("/")[2] == component or (
                    [arg.decode(errors="replace") for arg in argv[1:3]] == ["-m", module]):
                return int(entry.name)
        return None

    def kill(self, node: str, component: str) -> float:
        """SIGKILL the component on the node; when it happened (monotonic)."""
        pid = self.pid_of(node, component)
        if pid is None:
            raise BenchmarkError(f"no {component} process on {node}")
        os.kill(pid, 9)
        return time.monotonic()

    def restart(self, node: str, component: str, trial: str) -> None:
        """Bring the static pod back now: its manifest rewritten with a new annotation."""
        path = manifest_dir(self.home, node) / f"{component}.yaml"
        pod = yaml.safe_load(path.read_text())
        pod["metadata"].setdefault("annotations", {})[RESTART_ANNOTATION] = trial
        partial = path.with_name(f".{path.name}.failover")
        partial.write_text(yaml.safe_dump(pod, sort_keys=False))
        partial.replace(path)

    def settled(self) -> bool:
        """Every etcd member healthy and every API server ready."""
        return self.etcd_healthy() == len(CONTROL_PLANES) and all(
            self.apiserver_ready(node) for node in CONTROL_PLANES)

    def wait_settled(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not self.settled():
            if time.monotonic() > deadline:
                raise BenchmarkError("the control plane did not settle: etcd members "
                                     f"healthy {self.etcd_healthy()}, API servers ready "
                                     f"{[n for n in CONTROL_PLANES if self.apiserver_ready(n)]}")
            time.sleep(0.5)

    def lease(self, name: str) -> dict[str, Any]:
        """The Lease's spec, {} when there is none. A read that fails otherwise (an API
        server behind haproxy that is coming back from a kill) is tried again, for 30 s."""
        deadline = time.monotonic() + 30
        while True:
            done = self.kubectl("get", "lease", "-n", "kube-system", name, "-o", "json",
                                "--request-timeout=5s")
            if done.returncode == 0:
                return json.loads(done.stdout)["spec"]
            if "(NotFound)" in done.stderr:
                return {}
            if time.monotonic() > deadline:
                raise BenchmarkError(f"cannot read the Lease {name}: {done.stderr.strip()}")
            time.sleep(0.5)

    def leader_node(self, component: str) -> str | None:
        """The node whose `component` holds its Lease: the holder's identity is in that
        pod's log ("<identity>: attempting to acquire leader lease")."""
        holder = self.lease(LEASES[component]).get("holderIdentity")
        if not holder:
            return None
        for node in CONTROL_PLANES:
            logs = self.kubectl("logs", "-n", "kube-system", f"{component}-{node}")
            if holder in logs.stdout:
                return node
        return None

    def wait_leader(self, component: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while (node := self.leader_node(component)) is None:
            if time.monotonic() > deadline:
                raise BenchmarkError(f"no {component} holds its Lease")
            time.sleep(0.5)
        return node


# -- etcd leader --------------------------------------------------------------------------


@dataclass(frozen=True)
class EtcdTrial:
    """One etcd leader kill, in seconds from the kill: when a surviving member first
    named a new leader (the election), and when the first write sent after the kill
    succeeded."""

    elected: float
    writes_back: float


class ElectionWatch:
    """Asks every member's Maintenance.Status (whose `leader` is the member it follows,
    0 while it knows none) for the moment a member first names a new leader."""

    def __init__(self, cluster: HACluster) -> None:
        pki = cluster.home / "pki"
        credentials = EtcdTLS(str(pki / "etcd" / "ca.crt"),
                              str(pki / "apiserver-etcd-client.crt"),
                              str(pki / "apiserver-etcd-client.key")).credentials()
        port = cluster.port("etcd-client")
        self._channels = [grpc.aio.secure_channel(f"{address}:{port}", credentials)
                          for address in cluster.nodes().values()]
        self._stubs = [rpc_pb2_grpc.MaintenanceStub(channel) for channel in self._channels]
        self._old: set[int] = set()

    async def __aenter__(self) -> ElectionWatch:
        return self

    async def note_leader(self) -> bool:
        """Note the leader the members name now (right before the kill); False when
        they do not all answer and name one (a member just back may be catching up)."""
        statuses = await asyncio.gather(*(stub.Status(rpc_pb2.StatusRequest(), timeout=5)
                                          for stub in self._stubs), return_exceptions=True)
        if any(isinstance(status, BaseException) for status in statuses):
            return False
        self._old = {status.leader for status in statuses}  # type: ignore[union-attr]
        return len(self._old) == 1 and 0 not in self._old

    async def __aexit__(self, *exc_info: object) -> None:
        for channel in self._channels:
            await channel.close()

    async def new_leader(self) -> float:
        """When (monotonic) a member first named a leader other than the one noted."""
        while True:
            for stub in self._stubs:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    status = await stub.Status(rpc_pb2.StatusRequest(), timeout=0.2)
                    if status.leader not in self._old and status.leader != 0:
                        return time.monotonic()
            await asyncio.sleep(ELECTION_POLL)


async def etcd_leader_trial(cluster: HACluster, trial: int) -> EtcdTrial | None:
    """Seconds from killing the etcd leader to the first write, sent after it, that
    succeeded: a write is sent every WRITE_EVERY seconds, each on its own, so that one
    caught in the election (etcd holds it until its request timeout) delays no other.
    None when no election followed: the member killed had stopped leading in between
    (the trial is not counted)."""
    leader: str | None = None
    term = 0
    config = load_kubeconfig(cluster.kubeconfig)
    path = f"{config.server}/api/v1/namespaces/default/configmaps"
    succeeded: list[tuple[float, float]] = []  # (sent, answered)

    async def write(session: aiohttp.ClientSession, name: str) -> None:
        sent = time.monotonic()
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"failover": "etcd"}}}
        try:
            async with asyncio.timeout(15):
                async with session.post(path, json=body) as answer:
                    await answer.read()
                    if answer.status == 201:
                        succeeded.append((sent, time.monotonic()))
        except (aiohttp.ClientError, TimeoutError, OSError):
            pass

    async with ElectionWatch(cluster) as watch, aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=config.tls_context(), limit=0)) as session:
        writes: list[asyncio.Task[None]] = []
        killed: float | None = None
        election: asyncio.Task[float] | None = None
        for sent in range(10_000):
            writes.append(asyncio.create_task(write(session, f"failover-etcd-{trial}-{sent}")))
            await asyncio.sleep(WRITE_EVERY)
            if killed is None and sent >= 10:
                # the leader read at the last moment: the previous trial's restart may
                # have moved it
                leader, term = await asyncio.to_thread(cluster.etcd_leader_and_term)
                if leader is not None and await watch.note_leader():
                    killed = await asyncio.to_thread(cluster.kill, leader, "etcd")
                    election = asyncio.create_task(watch.new_leader())
            if killed is not None and any(at >= killed for at, _ in succeeded):
                break
            if killed is not None and time.monotonic() - killed > 60:
                raise BenchmarkError("no write succeeded within 60 s of the etcd leader's kill")
        await asyncio.gather(*writes)
        assert killed is not None and leader is not None and election is not None
        took = min(answered for at, answered in succeeded if at >= killed) - killed
        elected = await asyncio.to_thread(lambda: cluster.etcd_leader_and_term()[1] > term)
        try:
            # writes are back, so a new leader is known by now: a member that names none
            # means the one killed was not leading any more (its leadership had moved)
            async with asyncio.timeout(5 if elected else 0.001):
                new_leader: float | None = await election
        except TimeoutError:
            new_leader = None
    cluster.restart(leader, "etcd", f"etcd-{trial}")
    return EtcdTrial(new_leader - killed, took) if elected and new_leader else None


# -- one API server -----------------------------------------------------------------------


class ClientLoop:
    """A client sending requests in a loop on a thread: each failure retried once;
    `failed` counts the requests whose retry failed too."""

    def __init__(self, name: str, request: Any) -> None:
        self.name = name
        self.request = request
        self.sent = 0
        self.retried = 0
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sent += 1
            error = self._attempt()
            if error is not None:
                self.retried += 1
                error = self._attempt()
                if error is not None:
                    self.failed.append(error)

    def _attempt(self) -> str | None:
        try:
            self.request()
        except Exception as error:  # noqa: BLE001 (any failure of the request counts)
            return f"{type(error).__name__}: {str(error)[:200]}"
        return None

    @contextmanager
    def running(self) -> Iterator[ClientLoop]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=60)


def official_client(cluster: HACluster) -> Any:
    """The official client's list call, through haproxy (its own connection pool). It
    writes the kubeconfig's inline certificates to temporary files, removed only at a
    clean exit: they go into the cluster's folder, not /tmp."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(str(cluster.kubeconfig), client_configuration=configuration,
                            temp_file_path=str(cluster.home / "client-files"))
    api = client.CoreV1Api(client.ApiClient(configuration))
    return lambda: api.list_namespaced_config_map("default", limit=5, _request_timeout=5)


def kubectl_request(cluster: HACluster) -> Any:
    def request() -> None:
        done = cluster.kubectl("get", "configmaps", "-n", "default", "--request-timeout=5s",
                               "-o", "name", timeout=20)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip())
    return request


async def apiserver_trial(cluster: HACluster, node: str) -> tuple[int, int, list[str]]:
    """Kill the node's API server while both clients run: (sent, retried, failed)."""
    loops = [ClientLoop("official client", official_client(cluster)),
             ClientLoop("kubectl", kubectl_request(cluster))]
    with loops[0].running(), loops[1].running():
        await asyncio.sleep(1.5)
        await asyncio.to_thread(cluster.kill, node, "kube-apiserver")
        await asyncio.sleep(CLIENT_LOOP_AFTER_KILL)
    cluster.restart(node, "kube-apiserver", f"apiserver-{time.time()}")
    return (sum(loop.sent for loop in loops), sum(loop.retried for loop in loops),
            [f"{loop.name}: {error}" for loop in loops for error in loop.failed])


# -- scheduler, controller-manager --------------------------------------------------------


def apply(cluster: HACluster, manifest: str) -> None:
    done = subprocess.run([KUBECTL, f"--kubeconfig={cluster.kubeconfig}", "apply", "-f", "-"],
                          input=manifest, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise BenchmarkError(f"kubectl apply failed: {done.stderr.strip()}")


def deployment(name: str, replicas: int) -> str:
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"failover": "cm"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {
                     "containers": [{"name": "c", "image": "localhost/busybox:1.36",
                                     "command": ["sleep", "3600"]}]}}}})


def pods_created_since(cluster: HACluster, selector: str, resource_version: str) -> set[str]:
    """The names of the pods a watch from `resource_version` saw ADDED."""
    done = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods?watch=1&"
                           f"labelSelector={selector}&resourceVersion={resource_version}"
                           "&timeoutSeconds=2", timeout=30)
    return {event["object"]["metadata"]["name"] for line in done.stdout.splitlines()
            if line.strip() and (event := json.loads(line))["type"] == "ADDED"}


def pods_resource_version(cluster: HACluster) -> str:
    done = cluster.kubectl("get", "--raw", "/api/v1/namespaces/default/pods?limit=1")
    return json.loads(done.stdout)["metadata"]["resourceVersion"]


def lease_time(value: str) -> float:
    """A Lease's MicroTime as seconds since the epoch."""
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def wait_holder_change(cluster: HACluster, component: str, old: str, killed: float,
                       timeout: float = 60) -> float:
    """Seconds from the kill (time.time()) until another identity acquired the
    component's Lease (its acquireTime, written by the new leader)."""
    while True:
        spec = cluster.lease(LEASES[component])
        if spec.get("holderIdentity") not in (None, old):
            return lease_time(spec["acquireTime"]) - killed
        if time.time() - killed > timeout:
            raise BenchmarkError(f"nobody took {component}'s Lease over within {timeout} s")
        time.sleep(0.2)


def wait_for(check: Any, what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise BenchmarkError(f"timed out waiting for {what}")
        time.sleep(0.3)
    return value


def takeover_trial(cluster: HACluster, trial: int) -> dict[str, tuple[float, float, bool]]:
    """Kill the leading scheduler and the leading controller-manager together; for
    each: (seconds from the kill until another holds its Lease, seconds from the dead
    leader's last renewal until then, whether the work sent after the kill was done
    once: a Deployment scaled to 3 has 3 pods created, a new pod is bound)."""
    nodes = {component: cluster.wait_leader(component) for component in LEASES}
    old = {component: cluster.lease(LEASES[component])["holderIdentity"]
           for component in LEASES}
    name = f"failover-{trial}"
    apply(cluster, deployment(name, 0))
    since = pods_resource_version(cluster)
    for component, node in nodes.items():
        cluster.kill(node, component)
    killed = time.time()
    renewed = {component: lease_time(cluster.lease(LEASES[component])["renewTime"])
               for component in LEASES}
    apply(cluster, deployment(name, 3))
    apply(cluster, yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"failover": "scheduler"}},
        "spec": {"containers": [{"name": "c", "image": "localhost/busybox:1.36",
                                 "command": ["sleep", "3600"]}]}}))
    took = {component: wait_holder_change(cluster, component, old[component], killed)
            for component in LEASES}
    wait_for(lambda: len(cluster.kubectl("get", "pods", "-l", f"app={name}", "-o", "name"
                                         ).stdout.split()) >= 3, f"3 pods of {name}")
    bound = wait_for(lambda: json.loads(cluster.kubectl(
        "get", "pod", name, "-o", "json").stdout or "{}").get("spec", {}).get("nodeName"),
        f"{name} bound")
    time.sleep(2)  # a second ReplicaSet sync would show here
    once = {"kube-controller-manager": len(pods_created_since(
                cluster, f"app={name}", since)) == 3,
            "kube-scheduler": bound == "node-1"}
    cluster.kubectl("delete", "deployment", name, "--wait=false")
    cluster.kubectl("delete", "pod", name, "--wait=false", "--grace-period=0")
    for component, node in nodes.items():
        cluster.restart(node, component, f"{component}-{trial}")
    return {component: (took[component], took[component] + killed - renewed[component],
                        once[component]) for component in LEASES}


# -- the run ------------------------------------------------------------------------------


@contextmanager
def ha_cluster(home: str | None) -> Iterator[HACluster]:
    """The cluster at --home, or a scratch `up --ha --nodes 1` removed afterwards."""
    if home is not None:
        yield HACluster(Path(home))
        return
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-ha-") as scratch:
        path = Path(scratch) / "home"
        try:
            started = time.monotonic()
            launcher(path, "up", "--ha", "--nodes", "1")
            progress(f"up --ha: {time.monotonic() - started:.1f} s")
            yield HACluster(path)
        finally:
            launcher(path, "down", "--purge")


async def measure(args: Any) -> list[Row]:
    if os.geteuid() != 0:
        raise BenchmarkError("run it as root: the nodes are network namespaces")
    trials = 1 if args.quick else args.trials
    parts = set(args.only or PARTS)
    with ha_cluster(args.home) as cluster:
        cluster.wait_settled()
        etcd: list[EtcdTrial] = []
        repeated = 0
        while "etcd" in parts and len(etcd) < trials:
            took = await etcd_leader_trial(cluster, len(etcd) + repeated)
            if took is None:
                repeated += 1
                progress("etcd: the member killed had stopped leading (no election): again")
            else:
                etcd.append(took)
                progress(f"etcd leader kill {len(etcd)}: new leader after {took.elected:.2f} s"
                         f", writes back after {took.writes_back:.2f} s")
            cluster.wait_settled()
        sent = retried = 0
        failed: list[str] = []
        nodes = list(CONTROL_PLANES)
        random.shuffle(nodes)
        for trial in range(trials if "apiserver" in parts else 0):
            node = nodes[trial % len(nodes)]
            one_sent, one_retried, one_failed = await apiserver_trial(cluster, node)
            sent, retried, failed = sent + one_sent, retried + one_retried, failed + one_failed
            progress(f"API server kill {trial + 1} ({node}): {one_sent} requests, "
                     f"{one_retried} retried, {len(one_failed)} failed")
            cluster.wait_settled()
        takeovers: dict[str, list[float]] = {}
        since_renewal: dict[str, list[float]] = {}
        twice: dict[str, int] = {}
        for trial in range(trials if "takeover" in parts else 0):
            results = await asyncio.to_thread(takeover_trial, cluster, trial)
            for component, (took, after_renewal, once) in results.items():
                takeovers.setdefault(component, []).append(took)
                since_renewal.setdefault(component, []).append(after_renewal)
                twice[component] = twice.get(component, 0) + (not once)
                progress(f"{component} kill {trial + 1}: taken over after {took:.1f} s "
                         f"({after_renewal:.1f} s after its last renewal)"
                         f"{'' if once else ', work NOT done once'}")
            cluster.wait_settled()
    for error in failed:
        progress(f"failed request: {error}")
    rows: list[Row] = []
    if etcd:
        rows += etcd_rows(etcd, repeated)
    if "apiserver" in parts:
        rows.append((f"API server killed ({trials} trial{'s' * (trials != 1)}, official "
                     "client + kubectl): failed after one retry",
                     f"{len(failed)} of {sent} ({retried} retried)", "0", verdict(not failed)))
    for component, values in takeovers.items():
        rows.append((f"{component} leader killed: Lease taken over, median / max of "
                     f"{trials}", f"{statistics.median(values):.1f} s / {max(values):.1f} s",
                     f"<= {TAKEOVER_SECONDS:.0f} s", verdict(max(values) <= TAKEOVER_SECONDS)))
        renewal = since_renewal[component]
        rows.append((f"{component}: the same from the dead leader's last renewal, median / "
                     "max", f"{statistics.median(renewal):.1f} s / {max(renewal):.1f} s",
                     "(lease 15 s + up to 2 retry periods)", "-"))
        work = ("Deployment scaled during the takeover: 3 pods created, not more"
                if component == "kube-controller-manager"
                else "pod created during the takeover: bound")
        rows.append((f"{component}: {work}", f"{trials - twice[component]} of {trials}",
                     "all", verdict(twice[component] == 0)))
    return rows


def etcd_rows(etcd: list[EtcdTrial], repeated: int) -> list[Row]:
    """The etcd trials: writes back (the target), and where that time went: the
    election, then the rest (the API server's etcd client finding the leader's
    successor, the write's own round trip)."""
    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} s / {percentile(values, 99):.2f} s"

    back = [trial.writes_back for trial in etcd]
    elected = [trial.elected for trial in etcd]
    after = [trial.writes_back - trial.elected for trial in etcd]
    not_counted = f" ({repeated} more without an election, not counted)" if repeated else ""
    return [(f"etcd leader killed: writes back, median / p99 of {len(etcd)}{not_counted}",
             spread(back), f"p99 <= {ETCD_WRITES_P99:.0f} s",
             verdict(percentile(back, 99) <= ETCD_WRITES_P99)),
            ("etcd: a surviving member names a new leader, median / p99", spread(elected),
             "(election timeout 1-2 s)", "-"),
            ("etcd: from the new leader to the first write back, median / p99",
             spread(after), "-", "-")]


def add_arguments(parser: Any) -> None:
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--only", action="append", choices=PARTS,
                        help="run only these trials (repeatable; all by default)")
    parser.add_argument("--home", default=None,
                        help="an `up --ha` cluster's MINIKUBE_PY_HOME (else a scratch one)")


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "control-plane failover (up --ha)", "failover.py", measure,
                  add_arguments=add_arguments)
