"""Every component through an outage of the API server and of the trace receiver.

One etcd, one API server and one of each component, started once for the module:

    up          the controller-manager, the scheduler, a kubelet (a hollow node: the
                kubelet's own code on a simulated runtime), a proxy (in a network
                namespace of its own), cluster DNS, the metrics server, all exporting
                spans to a trace receiver; and a second controller-manager that holds
                its leader Lease with a 2 s renew deadline
    outage      SIGTERM the trace receiver, then make spans (a ReplicaSet's pods, whose
                exports now fail); SIGTERM the API server while every component watches
                it: it stops (exit 0, no timeout waited out); wait until every component
                has noticed, and the leader has given up its leadership and exited (as
                upstream's do)
    recovery    a new API server and trace receiver on the same ports; each component
                does its job again: the controller-manager creates a ReplicaSet's pods,
                the scheduler binds them, the kubelet runs them and renews its Lease, the
                proxy writes a new Service's rules, DNS answers for it, the metrics
                server serves a new scrape through the API server, and the spans reach
                the receiver
    the end     none but the leader exited, none logged a traceback, every line of every
                log has klog's header; SIGTERM stops each, with exit code 0, without waiting
                out a timeout

And an API server of its own shows --shutdown-delay-duration: after SIGTERM it serves on
with /readyz failing, then stops.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import dns.message
import dns.query
import orjson
import pytest
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.client.errors import ClientError
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.components import (
    ClientComponentProcess,
    ControllerManagerProcess,
    DNSProcess,
    HollowNodesProcess,
    MetricsProcess,
    ProxyProcess,
    SchedulerProcess,
    TraceReceiverProcess,
)
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.process import ComponentProcess, free_port
from tests.api_helpers import eventually
from tests.e2e.helpers import read_log_from

pytestmark = pytest.mark.slow

NAMESPACE = "outage"
NETNS_DIR = Path("/var/run/netns")
NETNS_PREFIX = "mkgr-"
# A stop that waits out a timeout (a request's 60 s, a watch, a lease) takes longer than
# this; how fast each stops (2 s is the target) is measured by benchmarks/component_stop.py,
# not here, where 3 workers share 2 busy cores.
STOP_SECONDS = 10.0
LEADER = "outage-leader"
# klog's header: severity, date, time with microseconds, pid, file:line]
KLOG_HEADER = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [^ :]+:\d+\] ")


@dataclass
class Cluster:
    directory: Path
    etcd: EtcdProcess
    apiserver: APIServerProcess
    traces: TraceReceiverProcess
    netns: Path
    node: str
    stub_kubelet: StubKubelet
    leader: ControllerManagerProcess
    components: dict[str, ClientComponentProcess] = field(default_factory=dict)
    # what happened during the outage, for the tests to check
    apiserver_stop: tuple[float, int | None] = (0.0, None)
    restarted_at: datetime = datetime.min.replace(tzinfo=UTC)

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    def client(self) -> Client:
        return Client.from_kubeconfig(self.kubeconfig, user_agent="outage-test")


def remove_namespaces_of_dead_runs() -> None:
    """The proxy's namespace of a run that crashed (named after its pid): nothing runs in
    it, its tables are the proxy's rules."""
    if not NETNS_DIR.is_dir():
        return
    for path in NETNS_DIR.glob(f"{NETNS_PREFIX}*"):
        pid = path.name.removeprefix(NETNS_PREFIX)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(["ip", "netns", "del", path.name], check=False)


def host_address() -> str:
    """An address of this machine other than loopback, where the API server reaches the
    metrics server (an EndpointSlice may not name loopback): the one its default route
    leaves from. Connecting a UDP socket sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("198.51.100.1", 9))
        return str(probe.getsockname()[0])


async def terminate(process: ComponentProcess) -> tuple[float, int | None]:
    """SIGTERM the process and wait (STOP_SECONDS + 5 at most) until it exits: how long
    that took, and its exit code."""
    assert process.pid is not None
    started = time.monotonic()
    os.kill(process.pid, signal.SIGTERM)
    while process.running and time.monotonic() - started < STOP_SECONDS + 5:
        await asyncio.sleep(0.02)
    elapsed, code = time.monotonic() - started, process.returncode
    await process.stop()  # SIGKILL if it is still there, and forget it
    return elapsed, code


def log_size(process: ComponentProcess) -> int:
    return process.log_path.stat().st_size


def replica_set(name: str, replicas: int) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


class StubKubelet:
    """What the metrics server scrapes: a Node whose kubelet endpoint is this server's
    /metrics/resource, its CPU counter growing with the clock (the hollow node has no
    kubelet API). The Node is unschedulable: pods go to the hollow node."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.address = host_address()
        self.port = free_port(self.address)
        self.runner: web.AppRunner | None = None

    async def resource_metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=f"node_cpu_usage_seconds_total {time.monotonic():.3f}\n"
                                 "node_memory_working_set_bytes 1048576\n")

    async def start(self, client: Client) -> None:
        app = web.Application()
        app.router.add_get("/metrics/resource", self.resource_metrics)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, self.address, self.port).start()
        nodes = client.resource("nodes")
        node = await nodes.create({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": self.name},
                                   "spec": {"unschedulable": True}})
        node["status"] = {
            "addresses": [{"type": "InternalIP", "address": self.address}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}}}
        await nodes.update_status(node)

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


