"""Which runtime crictl talks to, and the connection to it (upstream cmd/crictl/
crictl_config.go, pkg/common/config.go and file.go).

The endpoint, first found wins:

    --runtime-endpoint / -r  (or CONTAINER_RUNTIME_ENDPOINT, the same flag's variable)
    runtime-endpoint: in the config file: --config / -c, CRI_CONFIG_FILE, /etc/crictl.yaml,
                      or crictl.yaml beside the crictl program
    none set: upstream's deprecated default list, each tried in turn

The image endpoint is --image-endpoint / IMAGE_SERVICE_ENDPOINT / image-endpoint:, else the
runtime's. Connecting checks the runtime answers Version within --timeout (2 s), retrying
an endpoint that was set up to --max-retries times (0.5 s, 1 s, 2 s... apart).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import grpc
import yaml

from minikube_py.cri import CRIError, RemoteRuntime, grpc_target
from minikube_py.crictl.errors import CrictlError, warn
from minikube_py.gen.cri import api_pb2

DEFAULT_CONFIG_PATH = "/etc/crictl.yaml"
DEFAULT_RUNTIME_ENDPOINTS = ("unix:///run/containerd/containerd.sock",
                             "unix:///run/crio/crio.sock", "unix:///var/run/cri-dockerd.sock")
DEFAULT_TIMEOUT = 2.0
DEFAULT_MAX_RETRIES = 3
RETRY_DELAY, RETRY_MAX_DELAY = 0.5, 5.0
HOW_TO_SET = ("set it with --runtime-endpoint (-r), CONTAINER_RUNTIME_ENDPOINT, or "
              f"runtime-endpoint: in {DEFAULT_CONFIG_PATH} (or the file CRI_CONFIG_FILE names)")

log = logging.getLogger(__name__)


@dataclass
class ServerConfig:
    """What the config file says (upstream's ServerConfiguration)."""

    runtime_endpoint: str = ""
    image_endpoint: str = ""
    timeout: float = 0.0
    debug: bool = False
    max_retries: int | None = None


@dataclass
class CrictlConfig:
    """Flags over the config file (upstream's CrictlConfig)."""

    runtime_endpoint: str
    runtime_endpoint_is_set: bool
    image_endpoint: str
    image_endpoint_is_set: bool
    timeout: float
    debug: bool
    max_retries: int


def read_config(path: Path) -> ServerConfig:
    """ReadConfig: the YAML keys runtime-endpoint, image-endpoint, timeout (seconds),
    debug and max-retries."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise CrictlError(f"load config file {path}: {err}") from None
    if not isinstance(data, dict):
        raise CrictlError(f"load config file {path}: not a mapping of options")
    retries = data.get("max-retries")
    return ServerConfig(runtime_endpoint=str(data.get("runtime-endpoint") or ""),
                        image_endpoint=str(data.get("image-endpoint") or ""),
                        timeout=float(data.get("timeout") or 0),
                        debug=bool(data.get("debug")),
                        max_retries=int(retries) if retries is not None else None)


def server_config_from_file(path: str, explicit: bool) -> ServerConfig | None:
    """GetServerConfigFromFile: the named file, else crictl.yaml beside the program;
    None when neither exists (an error when the file was named with --config)."""
    config_file = Path(path)
    if not config_file.exists():
        beside = Path(sys.argv[0]).resolve().parent / "crictl.yaml"
        if explicit:
            raise CrictlError(f"get server config: config file {path} does not exist")
        warn(f'Config "{path}" does not exist, trying next: "{beside}"')
        if not beside.exists():
            return None
        config_file = beside
    return read_config(config_file)


def resolve(*, config_path: str, config_is_set: bool, runtime_endpoint: str | None,
            image_endpoint: str | None, timeout: float | None, debug: bool | None,
            max_retries: int | None) -> CrictlConfig:
    """newCrictlConfig: each flag that was given, else the file's value, else the default.
    (An environment variable counts as its flag, as in urfave/cli.)"""
    file = server_config_from_file(config_path, config_is_set) or ServerConfig()
    endpoint = runtime_endpoint if runtime_endpoint is not None else file.runtime_endpoint
    images = image_endpoint if image_endpoint is not None else file.image_endpoint
    if timeout is not None:
        resolved_timeout = timeout if timeout > 0 else DEFAULT_TIMEOUT
    else:
        resolved_timeout = file.timeout if file.timeout > 0 else DEFAULT_TIMEOUT
    retries = max_retries if max_retries is not None else (
        file.max_retries if file.max_retries is not None else DEFAULT_MAX_RETRIES)
    endpoint_is_set = runtime_endpoint is not None or bool(file.runtime_endpoint)
    return CrictlConfig(
        runtime_endpoint=endpoint,
        runtime_endpoint_is_set=endpoint_is_set,
        image_endpoint=images or endpoint,
        image_endpoint_is_set=bool(images) or endpoint_is_set,
        timeout=resolved_timeout,
        debug=debug if debug is not None else file.debug,
        max_retries=retries)


def parse_go_duration(text: str) -> float:
    """A Go duration flag value ("2s", "500ms", "1m30s"; "0") in seconds."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
             "h": 3600.0}
    if text in ("0", "-0", "+0"):
        return 0.0
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)", text.lstrip("+-"))
    if not parts or "".join(n + u for n, u in parts) != text.lstrip("+-"):
        raise ValueError(f'time: invalid duration "{text}"')
    seconds = sum(float(number) * units[unit] for number, unit in parts)
    return -seconds if text.startswith("-") else seconds


