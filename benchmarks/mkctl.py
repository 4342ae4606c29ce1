"""Benchmark: `mkctl get pods` against the real `kubectl get pods`, wall time per command.

Run from the repository root: `.venv/bin/python benchmarks/mkctl.py` (options: --pods N
(100), --runs N (20), --quick: a smoke run of 5 pods and one run of each command,
--no-append). For each of two API servers, one after the other on a fresh etcd (data on
/dev/shm) -- plain HTTP as the tests' server, then TLS with the admin's client
certificate embedded in the kubeconfig and Node,RBAC authorization, as `minikube-py up`
starts it -- it creates N pods through the API (no containers: they stay
Pending), warms both programs' discovery caches (in a scratch --cache-dir, so ~/.kube is
left alone), checks that both print the same table, then times `get pods` alternately
with kubectl and mkctl and reports the medians and their ratio. On the TLS server it does
the same for `describe pod` of a pod with three Events (the pod, then its Events by field
selector). Targets: mkctl <= 2x kubectl, for both commands.

mkctl runs as an installed command does, from compiled bytecode: its .pyc files go to a
scratch PYTHONPYCACHEPREFIX (the repository is left alone), written by the first run. Also
reported, on the TLS server: `get pods -o yaml` (mkctl writes YAML in pure Python), mkctl
with a cold discovery cache (two more requests), mkctl when Python may not cache bytecode
(PYTHONDONTWRITEBYTECODE, every module compiled on every run), and the floor under any
mkctl command, the interpreter alone (`python -c pass`).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import BenchmarkError, progress  # noqa: E402
from benchmarks.etcd_raw import scratch_directory  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.cluster.apiserver import APIServerProcess, ServingTLS  # noqa: E402
from minikube_py.cluster.etcd import EtcdProcess  # noqa: E402
from minikube_py.cluster.kubeconfig import write_kubeconfig  # noqa: E402
from minikube_py.security import pki  # noqa: E402

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
MKCTL = [sys.executable, "-m", "minikube_py.mkctl"]
ENV = {**{name: value for name, value in os.environ.items()
          if name != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(REPO)}
NO_SERVICE_ACCOUNTS = "--disable-admission-plugins=ServiceAccount"
TARGET_RATIO = 2.0
AGE = re.compile(r"\b\d+[smhdy](?:\d+[smhd])?\b")


def pod(name: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "labels": {"app": "bench"}},
                       "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}
                      ).encode()


def create_pods(url: str, count: int, context: ssl.SSLContext | None) -> None:
    for index in range(count):
        request = urllib.request.Request(
            f"{url}/api/v1/namespaces/default/pods", data=pod(f"web-{index:03d}"),
            method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            if answer.status != 201:
                raise BenchmarkError(f"creating a pod answered {answer.status}")


def event(pod_name: str, index: int, reason: str, message: str) -> bytes:
    """A core/v1 Event about the pod, as the scheduler and kubelet write them."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{pod_name}.{index:016x}", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": "default",
                           "name": pod_name},
        "reason": reason, "message": message, "type": "Normal", "count": 1,
        "source": {"component": "default-scheduler"},
        "firstTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lastTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()


def create_events(url: str, pod_name: str, context: ssl.SSLContext | None) -> None:
    """Events for `describe pod` to list, as a scheduled pod has."""
    for index, (reason, message) in enumerate([
            ("Scheduled", f"Successfully assigned default/{pod_name} to node-1"),
            ("Pulling", 'Pulling image "nginx:1.25"'),
            ("Pulled", 'Successfully pulled image "nginx:1.25"')]):
        request = urllib.request.Request(
            f"{url}/api/v1/namespaces/default/events", data=event(pod_name, index, reason,
                                                                  message),
            method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            if answer.status != 201:
                raise BenchmarkError(f"creating an event answered {answer.status}")


def timed(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
          ) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env or ENV,
                          cwd=cwd, timeout=60)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise BenchmarkError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return elapsed, done.stdout