async def running_pods(client: Client, app: str, node: str, count: int) -> bool:
    """Whether the ReplicaSet `app` has `count` pods, bound to `node` and Running."""
    pods = (await client.resource("pods").list(NAMESPACE, label_selector=f"app={app}"))["items"]
    return len(pods) == count and all(
        pod["spec"].get("nodeName") == node and (pod.get("status") or {}).get("phase") ==
        "Running" for pod in pods)


async def start_components(cluster: Cluster, trace_url: str) -> None:
    """One of each, at -v 2 as `minikube-py up` runs them, exporting spans to trace_url."""
    kubeconfig, directory = cluster.kubeconfig, cluster.directory
    tracing = (f"--tracing-endpoint={trace_url}",)
    components: dict[str, ClientComponentProcess] = {
        "controller-manager": ControllerManagerProcess(
            kubeconfig, directory / "controller-manager.log", extra_args=("-v", "2", *tracing)),
        "scheduler": SchedulerProcess(kubeconfig, directory / "scheduler.log",
                                      extra_args=("-v", "2", *tracing)),
        "kubelet": HollowNodesProcess(
            kubeconfig, directory / "kubelet.log", count=1,
            extra_args=(f"--node-name={cluster.node.removesuffix('-0')}", "-v", "2")),
        "proxy": ProxyProcess(kubeconfig, directory / "proxy.log", node_name=cluster.node,
                              cluster_cidr="10.244.0.0/16",
                              extra_args=(f"--netns={cluster.netns}", "-v", "2", *tracing)),
        "dns": DNSProcess(kubeconfig, directory / "dns.log", dns_port=free_port(),
                          dns_address="127.0.0.1", advertise_address="192.0.2.53",
                          service_ip="10.96.0.10",
                          extra_args=("--upstream=127.0.0.1:9", "-v", "2")),
        "metrics": MetricsProcess(kubeconfig, directory / "metrics.log",
                                  address=host_address(), advertise_address=host_address(),
                                  extra_args=("--metric-resolution=1s", "-v", "2")),
    }
    cluster.components = components
    await asyncio.gather(cluster.leader.start(),
                         *(component.start() for component in components.values()))


@pytest.fixture(scope="module")
async def cluster(fast_tmp: Path) -> AsyncIterator[Cluster]:
    """Everything up, through the outage and back (the module docstring's first three
    steps); stopped at the end of the module whatever happened."""
    directory = fast_tmp / f"outage-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    netns = NETNS_DIR / f"{NETNS_PREFIX}{os.getpid()}"
    trace_port = free_port()
    (directory / "tracing.yaml").write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
        f"endpoint: 127.0.0.1:{trace_port}\nsamplingRatePerMillion: 1000000\n")
    etcd = EtcdProcess(directory / "etcd")
    apiserver = APIServerProcess(
        [etcd.client_url], directory / "apiserver.log",
        extra_args=("--disable-admission-plugins=ServiceAccount",
                    f"--tracing-config-file={directory / 'tracing.yaml'}"))
    traces = TraceReceiverProcess(directory / "spans", directory / "traces.log",
                                  port=trace_port)
    suffix = uuid.uuid4().hex[:6]
    leader = ControllerManagerProcess(
        directory / "kubeconfig", directory / "leader.log",
        extra_args=("--controllers=tokencleaner", "--leader-elect", f"--identity={LEADER}",
                    "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
                    "--leader-elect-retry-period=0.5s"))
    cluster = Cluster(directory, etcd, apiserver, traces, netns, f"outage-{suffix}-0",
                      StubKubelet(f"outage-stub-{suffix}"), leader)
    remove_namespaces_of_dead_runs()
    subprocess.run(["ip", "netns", "add", netns.name], check=True)
    try:
        await etcd.start()
        await asyncio.gather(apiserver.start(), traces.start())
        write_kubeconfig(cluster.kubeconfig, apiserver.url)
        async with cluster.client() as client:
            await client.resource("namespaces").create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            await cluster.stub_kubelet.start(client)
        await start_components(cluster, traces.url)
        await go_through_the_outage(cluster)
        yield cluster
    finally:
        for component in [*cluster.components.values(), leader]:
            await component.stop()
        await asyncio.gather(apiserver.stop(), traces.stop(), cluster.stub_kubelet.stop())
        await etcd.stop()
        subprocess.run(["ip", "netns", "del", netns.name], check=False)


