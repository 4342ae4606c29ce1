"""`crictl ps` and `crictl inspect` (upstream cmd/crictl/container.go: ListContainers,
OutputContainers, containerStatus).

    ps       ListContainers with a filter (state: running unless -a or --state; pod id;
             labels), then --name and --namespace as regular expressions, newest first;
             a table, the ids (-q), or the ListContainersResponse as json|yaml
    inspect  ContainerStatus (verbose unless -q) of each id, or of what the ps filters
             find; json (the default), yaml or table
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from minikube_py.cri import CRIError, RuntimeService
from minikube_py.crictl import display
from minikube_py.crictl.crictl_config import rpc_error
from minikube_py.crictl.errors import CrictlError
from minikube_py.gen.cri import api_pb2

FilterFlags = Callable[[argparse.ArgumentParser], None]
Command = Callable[[RuntimeService, argparse.Namespace], Awaitable[None]]
Listed = TypeVar("Listed", api_pb2.Container, api_pb2.PodSandbox)

POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"

STATES = {"created": api_pb2.CONTAINER_CREATED, "running": api_pb2.CONTAINER_RUNNING,
          "exited": api_pb2.CONTAINER_EXITED, "unknown": api_pb2.CONTAINER_UNKNOWN}
STATE_NAMES = {api_pb2.CONTAINER_CREATED: "Created", api_pb2.CONTAINER_RUNNING: "Running",
               api_pb2.CONTAINER_EXITED: "Exited", api_pb2.CONTAINER_UNKNOWN: "Unknown"}


def add_filter_flags(parser: argparse.ArgumentParser) -> None:
    """The filters ps and inspect share."""
    parser.add_argument("--name", default="",
                        help="Filter by container name regular expression pattern")
    parser.add_argument("--namespace", default="",
                        help="Filter by pod namespace regular expression pattern")
    parser.add_argument("-p", "--pod", default="", help="Filter by pod id")
    parser.add_argument("-s", "--state", default="", help="Filter by container state")
    parser.add_argument("--label", action="append", default=[],
                        help="Filter by key=value label")
    parser.add_argument("-a", "--all", action="store_true", help="Show all containers")
    parser.add_argument("-l", "--latest", action="store_true",
                        help="Show the most recently created container (includes all states)")
    parser.add_argument("-n", "--last", type=int, default=0,
                        help="Show last n recently created containers (includes all states). "
                             "Set 0 for unlimited.")


def add_parsers(commands: Any) -> None:
    add_list_parser(commands, "ps", "List containers", add_filter_flags,
                    id_help="Filter by container id", quiet_help="Only display container IDs",
                    run=run_ps)
    add_inspect_parser(commands, "inspect", "Display the status of one or more containers",
                       add_filter_flags, metavar="CONTAINER-ID", run=run_inspect)


def add_list_parser(commands: Any, name: str, help_text: str, filter_flags: FilterFlags, *,
                    id_help: str, quiet_help: str, run: Command) -> None:
    """A lister (ps, pods): its filters, then --id, -q, -o (a table by default), --no-trunc."""
    parser = commands.add_parser(name, help=help_text)
    filter_flags(parser)
    parser.add_argument("--id", default="", help=id_help)
    parser.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
    parser.add_argument("-o", "--output", default=display.OUTPUT_TABLE,
                        help="Output format, One of: json|yaml|table")
    parser.add_argument("--no-trunc", action="store_true",
                        help="Show output without truncating the ID")
    parser.set_defaults(run=run)


def add_inspect_parser(commands: Any, name: str, help_text: str, filter_flags: FilterFlags,
                       *, metavar: str, run: Command) -> None:
    """An inspector (inspect, inspectp): ids, the lister's filters, -o, -q."""
    parser = commands.add_parser(name, help=help_text)
    parser.add_argument("ids", nargs="*", metavar=metavar)
    filter_flags(parser)
    parser.add_argument("-o", "--output", default="",
                        help="Output format, One of: json|yaml|table")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="Do not show verbose information")
    parser.set_defaults(run=run)


def parse_labels(pairs: list[str]) -> dict[str, str]:
    """parseLabelStringSlice: key=value, exactly one '='."""
    labels = {}
    for pair in pairs:
        parts = pair.split("=")
        if len(parts) != 2:
            raise CrictlError(f"incorrectly specified label: {pair}")
        labels[parts[0]] = parts[1]
    return labels


def compile_regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern) if pattern else None
    except re.error as err:
        raise CrictlError(f'invalid regular expression "{pattern}": {err}') from None


def truncate_count(total: int, latest: bool, last: int) -> int:
    """How many of the newest to keep: all, 1 with --latest, n with --last n."""
    count = 1 if latest else total
    if last > 0:
        count = last
    return min(count, total)


def newest_matching(items: Iterable[Listed], args: argparse.Namespace,
                    name_of: Callable[[Listed], str],
                    namespace_of: Callable[[Listed], str]) -> list[Listed]:
    """The listers' client-side half: --name and --namespace as regular expressions,
    newest first, then --latest or --last."""
    name_re, namespace_re = compile_regex(args.name), compile_regex(args.namespace)
    found = [item for item in items
             if (name_re is None or name_re.search(name_of(item)))
             and (namespace_re is None or namespace_re.search(namespace_of(item)))]
    found.sort(key=lambda item: item.created_at, reverse=True)
    return found[:truncate_count(len(found), args.latest, args.last)]


