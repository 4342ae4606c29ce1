"""`mkctl logs`: print containers' logs (kubectl logs).

    mkctl logs web                         the log of the pod's only container
    mkctl logs web -c sidecar --tail=10 --timestamps
    mkctl logs -f deploy/web               follow the log of one of the Deployment's pods
    mkctl logs web --previous              the container's previous instance
    mkctl logs -l app=web --prefix         every matching pod, each line with its source
    mkctl logs deploy/web --all-pods --all-containers -f

The steps of kubectl's logs.go and polymorphichelpers/logsforobject.go:
1. the arguments: POD or TYPE/NAME (an old-style CONTAINER after it), or -l SELECTOR;
   --all-pods turns --prefix on;
2. the object is read: the pod, the object that selects pods, or (with -l) the list of
   matching pods ("No resources found in x namespace." on stderr when it is empty);
3. the flags checked (--tail >= -1, --limit-bytes > 0, only one of --since and
   --since-time, not both -c and an inline container, not --all-containers with one);
4. one log request per container: for a workload or a Service, a pod its selector
   matches ("Found 2 pods, using pod/x" on stderr) or with --all-pods all of them; per
   pod, -c or the default container ("Defaulted container ..." on stderr when there are
   others) or with --all-containers its init, regular and ephemeral containers in turn;
5. GET pods/NAME/log with PodLogOptions as the query (with -l, --tail defaults to 10),
   each body copied to stdout as it arrives, `[pod/NAME/CONTAINER] ` before each line
   with --prefix. Without -f the requests run one after another; with -f and several of
   them all at once (no more than --max-log-requests), each retried for
   --pod-running-timeout while its container cannot be read yet. kubectl keeps its
   requests in a map, so its order among several is random; mkctl keeps step 4's order.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl import pods
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, INT, SELECTOR_FLAG, Flag

USAGE_ERROR = ("expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
               "POD or TYPE/NAME is a required argument for the logs command")
SELECTOR_TAIL = 10


@dataclass(frozen=True)
class LogRequest:
    """One container's log: what step 5 asks for and the prefix it may write."""

    namespace: str
    pod: str
    container: str

    @property
    def prefix(self) -> bytes:
        return f"[pod/{self.pod}/{self.container}] ".encode()


def _query(inv: Invocation) -> dict[str, str]:
    """PodLogOptions, as the query of step 5 (each request adds its container)."""
    flags = inv.flags
    query: dict[str, str] = {}
    for flag, name in (("follow", "follow"), ("previous", "previous"),
                       ("timestamps", "timestamps"),
                       ("insecure-skip-tls-verify-backend", "insecureSkipTLSVerifyBackend")):
        if flags[flag]:
            query[name] = "true"
    if flags["tail"] != -1:
        query["tailLines"] = str(flags["tail"])
    elif flags["selector"] and "tail" not in flags.changed:
        query["tailLines"] = str(SELECTOR_TAIL)
    if flags["limit-bytes"]:
        query["limitBytes"] = str(flags["limit-bytes"])
    if flags["since-time"]:
        query["sinceTime"] = flags["since-time"]
    if "since" in flags.changed:
        from minikube_py.api.duration import parse_duration

        seconds = parse_duration(flags["since"])
        if seconds is None:
            raise MkctlError(f'invalid argument "{flags["since"]}" for "--since" flag: '
                             f'time: invalid duration "{flags["since"]}"')
        query["sinceSeconds"] = str(max(1, int(seconds + 0.999)))
    return query


def _check(inv: Invocation, container: str) -> None:
    """Step 3 (kubectl's Validate)."""
    flags = inv.flags
    if flags["since-time"] and "since" in flags.changed:
        raise MkctlError("at most one of `sinceTime` or `sinceSeconds` may be specified")
    if flags["all-containers"] and container:
        raise MkctlError(f"--all-containers=true should not be specified with container "
                         f"name {container}")
    if "container" in flags.changed and len(inv.args) == 2:
        raise MkctlError("only one of -c or an inline [CONTAINER] arg is allowed")
    if flags["limit-bytes"] < 0:
        raise MkctlError("--limit-bytes must be greater than 0")
    if flags["tail"] < -1:
        raise MkctlError("--tail must be greater than or equal to -1")


