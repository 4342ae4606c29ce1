"""crictl against a real containerd: each command prints what cri-tools' crictl prints
(its columns, 13-character ids, "x seconds ago", json|yaml carrying the CRI fields), exec
and logs reach the container, and failures are one line that says what to do.

The pods are made directly over CRI (as test_runtime_setup.py does): `web` runs and has
written to stdout and stderr, `done` has exited. crictl runs as a process, as a user runs
it: `python -m minikube_py.crictl` (the `crictl` console script calls the same main).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from ipaddress import ip_address, ip_network
from pathlib import Path

import pytest
import yaml

from minikube_py.cri import RemoteRuntime
from minikube_py.gen.cri import api_pb2
from tests.api_helpers import eventually
from tests.node_fixtures import ContainerdNode
from tests.test_runtime_setup import Pod, running_pod

pytestmark = pytest.mark.slow

# What cri-tools prints (cmd/crictl/container.go, sandbox.go, image.go).
PS_COLUMNS = ["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID", "POD",
              "NAMESPACE"]
PODS_COLUMNS = ["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME"]
IMAGES_COLUMNS = ["IMAGE", "TAG", "IMAGE ID", "SIZE"]
AGO = re.compile(r"^(Less than a second|1 second|\d+ seconds|About a minute|\d+ minutes) ago$")
RFC3339_NANO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$")
BUSYBOX = "localhost/busybox:1.36"


@dataclass
class Pods:
    endpoint: str
    web: Pod
    done: Pod
    web_name: str  # unique: other tests' pods may share the session's node


@pytest.fixture(scope="module")
async def pods(containerd_node: ContainerdNode, fast_tmp: Path) -> AsyncIterator[Pods]:
    """`web`, which printed two lines to stdout and one to stderr and runs on, and `done`,
    whose container has exited."""
    web_name = f"web-{uuid.uuid4().hex[:8]}"
    async with AsyncExitStack() as stack:
        runtime = await stack.enter_async_context(RemoteRuntime(containerd_node.endpoint))
        web = await stack.enter_async_context(running_pod(
            runtime, fast_tmp / "crictl-logs", web_name, BUSYBOX,
            command=("sh", "-c", "echo out-one; echo err-one >&2; echo out-two; "
                                 "exec sleep 3600")))
        done = await stack.enter_async_context(running_pod(
            runtime, fast_tmp / "crictl-logs", f"done-{web_name}", BUSYBOX,
            command=("true",)))

        async def settled() -> bool:
            states = {}
            for container_id in (web.container_ids[0], done.container_ids[0]):
                status = await runtime.container_status(
                    api_pb2.ContainerStatusRequest(container_id=container_id))
                states[container_id] = status.status.state
            log = web.log_dir / "main" / "0.log"
            return (states[done.container_ids[0]] == api_pb2.CONTAINER_EXITED
                    and log.exists() and log.read_text().count("\n") >= 3)

        await eventually(settled, timeout=30, what="web to log and done to exit")
        yield Pods(containerd_node.endpoint, web, done, web_name)


def crictl(*args: str, endpoint: str | None = None, stdin: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run crictl as a process; -r ENDPOINT first when given."""
    command = [sys.executable, "-m", "minikube_py.crictl",
               *(["-r", endpoint] if endpoint else []), *args]
    return subprocess.run(command, capture_output=True, text=True, input=stdin, timeout=120,
                          env={**os.environ, **(env or {})})