def alternate(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """The median wall time (s) of each command, run in turn `runs` times."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(timed(command)[0])
    return {name: statistics.median(values) for name, values in times.items()}


def compare_outputs(kubectl: list[str], mkctl: list[str]) -> None:
    """The timings mean something only if both print the same thing."""
    expected, actual = timed(kubectl)[1], timed(mkctl)[1]
    if AGE.sub("AGE", expected) != AGE.sub("AGE", actual):
        raise BenchmarkError(f"mkctl printed something else than kubectl:\n{actual[:500]}")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def ratio_row(label: str, medians: dict[str, float], target: bool) -> Row:
    ratio = medians["mkctl"] / medians["kubectl"]
    return (label, f"{ms(medians['mkctl'])} vs {ms(medians['kubectl'])} = {ratio:.2f} x",
            f"<= {TARGET_RATIO:g} x" if target else "-",
            verdict(ratio <= TARGET_RATIO) if target else "-")


async def plain_server(tmp: Path, pods: int, runs: int) -> list[Row]:
    async with EtcdProcess(tmp / "etcd-plain") as etcd, APIServerProcess(
            [etcd.client_url], tmp / "apiserver-plain.log",
            extra_args=("--log-requests=false", NO_SERVICE_ACCOUNTS)) as server:
        kubeconfig = write_kubeconfig(tmp / "plain.kubeconfig", server.url)
        progress(f"creating {pods} pods on the plain HTTP server")
        create_pods(server.url, pods, None)
        flags = [f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp / 'cache-plain'}"]
        kubectl, mkctl = [KUBECTL, *flags, "get", "pods"], [*MKCTL, *flags, "get", "pods"]
        compare_outputs(kubectl, mkctl)
        progress(f"timing `get pods`, {runs} runs each")
        medians = alternate({"kubectl": kubectl, "mkctl": mkctl}, runs)
    return [ratio_row(f"`get pods`, {pods} pods, plain HTTP: mkctl vs kubectl (median)",
                      medians, target=True)]


def admin_kubeconfig(path: Path, url: str, ca: pki.KeyPair, admin: pki.KeyPair) -> Path:
    """The admin's kubeconfig as `minikube-py up` writes it: everything embedded."""
    def data(pem: bytes) -> str:
        return base64.b64encode(pem).decode()

    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "admin",
        "clusters": [{"name": "bench", "cluster": {
            "server": url, "certificate-authority-data": data(ca.cert_pem)}}],
        "users": [{"name": "admin", "user": {"client-certificate-data": data(admin.cert_pem),
                                             "client-key-data": data(admin.key_pem)}}],
        "contexts": [{"name": "admin", "context": {"cluster": "bench", "user": "admin"}}]},
        sort_keys=False))
    return path