def _arguments(inv: Invocation) -> str:
    """Step 1: the container an inline argument or -c names ("" for none)."""
    args, selector = inv.args, inv.flags["selector"]
    if len(args) > 2 or (not args and not selector):
        raise inv.usage_error(USAGE_ERROR)
    if len(args) == 1 and selector:
        raise inv.usage_error("only a selector (-l) or a POD name is allowed")
    return args[1] if len(args) == 2 else inv.flags["container"]


def _object(inv: Invocation, namespace: str) -> tuple[str, Obj]:
    """Step 2: ("PodList", the list) for -l, else the argument's kind and object."""
    if inv.flags["selector"]:
        listed = inv.client.get_json(f"/api/v1/namespaces/{namespace}/pods",
                                     {"labelSelector": inv.flags["selector"]})
        if not listed.get("items"):
            inv.err.write(f"No resources found in {namespace} namespace.\n")
        return "PodList", listed
    try:
        return pods.resolve(inv, inv.args[0], namespace)
    except StatusError as error:  # kubectl's logs words a missing object so
        raise MkctlError(f"error from server ({error.reason}): {error} in namespace "
                         f'"{namespace}"') from None


def _requests(inv: Invocation, kind: str, obj: Obj, container: str, namespace: str
              ) -> list[LogRequest]:
    """Step 4: the containers whose logs are asked for, in order."""
    all_pods = inv.flags["all-pods"]
    if kind == "PodList":
        chosen = obj.get("items") or []
    elif kind == "Pod":
        chosen = [obj]
    else:
        pod, matched = pods.pod_selected(inv, kind, obj, namespace, verb="get the logs from")
        chosen = [pod]
        if matched > 1 and all_pods:
            chosen = pods.pods_selected(inv, kind, obj, namespace)
        elif matched > 1:
            inv.err.write(f"Found {matched} pods, using pod/{pod['metadata']['name']}\n")
    requests = []
    for pod in chosen:
        name = pod["metadata"]["name"]
        if inv.flags["all-containers"]:
            spec = pod.get("spec") or {}
            requests += [LogRequest(namespace, name, c["name"])
                         for kind_ in ("initContainers", "containers", "ephemeralContainers")
                         for c in spec.get(kind_) or []]
        else:
            chosen_container = (pods.check_container(pod, container) if container else
                                pods.default_container(inv, pod, all_pods, logs=True))
            requests.append(LogRequest(namespace, name, chosen_container))
    return requests


def run(inv: Invocation) -> None:
    container = _arguments(inv)
    if inv.flags["all-pods"]:
        inv.flags.values["prefix"] = True
    query = _query(inv)
    namespace, _ = inv.namespace()
    kind, obj = _object(inv, namespace)
    _check(inv, container)
    requests = _requests(inv, kind, obj, container, namespace)
    follow = inv.flags["follow"]
    if follow and 1 < len(requests) and inv.flags["max-log-requests"] < len(requests):
        raise MkctlError(f"you are attempting to follow {len(requests)} log streams, but "
                         f"maximum allowed concurrency is {inv.flags['max-log-requests']}, "
                         "use --max-log-requests to increase the limit")
    streams = _Streams(inv, query)
    if follow and len(requests) > 1:
        streams.all_at_once(requests)
    else:
        for request in requests:
            streams.consume(request, inv.client)


