"""`crictl pods` and `crictl inspectp` (upstream cmd/crictl/sandbox.go: ListPodSandboxes,
OutputPodSandboxes, podSandboxStatus).

    pods      ListPodSandbox with a filter (id, state ready|notready, labels), then --name
              and --namespace as regular expressions, newest first; a table, the ids
              (-q), or the ListPodSandboxResponse as json|yaml
    inspectp  PodSandboxStatus (verbose unless -q) of each id, or of what the filters
              find; json (the default), yaml or table
"""

from __future__ import annotations

import argparse
from typing import Any

from minikube_py.cri import CRIError, RuntimeService
from minikube_py.crictl import display
from minikube_py.crictl.container import (
    add_inspect_parser,
    add_list_parser,
    newest_matching,
    parse_labels,
    print_labels,
)
from minikube_py.crictl.crictl_config import rpc_error
from minikube_py.crictl.errors import CrictlError
from minikube_py.gen.cri import api_pb2

STATES = {"ready": api_pb2.SANDBOX_READY, "notready": api_pb2.SANDBOX_NOTREADY}
STATE_NAMES = {api_pb2.SANDBOX_READY: "Ready", api_pb2.SANDBOX_NOTREADY: "NotReady"}


def add_filter_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="",
                        help="Filter by pod name regular expression pattern")
    parser.add_argument("--namespace", default="",
                        help="Filter by pod namespace regular expression pattern")
    parser.add_argument("-s", "--state", default="", help="Filter by pod state")
    parser.add_argument("--label", action="append", default=[],
                        help="Filter by key=value label")
    parser.add_argument("-l", "--latest", action="store_true",
                        help="Show the most recently created pod")
    parser.add_argument("-n", "--last", type=int, default=0,
                        help="Show last n recently created pods. Set 0 for unlimited")


def add_parsers(commands: Any) -> None:
    add_list_parser(commands, "pods", "List pods", add_filter_flags, id_help="filter by pod id",
                    quiet_help="List only pod IDs", run=run_pods)
    add_inspect_parser(commands, "inspectp", "Display the status of one or more pods",
                       add_filter_flags, metavar="POD-ID", run=run_inspectp)


async def list_sandboxes(runtime: RuntimeService, args: argparse.Namespace,
                         sandbox_id: str = "") -> list[api_pb2.PodSandbox]:
    """ListPodSandboxes: the CRI filter, then the regular expressions, newest first."""
    request = api_pb2.ListPodSandboxRequest(filter=api_pb2.PodSandboxFilter(id=sandbox_id))
    if args.state:
        state = STATES.get(args.state.lower())
        if state is None:
            raise CrictlError("--state should be ready or notready")
        request.filter.state.state = state
    for key, value in parse_labels(args.label).items():
        request.filter.label_selector[key] = value
    try:
        answer = await runtime.list_pod_sandbox(request)
    except CRIError as err:
        raise CrictlError(f"listing pod sandboxes: call list sandboxes RPC: "
                          f"{rpc_error(err)}") from None
    return newest_matching(answer.items, args, lambda pod: pod.metadata.name,
                           lambda pod: pod.metadata.namespace)


def runtime_handler(pod: api_pb2.PodSandbox) -> str:
    """getSandboxesRuntimeHandler: the RUNTIME column."""
    return pod.runtime_handler or "(default)"


async def run_pods(runtime: RuntimeService, args: argparse.Namespace) -> None:
    """OutputPodSandboxes."""
    if args.output not in (display.OUTPUT_JSON, display.OUTPUT_YAML, display.OUTPUT_TABLE):
        raise CrictlError(f'listing pod sandboxes: unsupported output format "{args.output}"')
    pods = await list_sandboxes(runtime, args, args.id)
    if args.output != display.OUTPUT_TABLE:
        display.print_message(api_pb2.ListPodSandboxResponse(items=pods), args.output)
        return
    if args.quiet:
        for pod in pods:
            print(pod.id)
        return
    table = display.Table()
    table.add_row(["POD ID", "CREATED", "STATE", "NAME", "NAMESPACE", "ATTEMPT", "RUNTIME"])
    for pod in pods:
        table.add_row([pod.id if args.no_trunc else display.truncated_id(pod.id),
                       display.ago(pod.created_at), STATE_NAMES[pod.state],
                       pod.metadata.name, pod.metadata.namespace,
                       str(pod.metadata.attempt), runtime_handler(pod)])
    table.flush()


async def run_inspectp(runtime: RuntimeService, args: argparse.Namespace) -> None:
    """podSandboxStatus, for the ids given or the pods the filters find."""
    output = args.output or display.OUTPUT_JSON
    if output not in (display.OUTPUT_JSON, display.OUTPUT_YAML, display.OUTPUT_TABLE):
        raise CrictlError(f'get the status of pod sandboxes: unsupported format: "{output}"')
    ids = list(args.ids) or [pod.id for pod in await list_sandboxes(runtime, args)]
    if not ids:
        raise CrictlError("No IDs provided or nothing found per filter: give a POD-ID "
                          "(crictl pods lists them)")
    statuses = []
    for sandbox_id in ids:
        try:
            answer = await runtime.pod_sandbox_status(api_pb2.PodSandboxStatusRequest(
                pod_sandbox_id=sandbox_id, verbose=not args.quiet))
        except CRIError as err:
            raise CrictlError(f"get the status of pod sandboxes: get pod sandbox status: "
                              f"{rpc_error(err)} (crictl pods lists the pods)") from None
        if output == display.OUTPUT_TABLE:
            print_status_table(answer, verbose=not args.quiet)
        else:
            data = display.proto_dict(answer.status)
            data["createdAt"] = display.rfc3339_nano(answer.status.created_at)
            statuses.append(display.status_data(data, answer.info))
    display.print_statuses(statuses, output)


def print_status_table(answer: api_pb2.PodSandboxStatusResponse, *, verbose: bool) -> None:
    """outputPodSandboxStatusTable."""
    status = answer.status
    print(f"ID: {status.id}")
    if status.HasField("metadata"):
        for title, value in (("Name", status.metadata.name), ("UID", status.metadata.uid),
                             ("Namespace", status.metadata.namespace)):
            if value:
                print(f"{title}: {value}")
        print(f"Attempt: {status.metadata.attempt}")
    print(f"Status: {api_pb2.PodSandboxState.Name(status.state)}")
    print(f"Created: {display.go_time_string(status.created_at)}")
    if status.HasField("network"):
        print(f"IP Addresses: {status.network.ip}")
        for extra in status.network.additional_ips:
            print(f"Additional IP: {extra.ip}")
    print_labels(status.labels, status.annotations)
    if verbose:
        print(f"Info: {display.go_map(answer.info)}")
