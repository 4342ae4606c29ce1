"""`mkctl logs`: print a container's log (kubectl logs).

    mkctl logs web                         the log of the pod's only container
    mkctl logs web -c sidecar --tail=10 --timestamps
    mkctl logs -f deploy/web               follow the log of one of the Deployment's pods
    mkctl logs web --previous              the container's previous instance

The steps of kubectl's logs.go:
1. the arguments: POD or TYPE/NAME, and an old-style CONTAINER after it; the flags
   checked (--tail >= -1, --limit-bytes > 0, only one of --since and --since-time);
2. the object is read; for a workload or a Service a pod its selector matches is
   chosen ("Found 2 pods, using pod/x" on stderr);
3. the container: -c (which the pod must have), else the default one ("Defaulted
   container ..." on stderr when the pod has several);
4. GET pods/NAME/log with PodLogOptions as the query, the body copied to stdout as it
   arrives (with -f until the container ends or the command is stopped).
"""

from __future__ import annotations

from minikube_py.mkctl import pods
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, INT, Flag

USAGE_ERROR = ("expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
               "POD or TYPE/NAME is a required argument for the logs command")


def _query(inv: Invocation, container: str) -> dict[str, str]:
    """PodLogOptions, as the query of step 4."""
    flags = inv.flags
    query = {"container": container}
    for flag, name in (("follow", "follow"), ("previous", "previous"),
                       ("timestamps", "timestamps")):
        if flags[flag]:
            query[name] = "true"
    if flags["tail"] != -1:
        query["tailLines"] = str(flags["tail"])
    if flags["limit-bytes"]:
        query["limitBytes"] = str(flags["limit-bytes"])
    if flags["since-time"]:
        query["sinceTime"] = flags["since-time"]
    if "since" in flags.changed:
        from minikube_py.mkctl.gofmt import parse_duration

        seconds = parse_duration(flags["since"])
        if seconds is None:
            raise MkctlError(f'invalid argument "{flags["since"]}" for "--since" flag: '
                             f'time: invalid duration "{flags["since"]}"')
        query["sinceSeconds"] = str(max(1, int(seconds + 0.999)))
    return query


def _check(inv: Invocation) -> None:
    """Step 1's checks of the flags (kubectl's Validate)."""
    flags = inv.flags
    if flags["since-time"] and "since" in flags.changed:
        raise MkctlError("at most one of `sinceTime` or `sinceSeconds` may be specified")
    if flags["limit-bytes"] < 0:
        raise MkctlError("--limit-bytes must be greater than 0")
    if flags["tail"] < -1:
        raise MkctlError("--tail must be greater than or equal to -1")


def run(inv: Invocation) -> None:
    args = inv.args
    if not args or len(args) > 2:
        raise inv.usage_error(USAGE_ERROR)
    container = inv.flags["container"] or (args[1] if len(args) == 2 else "")
    _check(inv)
    namespace, _ = inv.namespace()
    try:
        kind, obj = pods.resolve(inv, args[0], namespace)
    except StatusError as error:  # kubectl's logs words a missing object so
        raise MkctlError(f"error from server ({error.reason}): {error} in namespace "
                         f'"{namespace}"') from None
    pod = obj
    if kind != "Pod":
        pod, matched = pods.pod_selected(inv, kind, obj, namespace)
        if matched > 1:
            inv.err.write(f"Found {matched} pods, using pod/{pod['metadata']['name']}\n")
    container = (pods.check_container(pod, container) if container
                 else pods.default_container(inv, pod, quiet=False))
    name = pod["metadata"]["name"]
    response = inv.client.get(f"/api/v1/namespaces/{namespace}/pods/{name}/log",
                              _query(inv, container), stream=True)
    if not 200 <= response.status <= 206:
        from minikube_py.mkctl.transport import status_error

        raise status_error(response)
    if response.status != 200:  # 204: a pod not yet on a node has no log
        pods.write_bytes(inv.out, response.body)
        return
    for chunk in inv.client.chunks(response):
        pods.write_bytes(inv.out, chunk)


COMMAND = Command(
    name="logs",
    summary="Print the logs for a container in a pod",
    usage="logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER] [options]",
    run=run,
    flags=[
        Flag("container", shorthand="c", help="Print the logs of this container"),
        Flag("follow", BOOL, shorthand="f", help="Specify if the logs should be streamed."),
        Flag("limit-bytes", INT, default=0,
             help="Maximum bytes of logs to return. Defaults to no limit."),
        Flag("pod-running-timeout", default="20s",
             help="The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at "
                  "least one pod is running"),
        Flag("previous", BOOL, shorthand="p",
             help="If true, print the logs for the previous instance of the container in a "
                  "pod if it exists."),
        Flag("since", default="0s",
             help="Only return logs newer than a relative duration like 5s, 2m, or 3h. "
                  "Defaults to all logs. Only one of since-time / since may be used."),
        Flag("since-time",
             help="Only return logs after a specific date (RFC3339). Defaults to all logs. "
                  "Only one of since-time / since may be used."),
        Flag("tail", INT, default=-1,
             help="Lines of recent log file to display. Defaults to -1 with no selector, "
                  "showing all log lines otherwise 10, if a selector is provided."),
        Flag("timestamps", BOOL, help="Include timestamps on each line in the log output"),
    ],
    examples="""  # Return snapshot logs from pod nginx with only one container
  mkctl logs nginx

  # Begin streaming the logs of the ruby container in pod web-1
  mkctl logs -f -c ruby web-1

  # Display only the most recent 20 lines of output in pod nginx
  mkctl logs --tail=20 nginx

  # Return snapshot logs from first container of a job named hello
  mkctl logs job/hello""",
)