async def go_through_the_outage(cluster: Cluster) -> None:
    """The outage: first of the trace receiver, while spans are made, then of the API
    server; then a new one of each on the same ports."""
    await cluster.traces.stop()
    async with cluster.client() as client:
        await client.resource("replicasets").create(replica_set("before", 2), NAMESPACE)
        await eventually(lambda: running_pods(client, "before", cluster.node, 2),
                         timeout=60, what="the ReplicaSet before the outage to run")
        await eventually(lambda: leader_is(client, LEADER), timeout=30,
                         what="the second controller-manager to become leader")
    exporters = {"apiserver": cluster.apiserver,
                 "controller-manager": cluster.components["controller-manager"],
                 "scheduler": cluster.components["scheduler"]}
    await eventually(lambda: all_logged(exporters, {}, f":{cluster.traces.port}"), timeout=30,
                     what="every exporter to log that the trace receiver is gone")

    offsets = {name: log_size(component) for name, component in cluster.components.items()}
    cluster.apiserver_stop = await terminate(cluster.apiserver)
    await eventually(lambda: all_logged(cluster.components, offsets,
                                        f":{cluster.apiserver.port}"),
                     timeout=60, what="every component to log that the API server is gone")
    await eventually(lambda: not_running(cluster.leader), timeout=30,
                     what="the leader to exit, its Lease not renewed")
    cluster.restarted_at = datetime.now(UTC)
    await asyncio.gather(cluster.apiserver.start(), cluster.traces.start())


async def all_logged(processes: Mapping[str, ComponentProcess], offsets: Mapping[str, int],
                     address: str) -> bool:
    """Whether each process logged a warning or error naming `address` (after its
    offset): it met the server that is gone."""
    return all(any(line.startswith(("W", "E")) and address in line
                   for line in read_log_from(process.log_path,
                                             offsets.get(name, 0)).splitlines())
               for name, process in processes.items())


async def leader_is(client: Client, identity: str) -> bool:
    lease = await client.resource("leases").get("kube-controller-manager", "kube-system")
    return bool((lease.get("spec") or {}).get("holderIdentity") == identity)


async def not_running(process: ComponentProcess) -> bool:
    return not process.running


async def test_a_shutdown_delay_serves_on_with_readyz_failing_then_stops(
        private_etcd: EtcdProcess, fast_tmp: Path) -> None:
    """--shutdown-delay-duration: after SIGTERM the server goes on answering for that long
    while /readyz says its `shutdown` check failed (load balancers take it out first),
    then stops."""
    api = APIServerProcess([private_etcd.client_url], fast_tmp / f"delay-{uuid.uuid4()}.log",
                           extra_args=("--shutdown-delay-duration=4s",))
    async with api:
        assert api.pid is not None
        started = time.monotonic()
        os.kill(api.pid, signal.SIGTERM)

        async def not_ready() -> bool:
            return await asyncio.to_thread(_status, f"{api.url}/readyz/shutdown") == 500

        await eventually(not_ready, timeout=10, what="/readyz to fail its shutdown check")
        assert await asyncio.to_thread(_status, f"{api.url}/api/v1/namespaces/default") == 200
        await eventually(lambda: not_running(api), timeout=15, what="the server to stop")
        assert (api.returncode, time.monotonic() - started >= 4) == (0, True)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_the_api_server_stops_on_sigterm_with_every_watch_open(
        cluster: Cluster) -> None:
    elapsed, code = cluster.apiserver_stop
    assert code == 0 and elapsed < STOP_SECONDS, (elapsed, code)


async def test_the_controller_manager_scheduler_and_kubelet_run_a_new_replica_set(
        cluster: Cluster) -> None:
    async with cluster.client() as client:
        await client.resource("replicasets").create(replica_set("after", 2), NAMESPACE)
        await eventually(lambda: running_pods(client, "after", cluster.node, 2), timeout=60,
                         what="the ReplicaSet made after the outage to run")