class _Streams:
    """Step 5: each request's body to stdout, whole lines at a time when they may mix."""

    def __init__(self, inv: Invocation, query: dict[str, str]) -> None:
        self.inv = inv
        self.query = query
        self.prefixed = inv.flags["prefix"]
        self.lock = threading.Lock()

    def consume(self, request: LogRequest, client: Any) -> None:
        """One request, retried while following (kubectl's consumeWithRetry)."""
        if not self.inv.flags["follow"]:
            try:
                self._copy(request, client)
            except MkctlError as error:
                if not self.inv.flags["ignore-errors"]:
                    raise
                self._write(f"error: {error}\n".encode())
            return
        from minikube_py.api.duration import parse_duration

        deadline = time.monotonic() + (parse_duration(
            self.inv.flags["pod-running-timeout"]) or 0)
        while True:
            try:
                self._copy(request, client)
                return
            except StatusError as error:
                if self.inv.flags["ignore-errors"]:
                    self._write(f"error: {error}\n".encode())
                    return
                with self.lock:
                    self.inv.err.write(f"{error}\n")
                    self.inv.err.flush()
            if time.monotonic() + 1 > deadline:
                raise MkctlError("context deadline exceeded")
            time.sleep(1)

    def all_at_once(self, requests: list[LogRequest]) -> None:
        """Every request on a connection of its own; the first failure ends them all."""
        from minikube_py.mkctl.transport import RESTClient

        failures: list[MkctlError] = []

        def follow(request: LogRequest) -> None:
            client = RESTClient(self.inv.rest_config)
            try:
                self.consume(request, client)
            except MkctlError as error:
                failures.append(error)
            finally:
                client.close()

        threads = [threading.Thread(target=follow, args=(request,), daemon=True)
                   for request in requests]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads) and not failures:
            time.sleep(0.1)
        if failures:
            raise failures[0]

    def _copy(self, request: LogRequest, client: Any) -> None:
        from minikube_py.mkctl.transport import status_error

        response = client.get(f"/api/v1/namespaces/{request.namespace}/pods/{request.pod}/log",
                              {**self.query, "container": request.container}, stream=True)
        if not 200 <= response.status <= 206:
            raise status_error(response)
        body = [response.body] if response.status != 200 else client.chunks(response)
        prefix = request.prefix if self.prefixed else b""
        if not prefix and not self.inv.flags["follow"]:
            for chunk in body:  # one stream at a time: as it comes
                self._write(chunk)
            return
        partial = b""
        for chunk in body:
            *lines, partial = (partial + chunk).split(b"\n")
            if lines:
                self._write(b"".join(prefix + line + b"\n" for line in lines))
        if partial:
            self._write(prefix + partial)

    def _write(self, data: bytes) -> None:
        with self.lock:
            pods.write_bytes(self.inv.out, data)


COMMAND = Command(
    name="logs",
    summary="Print the logs for a container in a pod",
    usage="logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER] [options]",
    run=run,
    flags=[
        Flag("all-containers", BOOL, help="Get all containers' logs in the pod(s)."),
        Flag("all-pods", BOOL, help="Get logs from all pod(s). Sets prefix to true."),
        Flag("container", shorthand="c", help="Print the logs of this container"),
        Flag("follow", BOOL, shorthand="f", help="Specify if the logs should be streamed."),
        Flag("ignore-errors", BOOL,
             help="If watching / following pod logs, allow for any errors that occur to be "
                  "non-fatal"),
        Flag("insecure-skip-tls-verify-backend", BOOL,
             help="Skip verifying the identity of the kubelet that logs are requested from.  "
                  "In theory, an attacker could provide invalid log content back. You might "
                  "want to use this if your kubelet serving certificates have expired."),
        Flag("limit-bytes", INT, default=0,
             help="Maximum bytes of logs to return. Defaults to no limit."),
        Flag("max-log-requests", INT, default=5,
             help="Specify maximum number of concurrent logs to follow when using by a "
                  "selector. Defaults to 5."),
        Flag("pod-running-timeout", default="20s",
             help="The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at "
                  "least one pod is running"),
        Flag("prefix", BOOL,
             help="Prefix each log line with the log source (pod name and container name)"),
        Flag("previous", BOOL, shorthand="p",
             help="If true, print the logs for the previous instance of the container in a "
                  "pod if it exists."),
        SELECTOR_FLAG,
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

  # Return snapshot logs from pod nginx with multi containers
  mkctl logs nginx --all-containers=true

  # Return snapshot logs from all pods in the deployment nginx
  mkctl logs deployment/nginx --all-pods=true

  # Return snapshot logs from all containers in pods defined by label app=nginx
  mkctl logs -l app=nginx --all-containers=true

  # Begin streaming the logs of the ruby container in pod web-1
  mkctl logs -f -c ruby web-1

  # Display only the most recent 20 lines of output in pod nginx
  mkctl logs --tail=20 nginx

  # Return snapshot logs from first container of a job named hello
  mkctl logs job/hello""",
)