def image_service(config: CrictlConfig) -> CrictlConfig:
    """GetImageService's endpoint: --image-endpoint, else the runtime's."""
    return dataclasses.replace(config, runtime_endpoint=config.image_endpoint,
                               runtime_endpoint_is_set=config.image_endpoint_is_set)


async def connect(config: CrictlConfig) -> RemoteRuntime:
    """GetRuntimeService: a client whose runtime answered Version; CrictlError saying
    which endpoint failed and how to point crictl elsewhere."""
    if config.runtime_endpoint_is_set:
        if not config.runtime_endpoint:
            raise CrictlError("--runtime-endpoint is not set")
        try:
            grpc_target(config.runtime_endpoint)
        except ValueError as err:
            raise CrictlError(f"{err}; {HOW_TO_SET}") from None
        return await _connect_with_retry(config.runtime_endpoint, config)
    warn(f"runtime connect using default endpoints: [{' '.join(DEFAULT_RUNTIME_ENDPOINTS)}]."
         " As the default settings are now deprecated, you should set the endpoint "
         "instead.")
    for endpoint in DEFAULT_RUNTIME_ENDPOINTS:
        with contextlib.suppress(CrictlError):
            return await _validated(endpoint, config.timeout)
    raise CrictlError(f"no container runtime answers at the default endpoints "
                      f"({' '.join(DEFAULT_RUNTIME_ENDPOINTS)}): {HOW_TO_SET}")


async def _connect_with_retry(endpoint: str, config: CrictlConfig) -> RemoteRuntime:
    """connectWithRetry: try again with a doubling delay, max_retries times (negative:
    for ever)."""
    delay, attempt = RETRY_DELAY, 0
    while True:
        try:
            return await _validated(endpoint, config.timeout)
        except CrictlError:
            if config.max_retries >= 0 and attempt >= config.max_retries:
                raise
        await asyncio.sleep(delay)
        delay, attempt = min(delay * 2, RETRY_MAX_DELAY), attempt + 1


async def _validated(endpoint: str, timeout: float) -> RemoteRuntime:
    """NewRemoteRuntimeService + validateServiceConnection: Version must answer."""
    runtime = RemoteRuntime(endpoint)
    try:
        await runtime.version(api_pb2.VersionRequest(version="v1"), timeout=timeout)
    except CRIError as err:
        await runtime.close()
        if err.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            socket = endpoint.removeprefix("unix://")
            why = ("no such socket" if not os.path.exists(socket)
                   else f"it did not answer within {timeout:g}s" if
                   err.code is grpc.StatusCode.DEADLINE_EXCEEDED else "nothing answers on it")
            raise CrictlError(f"cannot connect to the container runtime at {endpoint} "
                              f"({why}): is containerd running there? If it runs elsewhere, "
                              f"{HOW_TO_SET}") from None
        raise CrictlError(f'validate CRI v1 runtime API for endpoint "{endpoint}": '
                          f"{rpc_error(err)}") from None
    log.debug("Connected successfully using endpoint: %s", endpoint)
    return runtime


def rpc_error(err: CRIError) -> str:
    """A gRPC failure as Go's status error prints it: rpc error: code = NotFound desc = ..."""
    code = "".join(part.title() for part in err.code.name.split("_"))
    return f"rpc error: code = {code} desc = {err.message}"