async def list_containers(runtime: RuntimeService, args: argparse.Namespace,
                          container_id: str = "") -> list[api_pb2.Container]:
    """ListContainers: the CRI filter, then the regular expressions, newest first."""
    request = api_pb2.ListContainersRequest(filter=api_pb2.ContainerFilter(
        id=container_id, pod_sandbox_id=args.pod))
    if args.state:
        state = STATES.get(args.state.lower())
        if state is None:
            raise CrictlError("--state should be one of created, running, exited or unknown")
        request.filter.state.state = state
    elif not args.all:
        request.filter.state.state = api_pb2.CONTAINER_RUNNING
    if args.latest or args.last > 0:
        request.filter.ClearField("state")
    for key, value in parse_labels(args.label).items():
        request.filter.label_selector[key] = value
    try:
        answer = await runtime.list_containers(request)
    except CRIError as err:
        raise CrictlError(f"listing containers: call list containers RPC: "
                          f"{rpc_error(err)}") from None
    return newest_matching(
        answer.containers, args, lambda container: container.metadata.name,
        lambda container: container.labels.get(POD_NAMESPACE_LABEL, "unknown"))


async def run_ps(runtime: RuntimeService, args: argparse.Namespace) -> None:
    """OutputContainers."""
    if args.output not in (display.OUTPUT_JSON, display.OUTPUT_YAML, display.OUTPUT_TABLE):
        raise CrictlError(f'listing containers: unsupported output format "{args.output}"')
    containers = await list_containers(runtime, args, args.id)
    if args.output != display.OUTPUT_TABLE:
        display.print_message(api_pb2.ListContainersResponse(containers=containers),
                              args.output)
        return
    if args.quiet:
        for container in containers:
            print(container.id)
        return
    table = display.Table()
    table.add_row(["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD ID",
                   "POD", "NAMESPACE"])
    for container in containers:
        container_id, pod_id, image = (container.id, container.pod_sandbox_id,
                                       container.image.image)
        if not args.no_trunc:
            container_id, pod_id = display.truncated_id(container_id), display.truncated_id(
                pod_id)
            image = display.truncated_image(image)
        table.add_row([container_id, image, display.ago(container.created_at),
                       STATE_NAMES[container.state], container.metadata.name,
                       str(container.metadata.attempt), pod_id,
                       container.labels.get(POD_NAME_LABEL, "unknown"),
                       container.labels.get(POD_NAMESPACE_LABEL, "unknown")])
    table.flush()


async def run_inspect(runtime: RuntimeService, args: argparse.Namespace) -> None:
    """containerStatus, for the ids given or the containers the filters find."""
    output = args.output or display.OUTPUT_JSON
    if output not in (display.OUTPUT_JSON, display.OUTPUT_YAML, display.OUTPUT_TABLE):
        raise CrictlError(f'get the status of containers: unsupported format: "{output}"')
    ids = list(args.ids) or [c.id for c in await list_containers(runtime, args)]
    if not ids:
        raise CrictlError("No IDs provided or nothing found per filter: give a CONTAINER-ID "
                          "(crictl ps -a lists them)")
    statuses = []
    for container_id in ids:
        try:
            answer = await runtime.container_status(api_pb2.ContainerStatusRequest(
                container_id=container_id, verbose=not args.quiet))
        except CRIError as err:
            raise CrictlError(f"get the status of containers: get container status: "
                              f"{rpc_error(err)} (crictl ps -a lists the containers)"
                              ) from None
        if output == display.OUTPUT_TABLE:
            print_status_table(answer, verbose=not args.quiet)
        else:
            statuses.append(display.status_data(marshal_status(answer.status), answer.info))
    display.print_statuses(statuses, output)


def marshal_status(status: api_pb2.ContainerStatus) -> dict[str, Any]:
    """marshalContainerStatus: the status with its times as RFC3339 strings; startedAt
    only once started, finishedAt only once exited."""
    data = display.proto_dict(status)
    data["createdAt"] = display.rfc3339_nano(status.created_at)
    started = status.state != api_pb2.CONTAINER_CREATED
    finished = status.state == api_pb2.CONTAINER_EXITED or (
        status.state == api_pb2.CONTAINER_UNKNOWN and status.finished_at > 0)
    data["startedAt"] = (display.rfc3339_nano(status.started_at) if started
                         else display.ZERO_TIME)
    data["finishedAt"] = (display.rfc3339_nano(status.finished_at) if finished
                          else display.ZERO_TIME)
    return data


def print_status_table(answer: api_pb2.ContainerStatusResponse, *, verbose: bool) -> None:
    """outputContainerStatusTable."""
    status = answer.status
    print(f"ID: {status.id}")
    if status.metadata.name:
        print(f"Name: {status.metadata.name}")
    if status.metadata.attempt:
        print(f"Attempt: {status.metadata.attempt}")
    print(f"State: {api_pb2.ContainerState.Name(status.state)}")
    print(f"Created: {display.ago(status.created_at)}")
    if status.state != api_pb2.CONTAINER_CREATED:
        print(f"Started: {display.ago(status.started_at)}")
    if status.state == api_pb2.CONTAINER_EXITED:
        if status.finished_at > 0:
            print(f"Finished: {display.ago(status.finished_at)}")
        print(f"Exit Code: {status.exit_code}")
    print_labels(status.labels, status.annotations)
    if verbose:
        print(f"Info: {display.go_map(answer.info)}")


def print_labels(labels: Any, annotations: Any) -> None:
    """The Labels: and Annotations: blocks of the tables, keys sorted."""
    for title, values in (("Labels", labels), ("Annotations", annotations)):
        if values:
            print(f"{title}:")
            for key in sorted(values):
                print(f"\t{key} -> {values[key]}")
