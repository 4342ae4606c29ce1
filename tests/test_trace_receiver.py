"""The trace receiver (`python -m minikube_py.tracestore`) as a process, fed by the
exporter the components use: spans found by trace and by object, followed live, kept
across a restart; what is not OTLP/HTTP JSON is refused."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikube_py.process import free_port
from minikube_py.tracing.exporter import OTLPExporter
from minikube_py.tracing.tracer import Tracer


def start(data: Path, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "minikube_py.tracestore", f"--data-dir={data}",
         f"--port={port}"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
                return process
            except OSError:
                assert process.poll() is None, (
                    process.stderr.read() if process.stderr else "")
                assert time.monotonic() < deadline, "the receiver did not start"
                time.sleep(0.05)
    except BaseException:
        stop(process)  # a receiver that never answered is not left behind
        raise


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    process = start(tmp_path / "spans", port)
    yield f"http://127.0.0.1:{port}", tmp_path / "spans"
    stop(process)


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.load(answer)


def post(url: str, body: bytes, content_type: str) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


async def test_exported_spans_are_found_by_trace_and_by_the_object_they_name(
        receiver: tuple[str, Path]) -> None:
    url, _ = receiver
    exporter = OTLPExporter(url, "kube-apiserver", interval=0.05)
    tracer = Tracer("kube-apiserver", exporter)
    with tracer.span("create pods", **{"k8s.resource": "pods", "k8s.namespace": "default",
                                       "k8s.name": "web-1"}) as root, tracer.span("etcd Txn"):
        pass
    await exporter.close()
    assert exporter.sent == 2 and exporter.dropped == 0
    found = await asyncio.to_thread(
        get, f"{url}/api/v1/traces?resource=pods&namespace=default&name=web-1")
    (trace,) = found["traces"]
    assert trace["traceId"] == root.context.trace_id
    assert [s["name"] for s in trace["spans"]] == ["create pods", "etcd Txn"]
    assert all(s["service"] == "kube-apiserver" for s in trace["spans"])
    one = await asyncio.to_thread(get, f"{url}/api/v1/traces/{root.context.trace_id}")
    assert len(one["spans"]) == 2


async def test_following_an_object_streams_the_spans_of_its_traces_as_they_come(
        receiver: tuple[str, Path]) -> None:
    url, _ = receiver
    reader, writer = await asyncio.open_connection("127.0.0.1", int(url.rsplit(":", 1)[1]))
    writer.write(b"GET /api/v1/traces?resource=pods&namespace=default&name=web-2&follow=true"
                 b" HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    async with asyncio.timeout(5):
        await reader.readuntil(b"\r\n\r\n")  # the headers
    exporter = OTLPExporter(url, "kubelet", interval=0.05)
    tracer = Tracer("kubelet", exporter)
    with tracer.span("SyncPod", **{"k8s.resource": "pods", "k8s.namespace": "default",
                                   "k8s.name": "web-2"}), tracer.span("RunPodSandbox"):
        pass
    await exporter.close()
    body, names = b"", []
    while len(names) < 2:  # chunked: JSON lines between the chunk sizes
        async with asyncio.timeout(5):
            body += await reader.read(65536)
        names = [json.loads(line)["name"] for line in body.split(b"\n")
                 if line.strip().startswith(b"{")]
    assert names == ["RunPodSandbox", "SyncPod"]  # in the order they ended
    writer.close()


def test_spans_are_kept_across_a_restart(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path / "spans", port)
    url = f"http://127.0.0.1:{port}"

    async def send() -> str:
        exporter = OTLPExporter(url, "scheduler", interval=0.05)
        with Tracer("scheduler", exporter).span(
                "Bind", **{"k8s.resource": "pods", "k8s.name": "p"}) as span:
            pass
        await exporter.close()
        return span.context.trace_id

    try:
        trace_id = asyncio.run(send())
    finally:
        stop(process)
    process = start(tmp_path / "spans", port)
    try:
        assert [s["name"] for s in get(f"{url}/api/v1/traces/{trace_id}")["spans"]] == ["Bind"]
    finally:
        stop(process)


def test_what_is_not_otlp_json_is_refused_and_nothing_is_kept(
        receiver: tuple[str, Path]) -> None:
    url, data = receiver
    status, answer = post(f"{url}/v1/traces", b"\x0a\x00", "application/x-protobuf")
    assert status == 415 and "OTLP/HTTP JSON" in answer["message"]
    status, answer = post(f"{url}/v1/traces", b"{not json", "application/json")
    assert status == 400
    status, _ = post(f"{url}/v1/traces", json.dumps(
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "no ids"}]}]}]}).encode(),
        "application/json")
    assert status == 400
    assert list(data.glob("spans-*.jsonl")) == []
    with pytest.raises(urllib.error.HTTPError) as missing:
        get(f"{url}/api/v1/traces/{'a' * 32}")
    assert missing.value.code == 404


def test_a_bad_flag_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "minikube_py.tracestore",
                             f"--data-dir={tmp_path}", "--max-spans=0"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert result.stderr.strip() == "traces: --max-spans must be 1 or more, not 0"
