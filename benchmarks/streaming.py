"""Benchmark: streams into a pod through the API server and the kubelet.

Run from the repository root as root: `.venv/bin/python benchmarks/streaming.py`
(options: --megabytes N (100), --runs N (3), --quick: a smoke run of one run of 2 MB and
one exec, --no-append). It starts a one-node cluster in the processes layout in a scratch
MINIKUBE_PY_HOME (it builds the node network mk-br0: do not run it beside another
cluster of this machine) and
measures, each as the median of the runs:

    1. port-forward throughput: N MB from a pod's `nc` through `kubectl port-forward`
       (SPDY tunnelled in a WebSocket: kubectl -> API server -> kubelet -> containerd),
       against a direct TCP connection to the pod IP in the same run (the floor).
       Target: >= 25% of the floor. The same through pods/portforward with the WebSocket
       v4 protocol the Python client speaks, for comparison.
    2. `kubectl exec POD -- true` wall time against `kubectl get pod POD` in the same
       run. Target: <= 3x.
    3. the kubelet's and the API server's CPU per forwarded MB.

The floor is slower than one would think: the pod's `head | nc` reaches this machine
through the node's veth (MTU 1500), while containerd's port-forward reads it over the
pod's own loopback, so the forwarded path can beat it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import BenchmarkError, cpu_seconds, progress  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.kubeconfig import ClientConfig, load_kubeconfig  # noqa: E402

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
PORT = 9000
MB = 1 << 20


def launcher(home: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "minikube_py.cluster", *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MINIKUBE_PY_HOME": str(home)})
    if done.returncode != 0:
        raise BenchmarkError(f"minikube-py {' '.join(args)} failed: {done.stderr.strip()}")


def kubectl(home: Path, *args: str) -> str:
    done = subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", *args],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BenchmarkError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def timed_kubectl(home: Path, *args: str) -> float:
    started = time.perf_counter()
    kubectl(home, *args)
    return time.perf_counter() - started


async def direct(host: str, port: int, size: int) -> float:
    """Seconds to read `size` bytes over plain TCP: from the pod's server, or from the
    local end of `kubectl port-forward`."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port)
    got = 0
    while got < size:
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        got += len(chunk)
    writer.close()
    if got < size:
        raise BenchmarkError(f"{host}:{port}: got {got} of {size} bytes")
    return time.perf_counter() - started


async def forwarded(config: ClientConfig, pod: str, size: int) -> float:
    """The same through pods/portforward: data on channel 0 after its 2-byte port, as
    the admin of the kubeconfig `up` wrote."""
    url = f"{config.server}/api/v1/namespaces/default/pods/{pod}/portforward?ports={PORT}"
    started = time.perf_counter()
    connector = aiohttp.TCPConnector(ssl=config.tls_context() or False)
    async with aiohttp.ClientSession(connector=connector) as session, session.ws_connect(
            url, protocols=("v4.channel.k8s.io",), max_msg_size=0) as ws:
        got, skipped = 0, {0: False, 1: False}
        async for message in ws:
            if message.type != aiohttp.WSMsgType.BINARY:
                break
            channel, data = message.data[0], message.data[1:]
            if not skipped.get(channel, True):  # the port number opens each channel
                skipped[channel], data = True, data[2:]
            if channel == 0:
                got += len(data)
                if got >= size:
                    break
            elif channel == 1 and data:
                raise BenchmarkError(f"port-forward error: {data.decode()}")
    if got < size:
        raise BenchmarkError(f"port-forward: got {got} of {size} bytes")
    return time.perf_counter() - started