async def secured_server(tmp: Path, pods: int, runs: int, cold_runs: int) -> list[Row]:
    """The TLS server's comparisons; `cold_runs` runs of mkctl with a cold discovery
    cache and with no bytecode cache."""
    ca = pki.new_ca()
    serving = pki.issue(ca, "kube-apiserver", ip_addresses=("127.0.0.1",), server=True)
    cert, key = serving.write(tmp, "apiserver")
    (tmp / "ca.crt").write_bytes(ca.cert_pem)
    admin = pki.issue(ca, "kubernetes-admin", organizations=("system:masters",), client=True)
    admin_cert, admin_key = admin.write(tmp, "admin")
    context = ssl.create_default_context(cafile=tmp / "ca.crt")
    context.load_cert_chain(admin_cert, admin_key)
    extra = ("--log-requests=false", NO_SERVICE_ACCOUNTS, "--authorization-mode=Node,RBAC",
             "--enable-admission-plugins=NodeRestriction")
    async with EtcdProcess(tmp / "etcd-secured") as etcd, APIServerProcess(
            [etcd.client_url], tmp / "apiserver-secured.log", extra_args=extra,
            tls=ServingTLS(cert, key, tmp / "ca.crt")) as server:
        kubeconfig = admin_kubeconfig(tmp / "admin.kubeconfig", server.url, ca, admin)
        progress(f"creating {pods} pods on the TLS server")
        create_pods(server.url, pods, context)
        flags = [f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp / 'cache-secured'}"]

        def both(*args: str) -> dict[str, list[str]]:
            return {"kubectl": [KUBECTL, *flags, *args], "mkctl": [*MKCTL, *flags, *args]}

        create_events(server.url, "web-000", context)
        table, as_yaml = both("get", "pods"), both("get", "pods", "-o", "yaml")
        describe = both("describe", "pod", "web-000")
        for commands in (table, as_yaml, describe):
            compare_outputs(*commands.values())
        progress(f"timing `get pods`, `get pods -o yaml` and `describe pod` over TLS, "
                 f"{runs} runs each")
        medians = alternate(table, runs)
        yaml_medians = alternate(as_yaml, runs)
        describe_medians = alternate(describe, runs)
        cold_cache = tmp / "cache-cold"

        def cold() -> list[str]:
            subprocess.run(["rm", "-rf", str(cold_cache)], check=True)
            return [*MKCTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cold_cache}",
                    "get", "pods"]

        cold_times = [timed(cold())[0] for _ in range(cold_runs)]
        # Python reads a module's bytecode from the __pycache__ beside it even where it may
        # not write any (`make bytecode` and earlier runs leave it there): mkctl runs from a
        # copy of the package without it, so that every module of the package is compiled.
        source = tmp / "source-only"
        shutil.copytree(REPO / "minikube_py", source / "minikube_py",
                        ignore=shutil.ignore_patterns("__pycache__"))
        uncompiled = {**{name: value for name, value in ENV.items()
                         if name != "PYTHONPYCACHEPREFIX"}, "PYTHONDONTWRITEBYTECODE": "1",
                      "PYTHONPATH": str(source)}
        source_times = [timed(table["mkctl"], uncompiled, cwd=source)[0]
                        for _ in range(cold_runs)]
        floor = alternate({"python": [sys.executable, "-c", "pass"]}, runs)["python"]
    return [
        ratio_row(f"`get pods`, {pods} pods, TLS + client certificate: mkctl vs kubectl "
                  "(median)", medians, target=True),
        ratio_row(f"`get pods -o yaml`, {pods} pods, TLS: mkctl vs kubectl (median)",
                  yaml_medians, target=False),
        ratio_row("`describe pod` (a pod with 3 Events), TLS: mkctl vs kubectl (median)",
                  describe_medians, target=True),
        ("mkctl `get pods`, TLS, cold discovery cache (median)",
         ms(statistics.median(cold_times)), "-", "-"),
        ("mkctl `get pods`, TLS, no bytecode cache: every module compiled (median)",
         ms(statistics.median(source_times)), "-", "-"),
        ("`python -c pass` (the interpreter alone, mkctl's floor)", ms(floor), "-", "-"),
    ]


async def measure(args: object) -> list[Row]:
    pods = 5 if args.quick else args.pods  # type: ignore[attr-defined]
    runs = 1 if args.quick else args.runs  # type: ignore[attr-defined]
    cold_runs = 1 if args.quick else max(3, runs // 4)
    with scratch_directory() as scratch:
        tmp = Path(scratch)
        ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        rows = await plain_server(tmp, pods, runs)
        rows += await secured_server(tmp, pods, runs, cold_runs)
    return rows


def add_arguments(parser: object) -> None:
    add: Callable[..., object] = parser.add_argument  # type: ignore[attr-defined]
    add("--pods", type=int, default=100, help="pods on each server (100)")
    add("--runs", type=int, default=20, help="timed runs of each command (20)")


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "mkctl vs kubectl", "mkctl.py", measure,
                  add_arguments=add_arguments)
