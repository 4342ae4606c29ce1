"""`mkctl trace TYPE/NAME`: everything that happened to one object, in every component,
as one timeline (docs/tracing.md).

    1. the object: TYPE/NAME or TYPE NAME, resolved as `get` resolves it, in the
       namespace of -n or the kubeconfig (none for cluster-scoped kinds)
    2. the trace receiver: --traces-url, else the url in kube-public/minikube-py-tracing,
       which `minikube-py up` publishes
    3. GET <receiver>/api/v1/traces?resource=..&namespace=..&name=..: every trace with a
       span that names the object (the Deployment's trace holds its ReplicaSet's pods)
    4. when the object exists, only the traces of its own life: an object deleted and made
       again under the same name left traces that name it too (mkctl/tracelife.py)
    5. each trace as a timeline (printers/timeline.py), or -o json as the receiver answers;
       --follow: the life's spans so far as one timeline, then its new spans as they
       arrive, in the order they started and under their parents (tracelife.Follower),
       until interrupted; for an object that does not exist yet, the life to come;
       --web: each trace's link into the dashboard instead, its page's own link
       (#trace/<trace id>) under the API server's service proxy path of
       kubernetes-dashboard/kubernetes-dashboard, the URL `minikube-py dashboard` opens
"""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, Flag
from minikube_py.mkctl.printers import timeline
from minikube_py.mkctl.tracelife import Follower, Life
from minikube_py.tracing import context as tracing_context

DASHBOARD = ("kubernetes-dashboard", "kubernetes-dashboard")
"""The dashboard's Service, where `minikube-py dashboard` deploys it (upstream's)."""

PUBLISHED = ("kube-public", "minikube-py-tracing")


def _target(inv: Invocation) -> tuple[str, str]:
    """TYPE/NAME or TYPE NAME."""
    if len(inv.args) == 1 and "/" in inv.args[0]:
        kind, _, name = inv.args[0].partition("/")
    elif len(inv.args) == 2:
        kind, name = inv.args
    else:
        raise inv.usage_error("trace needs one object: TYPE/NAME or TYPE NAME")
    if not kind or not name:
        raise inv.usage_error(f"arguments in resource/name form must have a single resource "
                              f"and name: {' '.join(inv.args)}")
    return kind, name