async def run(*args: str, endpoint: str | None = None, stdin: str | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(crictl, *args, endpoint=endpoint, stdin=stdin, env=env)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def errors(result: subprocess.CompletedProcess[str]) -> list[str]:
    """crictl's error lines (logrus ERRO); its WARN lines are notices."""
    return [line for line in result.stderr.splitlines() if not line.startswith("WARN[")]


def table(text: str) -> tuple[list[str], list[list[str]]]:
    """A crictl table: each column starts where its header starts (tabwriter), and each
    column but the last is at least 20 wide (minwidth 20, padding 3)."""
    lines = text.splitlines()
    header = lines[0]
    starts = [match.start() for match in re.finditer(r"(?<=   )\S|^\S", header)]
    assert all(b - a >= 20 for a, b in zip(starts, starts[1:], strict=False)), header
    rows = []
    for line in lines[1:]:
        cells = [line[start:end].rstrip() for start, end in
                 zip(starts, [*starts[1:], len(line)], strict=True)]
        assert all(line[start - 1] == " " for start in starts[1:]), line
        rows.append(cells)
    return [header[s:e].strip() for s, e in zip(starts, [*starts[1:], len(header)],
                                                 strict=True)], rows


# -- ps ----------------------------------------------------------------------------------

async def test_ps_prints_cri_tools_columns_with_13_character_ids_and_ages(pods: Pods) -> None:
    columns, rows = table(ok(await run("ps", endpoint=pods.endpoint)))
    assert columns == PS_COLUMNS
    web_id, web_pod = pods.web.container_ids[0], pods.web.sandbox_id
    row = next(row for row in rows if row[0] == web_id[:13])
    assert row[1:2] + row[3:7] == [BUSYBOX, "Running", "main", "0", web_pod[:13]]
    assert AGO.match(row[2]), row[2]
    assert [r for r in rows if r[0] == pods.done.container_ids[0][:13]] == []


async def test_ps_all_quiet_and_filters_select_containers_by_state_pod_and_name(
        pods: Pods) -> None:
    web, done = pods.web.container_ids[0], pods.done.container_ids[0]
    running = ok(await run("ps", "-q", endpoint=pods.endpoint)).split()
    every = ok(await run("ps", "-a", "-q", endpoint=pods.endpoint)).split()
    assert web in running and done not in running
    assert {web, done} <= set(every)
    exited = ok(await run("ps", "--state", "exited", "-q", endpoint=pods.endpoint)).split()
    assert done in exited and web not in exited
    assert ok(await run("ps", "-aq", "--pod", pods.done.sandbox_id[:13],
                        endpoint=pods.endpoint)).split() == [done]
    assert ok(await run("ps", "-a", "-q", "--name", "^nomatch$",
                        endpoint=pods.endpoint)) == ""
    _, rows = table(ok(await run("ps", "-a", "--no-trunc", "--pod", pods.done.sandbox_id,
                                 endpoint=pods.endpoint)))
    assert [(row[0], row[3], row[6]) for row in rows] == [(done, "Exited", pods.done.sandbox_id)]


async def test_ps_output_json_and_yaml_are_the_list_containers_response(pods: Pods) -> None:
    answer = json.loads(ok(await run("ps", "-o", "json", endpoint=pods.endpoint)))
    container = next(c for c in answer["containers"] if c["id"] == pods.web.container_ids[0])
    assert container["podSandboxId"] == pods.web.sandbox_id
    assert container["metadata"] == {"name": "main", "attempt": 0}
    assert container["image"]["image"] == BUSYBOX
    assert container["imageRef"].startswith("sha256:")
    assert container["state"] == "CONTAINER_RUNNING"
    assert container["createdAt"].isdigit()  # int64 is a string in protojson
    assert container["labels"] == {}  # defaults are printed (EmitDefaultValues)
    as_yaml = yaml.safe_load(ok(await run("ps", "-o", "yaml", endpoint=pods.endpoint)))
    assert as_yaml == answer


# -- pods --------------------------------------------------------------------------------

async def test_pods_prints_cri_tools_columns_and_filters_by_name_and_namespace(
        pods: Pods) -> None:
    columns, rows = table(ok(await run("pods", endpoint=pods.endpoint)))
    assert columns == PODS_COLUMNS
    row = next(row for row in rows if row[0] == pods.web.sandbox_id[:13])
    assert row[2:] == ["Ready", pods.web_name, "default", "0", "(default)"]
    assert AGO.match(row[1]), row[1]
    assert ok(await run("pods", "-q", "--name", f"^{pods.web_name}$",
                        endpoint=pods.endpoint)).split() == [pods.web.sandbox_id]
    assert ok(await run("pods", "-q", "--namespace", "^kube-system$", "--name",
                        f"^{pods.web_name}$", endpoint=pods.endpoint)) == ""
    answer = json.loads(ok(await run("pods", "-o", "json", "--name", f"^{pods.web_name}$",
                                     endpoint=pods.endpoint)))
    assert [(item["id"], item["metadata"]["name"], item["metadata"]["namespace"],
             item["state"]) for item in answer["items"]] == [
        (pods.web.sandbox_id, pods.web_name, "default", "SANDBOX_READY")]


# -- images ------------------------------------------------------------------------------

async def test_images_prints_one_row_per_tag_with_short_ids_and_sizes(pods: Pods) -> None:
    async with RemoteRuntime(pods.endpoint) as runtime:
        images = (await runtime.list_images(api_pb2.ListImagesRequest())).images
    busybox = next(image for image in images if BUSYBOX in image.repo_tags)
    columns, rows = table(ok(await run("images", endpoint=pods.endpoint)))
    assert columns == IMAGES_COLUMNS
    row = next(row for row in rows if row[:2] == ["localhost/busybox", "1.36"])
    assert row[2] == busybox.id.removeprefix("sha256:")[:13]
    assert re.match(r"^\d+(\.\d+)?(B|kB|MB|GB)$", row[3]), row[3]
    quiet = ok(await run("images", "-q", endpoint=pods.endpoint)).split()
    assert busybox.id in quiet and all(i.startswith("sha256:") for i in quiet)
    answer = json.loads(ok(await run("images", "-o", "json", endpoint=pods.endpoint)))
    assert BUSYBOX in next(i for i in answer["images"] if i["id"] == busybox.id)["repoTags"]


async def test_inspecti_shows_the_image_status(pods: Pods) -> None:
    answer = json.loads(ok(await run("inspecti", BUSYBOX, endpoint=pods.endpoint)))
    assert BUSYBOX in answer["status"]["repoTags"]
    assert answer["status"]["id"].startswith("sha256:")


# -- inspect, inspectp -------------------------------------------------------------------

async def test_inspect_shows_a_containers_status_and_the_runtimes_verbose_info(
        pods: Pods) -> None:
    web = pods.web.container_ids[0]
    answer = json.loads(ok(await run("inspect", web[:13], endpoint=pods.endpoint)))
    status = answer["status"]
    assert (status["id"], status["state"], status["metadata"]["name"]) == (
        web, "CONTAINER_RUNNING", "main")
    assert RFC3339_NANO.match(status["createdAt"]) and RFC3339_NANO.match(status["startedAt"])
    assert status["finishedAt"] == "0001-01-01T00:00:00Z"  # not finished: Go's zero time
    assert status["logPath"].endswith("/main/0.log")
    assert answer["info"]["pid"] > 0  # containerd's verbose info, parsed as JSON
    assert list(answer) == sorted(answer) and list(status) == sorted(status)
    quiet = json.loads(ok(await run("inspect", "-q", web, endpoint=pods.endpoint)))
    assert list(quiet) == ["status"]
    done = json.loads(ok(await run("inspect", pods.done.container_ids[0],
                                   endpoint=pods.endpoint)))["status"]
    assert done["state"] == "CONTAINER_EXITED" and RFC3339_NANO.match(done["finishedAt"])
    text = ok(await run("inspect", "-o", "table", web, endpoint=pods.endpoint))
    assert text.splitlines()[:3] == [f"ID: {web}", "Name: main", "State: CONTAINER_RUNNING"]


async def test_inspectp_shows_a_sandboxs_status_with_its_pod_ip(pods: Pods,
                                                                 containerd_node: ContainerdNode
                                                                 ) -> None:
    answer = json.loads(ok(await run("inspectp", pods.web.sandbox_id[:13],
                                     endpoint=pods.endpoint)))
    status = answer["status"]
    assert (status["id"], status["state"]) == (pods.web.sandbox_id, "SANDBOX_READY")
    assert (status["metadata"]["name"], status["metadata"]["namespace"]) == (
        pods.web_name, "default")
    assert ip_address(status["network"]["ip"]) in ip_network(containerd_node.pod_cidr,
                                                             strict=False)
    assert RFC3339_NANO.match(status["createdAt"])
    assert "info" in answer
    text = ok(await run("inspectp", "-o", "table", pods.web.sandbox_id,
                        endpoint=pods.endpoint))
    assert f"IP Addresses: {status['network']['ip']}" in text.splitlines()
    assert "Status: SANDBOX_READY" in text.splitlines()


# -- info, version -----------------------------------------------------------------------

async def test_info_and_version_report_the_runtime(pods: Pods) -> None:
    answer = json.loads(ok(await run("info", endpoint=pods.endpoint)))
    conditions = {c["type"]: c["status"] for c in answer["status"]["conditions"]}
    assert conditions == {"RuntimeReady": True, "NetworkReady": True}
    assert "config" in answer  # containerd's verbose info
    assert list(json.loads(ok(await run("info", "-q", endpoint=pods.endpoint)))) == ["status"]
    lines = ok(await run("version", endpoint=pods.endpoint)).splitlines()
    assert lines[0] == "Version:  0.1.0" and lines[1] == "RuntimeName:  containerd"
    assert lines[3] == "RuntimeApiVersion:  v1"


# -- logs --------------------------------------------------------------------------------

async def test_logs_prints_stdout_to_stdout_and_stderr_to_stderr(pods: Pods) -> None:
    web = pods.web.container_ids[0]
    result = await run("logs", web, endpoint=pods.endpoint)
    assert result.returncode == 0 and result.stdout == "out-one\nout-two\n"
    assert errors(result) == ["err-one"]
    # The file's order of stdout and stderr lines is the order containerd read its two
    # pipes in, which varies: the last two lines are read from the timestamped log.
    stamped = await run("logs", "-t", web, endpoint=pods.endpoint)
    lines = sorted([(line.split(" ", 1)[0], "stdout", line)
                    for line in stamped.stdout.splitlines()]
                   + [(line.split(" ", 1)[0], "stderr", line) for line in errors(stamped)])
    assert [line.split(" ", 1)[1] for _, _, line in lines] in (
        ["out-one", "out-two", "err-one"], ["out-one", "err-one", "out-two"],
        ["err-one", "out-one", "out-two"])
    tail = await run("logs", "--tail", "2", "-t", web, endpoint=pods.endpoint)
    assert tail.stdout.splitlines() == [line for _, stream, line in lines[-2:]
                                        if stream == "stdout"], tail.stdout
    assert errors(tail) == [line for _, stream, line in lines[-2:] if stream == "stderr"]
    assert all(re.fullmatch(r"\S+Z \S+", line) for _, _, line in lines)
    only = await run("logs", "--stream", "stdout", web, endpoint=pods.endpoint)
    assert only.stdout == "out-one\nout-two\n" and errors(only) == []


async def test_logs_follow_ends_when_the_container_exits(pods: Pods, fast_tmp: Path) -> None:
    async with RemoteRuntime(pods.endpoint) as runtime, running_pod(
            runtime, fast_tmp / "crictl-logs", "counter", BUSYBOX,
            command=("sh", "-c", "echo first; sleep 2; echo second")) as pod:
        started = time.monotonic()
        result = await run("logs", "-f", pod.container_ids[0], endpoint=pods.endpoint)
    assert ok(result) == "first\nsecond\n"
    assert time.monotonic() - started >= 2


# -- exec --------------------------------------------------------------------------------

async def test_exec_runs_a_command_and_passes_its_output_and_exit_code(pods: Pods) -> None:
    web = pods.web.container_ids[0]
    result = await run("exec", web, "sh", "-c", "echo hello; echo oops >&2; exit 3",
                       endpoint=pods.endpoint)
    assert (result.returncode, result.stdout) == (3, "hello\n")
    oops, line = errors(result)
    assert oops == "oops"
    assert re.fullmatch(rf"ERRO\[\d{{4}}\] execing command in container {web}: command "
                        r"terminated with exit code 3", line), line
    assert ok(await run("exec", web, "hostname", endpoint=pods.endpoint)) == \
        f"{pods.web_name}\n"
    piped = await run("exec", "-i", web, "sh", "-c", "cat; echo end",
                      endpoint=pods.endpoint, stdin="line one\nline two\n")
    assert ok(piped) == "line one\nline two\nend\n"


async def test_exec_sync_answers_in_one_message(pods: Pods) -> None:
    web = pods.web.container_ids[0]
    result = await run("exec", "-s", web, "sh", "-c", "echo out; echo err >&2",
                       endpoint=pods.endpoint)
    assert ok(result) == "out\n\nerr\n\n"  # stdout, then stderr, each with Println
    failed = await run("exec", "-s", web, "sh", "-c", "exit 4", endpoint=pods.endpoint)
    assert failed.returncode == 4
    assert errors(failed)[-1].endswith("'sh -c exit 4' exited with 4:")


async def test_exec_with_a_tty_runs_a_shell_in_the_terminal_and_passes_its_size(
        pods: Pods) -> None:
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "minikube_py.crictl", "-r", pods.endpoint, "exec", "-it",
         pods.web.container_ids[0], "sh"],
        stdin=secondary, stdout=secondary, stderr=secondary, close_fds=True)
    os.close(secondary)
    try:
        seen = await asyncio.to_thread(_read_until, primary, b"# ")
        assert b"# " in seen
        os.write(primary, b"tty; stty size; exit 7\r")
        seen = await asyncio.to_thread(_read_until, primary, b"exit code 7")
        assert b"/dev/pts/" in seen and b"33 101" in seen, seen
        assert await asyncio.to_thread(process.wait, 30) == 7
    finally:
        process.kill()
        process.wait()
        os.close(primary)