def start_port_forward(home: Path, pod: str) -> tuple[subprocess.Popen[str], int]:
    """`kubectl port-forward pod/POD :PORT` running, and the local port it listens on."""
    process = subprocess.Popen(
        [KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", "port-forward", f"pod/{pod}",
         f":{PORT}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()  # Forwarding from 127.0.0.1:LOCAL -> PORT
    if not line.startswith("Forwarding from 127.0.0.1:"):
        process.kill()
        raise BenchmarkError(f"kubectl port-forward: {line}{process.communicate()[1]}")
    return process, int(line.split(":")[1].split()[0])


def pid_of(home: Path, name: str) -> int:
    return int((home / "run" / f"{name}.pid").read_text())


async def measure(args: Any) -> list[Row]:
    if os.geteuid() != 0:
        raise BenchmarkError("run it as root: the node is a network namespace")
    runs = 1 if args.quick else args.runs
    size = (2 if args.quick else args.megabytes) * MB
    commands = 1 if args.quick else 5 * runs  # timed `exec`s and `get`s
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-stream-") as scratch:
        home = Path(scratch) / "home"
        try:
            # the processes layout: the API server a host process whose pid `up` writes
            # (the streaming path is the same in both layouts)
            launcher(home, "up", "--layout", "processes")
            kubectl(home, "wait", "--for=condition=Ready", "node/node-1", "--timeout=60s")
            kubectl(home, "run", "source", "--image=busybox:1.36", "--", "sh", "-c",
                    f"while true; do head -c {size} /dev/zero | nc -l -p {PORT}; done")
            kubectl(home, "wait", "--for=condition=Ready", "pod/source", "--timeout=60s")
            ip = kubectl(home, "get", "pod", "source", "-o", "jsonpath={.status.podIP}")
            api = load_kubeconfig(home / "kubeconfig")
            kubelet, apiserver = pid_of(home, "node-1/kubelet"), pid_of(home, "apiserver")
            floors, through, websocket, cpu_kubelet, cpu_api = [], [], [], [], []
            forwarder, local_port = start_port_forward(home, "source")
            try:
                for run in range(runs):
                    await asyncio.sleep(0.5)  # nc listens again
                    floors.append(await direct(ip, PORT, size))
                    await asyncio.sleep(0.5)
                    before = cpu_seconds(kubelet), cpu_seconds(apiserver)
                    through.append(await direct("127.0.0.1", local_port, size))
                    cpu_kubelet.append((cpu_seconds(kubelet) - before[0]) / (size / MB))
                    cpu_api.append((cpu_seconds(apiserver) - before[1]) / (size / MB))
                    await asyncio.sleep(0.5)
                    websocket.append(await forwarded(api, "source", size))
                    progress(f"run {run + 1}: direct {size / MB / floors[-1]:.0f} MB/s, "
                             f"kubectl port-forward {size / MB / through[-1]:.0f} MB/s, "
                             f"WebSocket v4 {size / MB / websocket[-1]:.0f} MB/s")
            finally:
                forwarder.terminate()
                forwarder.wait(10)
            execs, gets = [], []
            for _ in range(commands):
                gets.append(timed_kubectl(home, "get", "pod", "source"))
                execs.append(timed_kubectl(home, "exec", "source", "--", "true"))
        finally:
            launcher(home, "down", "--purge")
    floor = size / MB / statistics.median(floors)
    rate = size / MB / statistics.median(through)
    ws_rate = size / MB / statistics.median(websocket)
    exec_ratio = statistics.median(execs) / statistics.median(gets)
    return [
        (f"direct TCP to the pod IP, {size // MB} MB (floor)", f"{floor:.0f} MB/s", "-", "-"),
        ("`kubectl port-forward` (SPDY in a WebSocket), same bytes", f"{rate:.0f} MB/s "
         f"({100 * rate / floor:.0f}% of the floor)", ">= 25% of the floor",
         verdict(rate >= 0.25 * floor)),
        ("pods/portforward (WebSocket v4, the Python client's), same bytes",
         f"{ws_rate:.0f} MB/s ({100 * ws_rate / floor:.0f}% of the floor)", "-", "-"),
        ("kubelet CPU per MB through kubectl port-forward",
         f"{1000 * statistics.median(cpu_kubelet):.1f} ms", "-", "-"),
        ("API server CPU per MB through kubectl port-forward",
         f"{1000 * statistics.median(cpu_api):.1f} ms", "-", "-"),
        ("`kubectl exec POD -- true` / `kubectl get pod POD`, median wall time",
         f"{statistics.median(execs):.3f} s / {statistics.median(gets):.3f} s = "
         f"{exec_ratio:.2f} x", "<= 3 x", verdict(exec_ratio <= 3)),
    ]


def add_arguments(parser: Any) -> None:
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "streaming", "streaming.py", measure,
                  add_arguments=add_arguments)