def receiver_url(inv: Invocation) -> str:
    """Where the cluster's spans are kept."""
    if inv.flags["traces-url"]:
        return inv.flags["traces-url"].rstrip("/")
    namespace, name = PUBLISHED
    try:
        found = inv.client.get_json(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    except StatusError as error:
        if error.code != 404:
            raise
        raise MkctlError(f"this cluster names no trace receiver ({namespace}/{name} is not "
                         "there); pass --traces-url") from None
    url = (found.get("data") or {}).get("url", "")
    if not url:
        raise MkctlError(f"{namespace}/{name} has no url; pass --traces-url")
    return url.rstrip("/")


def dashboard_url(inv: Invocation) -> str:
    """The dashboard's page through the API server's service proxy; an error when the
    cluster has no dashboard Service."""
    namespace, name = DASHBOARD
    try:
        inv.client.get_json(f"/api/v1/namespaces/{namespace}/services/{name}")
    except StatusError as error:
        if error.code != 404:
            raise
        raise MkctlError(f"the dashboard is not deployed in this cluster (no Service "
                         f"{namespace}/{name}); `minikube-py dashboard` deploys it in "
                         f"a minikube-py cluster") from None
    return (f"{inv.client.base_url}/api/v1/namespaces/{namespace}/services/"
            f"https:{name}:/proxy/")


def _open(url: str, timeout: float | None) -> Any:
    try:
        return urllib.request.urlopen(url, timeout=timeout)  # noqa: S310 - http(s) only
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")
        try:
            detail = json.loads(detail).get("message", detail)
        except ValueError:
            pass
        raise MkctlError(f"the trace receiver answered {error.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise MkctlError(f"cannot reach the trace receiver at {url.split('/api/')[0]}: "
                         f"{reason}") from None


def run(inv: Invocation) -> None:
    output = inv.flags["output"]
    if output not in ("", "json"):
        raise MkctlError(f"unable to match a printer suitable for the output format "
                         f'"{output}", allowed formats are: json')
    web = inv.flags["web"]
    if web and (inv.flags["follow"] or output):
        raise MkctlError(f"--web cannot be used with "
                         f"{'--follow' if inv.flags['follow'] else '--output'}")
    kind, name = _target(inv)
    resource = inv.mapper.resource_for(kind)
    namespace = inv.namespace()[0] if resource.namespaced else ""
    page = dashboard_url(inv) if web else ""
    base = receiver_url(inv)
    query = urllib.parse.urlencode({"resource": resource.name, "namespace": namespace,
                                    "name": name})
    what = f"{resource.group_resource}/{name}"
    current = _current(inv, resource.path(namespace, name))
    life = (Life.of(current, resource.name, namespace, name, _own_trace(current))
            if current is not None else None)
    if inv.flags["follow"]:
        _follow(inv, base, query, life or Life(resource.name, namespace, name,
                                               since=time.time_ns()), output)
        return
    with _open(f"{base}/api/v1/traces?{query}", 30) as answer:
        found = json.load(answer)
    traces = found.get("traces") or []
    found["traces"] = life.traces(traces) if life is not None else traces
    if output == "json":
        inv.out.write(json.dumps(found, indent=4) + "\n")
        return
    traces = found.get("traces") or []
    if not traces:
        place = f" in {namespace} namespace" if namespace else ""
        inv.err.write(f"No traces of {what} found{place}.\n")
        return
    if web:
        inv.out.write("".join(f"{page}#trace/{trace['traceId']}\n" for trace in traces))
        return
    for index, trace in enumerate(traces):
        if index:
            inv.out.write("\n")
        inv.out.write(f"TRACE {trace['traceId']}  ({what}, {len(trace['spans'])} spans)\n")
        inv.out.write(timeline.table(timeline.rows(trace["spans"])))


def _current(inv: Invocation, path: str) -> Obj | None:
    """The object as the API server has it now, with the trace context it shows only to
    those who ask; None when it is gone (or never was)."""
    try:
        return inv.client.get_json(path, headers={
            tracing_context.OBJECT_HEADER: tracing_context.INCLUDE})
    except StatusError as error:
        if error.code != 404:
            raise
        return None


def _own_trace(obj: Obj) -> str:
    """The trace the object carries (the API server shows it to mkctl trace, which asks)."""
    own = tracing_context.of_object(obj)
    return own.trace_id if own is not None else ""


TICK = 0.2  # seconds between looks at what is due to print


def _follow(inv: Invocation, base: str, query: str, life: Life, output: str) -> None:
    """The life's spans so far, then each new one in the order they started, until
    interrupted (or the receiver ends the stream)."""
    follower = Follower(life)
    first: int | None = None

    def write(batch: list[tuple[Obj, int]]) -> None:
        nonlocal first
        for span, depth in batch:
            first = span["start"] if first is None else first
            inv.out.write(json.dumps(span) + "\n" if output == "json" else timeline.table(
                timeline.span_rows(span, depth, first), header=False,
                widths=timeline.FOLLOW_WIDTHS))
        inv.out.flush()

    with _open(f"{base}/api/v1/traces?{query}&follow=true", None) as stream:
        # opened first: a span that comes meanwhile is in the stream (once: spans seen
        # already are not new)
        with _open(f"{base}/api/v1/traces?{query}", 30) as answer:
            found = life.traces(json.load(answer).get("traces") or [])
        if output != "json":
            inv.out.write(timeline.table([], widths=timeline.FOLLOW_WIDTHS))
        write(follower.printed(span for trace in found for span in trace["spans"]))
        arrived: queue.Queue[Obj | None] = queue.Queue()
        threading.Thread(target=_read_spans, args=(stream, arrived), daemon=True).start()
        ended = False
        while not ended:
            try:
                span = arrived.get(timeout=TICK)
                while span is not None:
                    follower.add(span, time.monotonic_ns())
                    span = arrived.get_nowait()
                ended = True
            except queue.Empty:
                pass
            write(follower.rest() if ended else follower.due(time.monotonic_ns()))


def _read_spans(stream: Any, arrived: queue.Queue[Obj | None]) -> None:
    """The receiver's stream, a span per line, onto `arrived`; None when it ends."""
    try:
        for span in _lines(stream):
            arrived.put(span)
    finally:
        arrived.put(None)


def _lines(stream: Any) -> Iterator[Obj]:
    try:
        for line in stream:
            if line.strip():
                yield json.loads(line)
    except (OSError, ValueError):
        return


COMMAND = Command(
    name="trace",
    summary="Show everything that happened to a resource, in every component, as a timeline",
    usage="trace (TYPE/NAME | TYPE NAME) [--follow] [-o json] [--web] [options]",
    flags=[Flag("follow", BOOL, help="After what there is, print each new span as it "
                                     "arrives.", shorthand="f"),
           Flag("output", help="Output format: json (the receiver's answer).",
                shorthand="o"),
           Flag("web", BOOL, help="Print each trace's link into the dashboard (the URL "
                                  "`minikube-py dashboard` opens, through the API "
                                  "server's service proxy) instead of the timeline."),
           Flag("traces-url", help="The trace receiver (http://host:4318); by default the "
                                   "one the cluster names in kube-public/minikube-py-tracing.")],
    run=run,
    examples="""  # The life of a pod: the API request, the controllers, the scheduler, the kubelet
  mkctl trace pod/web-7d4b9-x2x

  # A Deployment's trace, which holds its ReplicaSet's and pods'
  mkctl trace deployment web

  # Follow it live while it rolls out
  mkctl trace deploy/web --follow

  # The same trace as swimlanes in the dashboard
  mkctl trace deploy/web --web""",
)