def _read_until(fd: int, wanted: bytes, timeout: float = 30.0) -> bytes:
    seen, deadline = b"", time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


# -- which runtime, and failures ---------------------------------------------------------

async def test_the_endpoint_comes_from_the_environment_or_the_config_file(
        pods: Pods, tmp_path: Path) -> None:
    from_env = await run("ps", "-q", env={"CONTAINER_RUNTIME_ENDPOINT": pods.endpoint})
    assert pods.web.container_ids[0] in ok(from_env).split()
    config = tmp_path / "crictl.yaml"
    config.write_text(f"runtime-endpoint: {pods.endpoint}\ntimeout: 5\n")
    from_file = await run("pods", "-q", env={"CRI_CONFIG_FILE": str(config)})
    assert pods.web.sandbox_id in ok(from_file).split()
    assert from_file.stderr == ""  # a config file that names the endpoint: no warnings


async def test_a_wrong_endpoint_is_one_line_naming_it_and_how_to_set_it(
        tmp_path: Path) -> None:
    endpoint = f"unix://{tmp_path}/nothing.sock"
    result = await run("--max-retries", "0", "ps", endpoint=endpoint)
    assert result.returncode == 1 and result.stdout == ""
    [line] = errors(result)
    assert endpoint in line and "is containerd running there?" in line
    assert "--runtime-endpoint" in line and "CONTAINER_RUNTIME_ENDPOINT" in line


@pytest.mark.parametrize("command", [["inspect"], ["inspectp"], ["logs"],
                                     ["exec", "-s"], ["exec"]])
async def test_an_unknown_id_is_one_line_with_the_runtimes_not_found(
        pods: Pods, command: list[str]) -> None:
    args = [*command, "0123456789abc", *(["true"] if command[0] == "exec" else [])]
    result = await run(*args, endpoint=pods.endpoint)
    assert result.returncode == 1 and result.stdout == ""
    [line] = errors(result)
    assert "code = NotFound" in line and "not found" in line