async def test_the_kubelet_renews_its_lease(cluster: Cluster) -> None:
    async with cluster.client() as client:
        async def renewed() -> bool:
            lease = await client.resource("leases").get(cluster.node, "kube-node-lease")
            renew = datetime.strptime(lease["spec"]["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ")
            return renew.replace(tzinfo=UTC) > cluster.restarted_at

        await eventually(renewed, timeout=30, what="the node's Lease to be renewed")


async def test_the_proxy_and_dns_serve_a_new_service(cluster: Cluster) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "after"},
                        "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
    async with cluster.client() as client:
        created = await client.resource("services").create(service, NAMESPACE)
    cluster_ip = created["spec"]["clusterIP"]

    async def rules_written() -> bool:
        saved = await asyncio.to_thread(
            subprocess.run, ["nsenter", f"--net={cluster.netns}", "iptables-save", "-t", "nat"],
            capture_output=True, text=True, check=True)
        return f"{NAMESPACE}/web:http cluster IP" in saved.stdout and cluster_ip in saved.stdout

    await eventually(rules_written, timeout=30, what="the proxy to write the Service's rules")
    dns_process = cluster.components["dns"]
    assert isinstance(dns_process, DNSProcess)

    async def resolves() -> bool:
        query = dns.message.make_query(f"web.{NAMESPACE}.svc.cluster.local", "A")
        answer = await asyncio.to_thread(dns.query.udp, query, "127.0.0.1", timeout=2,
                                         port=dns_process.dns_port)
        return {r.to_text() for rrset in answer.answer for r in rrset} == {cluster_ip}

    await eventually(resolves, timeout=30, what="DNS to answer the Service's ClusterIP")


async def test_the_metrics_server_scrapes_and_serves_through_the_api_server(
        cluster: Cluster) -> None:
    path = f"/apis/metrics.k8s.io/v1beta1/nodes/{cluster.stub_kubelet.name}"
    async with cluster.client() as client:
        async def scraped_since_the_restart() -> bool:
            try:
                metrics = await client.request("GET", path)
            except ClientError:
                return False
            stamp = datetime.strptime(metrics["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
            return stamp.replace(tzinfo=UTC) > cluster.restarted_at

        await eventually(scraped_since_the_restart, timeout=30,
                         what="the metrics server to serve a scrape made after the outage")


async def test_spans_made_after_the_outage_reach_the_new_trace_receiver(
        cluster: Cluster) -> None:
    async with cluster.client() as client:
        await client.resource("replicasets").create(replica_set("traced", 1), NAMESPACE)
    url = (f"{cluster.traces.url}/api/v1/traces?resource=replicasets&namespace={NAMESPACE}"
           "&name=traced")
    want = {"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

    async def every_exporter_sent() -> bool:
        found = await asyncio.to_thread(_get_json, url)
        return want <= {span["service"] for trace in found["traces"] for span in trace["spans"]}

    await eventually(every_exporter_sent, timeout=30,
                     what=f"spans of {sorted(want)} in a new ReplicaSet's trace")


def _get_json(url: str) -> Obj:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return orjson.loads(answer.read())


def test_the_leader_that_could_not_renew_exited_with_one_error_line(cluster: Cluster) -> None:
    assert cluster.leader.returncode == 1
    errors = [line for line in cluster.leader.log_path.read_text().splitlines()
              if line.startswith("E")]
    assert "leaderelection lost" in errors[-1], errors


def test_no_other_component_exited_and_none_logged_a_traceback(cluster: Cluster) -> None:
    for name, component in {"apiserver": cluster.apiserver, "traces": cluster.traces,
                            **cluster.components}.items():
        assert component.running, f"{name} exited: {component.log_excerpt()}"
    for component in [cluster.apiserver, cluster.traces, cluster.leader,
                      *cluster.components.values()]:
        text = component.log_path.read_text()
        assert "Traceback" not in text, f"{component.log_path.name}:\n{text}"


async def test_sigterm_stops_every_component_and_every_line_has_klogs_header(
        cluster: Cluster) -> None:
    """The module's last test: it stops everything, so that the logs are whole."""
    processes: dict[str, ComponentProcess] = {
        **cluster.components, "apiserver": cluster.apiserver, "traces": cluster.traces}
    stops = {name: await terminate(process) for name, process in processes.items()}
    slow = {name: stop for name, stop in stops.items()
            if stop[1] != 0 or stop[0] >= STOP_SECONDS}
    assert not slow, f"(seconds, exit code) of those that did not stop cleanly: {slow}"
    for process in [*processes.values(), cluster.leader]:
        lines = process.log_path.read_text().splitlines()
        without = [line for line in lines if not KLOG_HEADER.match(line)]
        assert lines and not without, (
            f"{process.log_path.name}: lines without klog's header: {without[:10]}")
