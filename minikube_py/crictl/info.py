"""`crictl info` and `crictl version` (upstream cmd/crictl/info.go and version.go).

    info     Status (verbose unless -q): the runtime's conditions, then each key of its
             verbose info (containerd: its config, Go version, the CNI load status)
    version  Version: the CRI version asked, and the runtime's name and versions
"""

from __future__ import annotations

import argparse
from typing import Any

from google.protobuf import json_format

from minikube_py.cri import CRIError, RuntimeService
from minikube_py.crictl import display
from minikube_py.crictl.crictl_config import rpc_error
from minikube_py.crictl.errors import CrictlError
from minikube_py.gen.cri import api_pb2

CRI_VERSION = "v1"
"""remote.CRIVersionV1, the API version crictl asks for."""


def add_parsers(commands: Any) -> None:
    info = commands.add_parser("info", help="Display information of the container runtime")
    info.add_argument("-o", "--output", default=display.OUTPUT_JSON,
                      help="Output format, One of: json|yaml")
    info.add_argument("-q", "--quiet", action="store_true",
                      help="Do not show verbose information")
    info.set_defaults(run=run_info)
    version = commands.add_parser("version", help="Display runtime version information")
    version.set_defaults(run=run_version)


async def run_info(runtime: RuntimeService, args: argparse.Namespace) -> None:
    """Info: the status, the runtime handlers and features when the runtime names them,
    and the verbose info."""
    if args.output not in (display.OUTPUT_JSON, display.OUTPUT_YAML):
        raise CrictlError(f'getting status of runtime: unsupported format: "{args.output}"')
    try:
        answer = await runtime.status(api_pb2.StatusRequest(verbose=not args.quiet))
    except CRIError as err:
        raise CrictlError(f"getting status of runtime: {rpc_error(err)}") from None
    data = display.status_data(display.proto_dict(answer.status), answer.info)
    # encoding/json of the Go structs: snake_case names, empty fields left out
    if answer.runtime_handlers:
        data["runtimeHandlers"] = [json_format.MessageToDict(
            handler, preserving_proto_field_name=True) for handler in answer.runtime_handlers]
    if answer.HasField("features"):
        data["features"] = json_format.MessageToDict(answer.features,
                                                     preserving_proto_field_name=True)
    display.print_statuses([data], args.output)


async def run_version(runtime: RuntimeService, args: argparse.Namespace) -> None:
    """Version, printed with Println (a space after each colon, then Println's own)."""
    try:
        answer = await runtime.version(api_pb2.VersionRequest(version=CRI_VERSION))
    except CRIError as err:
        raise CrictlError(f"getting the runtime version: {rpc_error(err)}") from None
    print("Version: ", answer.version)
    print("RuntimeName: ", answer.runtime_name)
    print("RuntimeVersion: ", answer.runtime_version)
    print("RuntimeApiVersion: ", answer.runtime_api_version)
