"""`mkctl get`: display one or many resources (kubectl get).

    mkctl get pods                    the namespace's pods, as the server's table
    mkctl get pods,svc -A -o wide     several kinds in every namespace, wide columns
    mkctl get pod/web deploy/web      objects by kind/name
    mkctl get pod web -o yaml         the object itself; several objects come in a List
    mkctl get pods -w                 the table, then one line per change

The steps of kubectl's get.go:
1. Complete: the namespace (-n, the context's, "default"), the output format;
2. the arguments become requests (builder.py), resolved through discovery;
3. each request is a GET; for human-readable output it asks for a Table
   (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`), so the server computes
   the columns, AGE included;
4. human-readable: one table per kind, a blank line between kinds, NAME as `kind/name`
   when several kinds are shown; "No resources found in <ns> namespace." on stderr when
   nothing was printed and nothing failed;
   other formats: the object when one was named, else a List of every item;
5. the errors of the requests that failed, one line each, and exit code 1.
With -w the list is printed, then the server's watch from the list's resourceVersion.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from minikube_py.api import Obj
from minikube_py.mkctl import builder
from minikube_py.mkctl.command import PROGRAM, Command, Invocation
from minikube_py.mkctl.errors import Aggregate, ConnectionFailed, Exit, MkctlError
from minikube_py.mkctl.flags import (
    ALL_NAMESPACES_FLAG,
    BOOL,
    FIELD_SELECTOR_FLAG,
    INT,
    SELECTOR_FLAG,
    STRINGS,
    Flag,
)
from minikube_py.mkctl.printers import HUMAN_FORMATS, ObjectPrinter, generic_printer
from minikube_py.mkctl.printers.table import PrintOptions, TablePrinter
from minikube_py.mkctl.printers.tabwriter import TabWriter

if TYPE_CHECKING:
    from minikube_py.mkctl.transport import RESTClient


def run(inv: Invocation) -> None:
    flags = inv.flags
    if flags["raw"]:
        return _raw(inv)
    namespace, _ = inv.namespace()
    output = flags["output"]
    human = (output == "" and not flags["template"]) or output == "wide"
    server_print = flags["server-print"] and human
    watching = flags["watch"] or flags["watch-only"]
    if not inv.args and not watching:
        inv.err.write(f'You must specify the type of resource to get. Use "{PROGRAM} '
                      'api-resources" for a complete list of supported resources.\n\n')
        raise inv.usage_error("Required resource not specified.")
    _validate(inv, output)
    try:
        selection = builder.select(
            inv, list(inv.args), namespace=namespace, all_namespaces=flags["all-namespaces"],
            label_selector=flags["selector"], field_selector=flags["field-selector"],
            single_type=watching)
    except ConnectionFailed as error:
        if error.during_discovery:
            _log_discovery_failures(inv, error, _discovery_attempts(inv.args))
        raise
    accept = builder.TABLE_ACCEPT if server_print else ""
    ignore = builder.is_not_found if flags["ignore-not-found"] else _never
    if watching:
        return _watch(inv, selection, accept, human, ignore)
    sort_by = flags["sort-by"]
    # a sorted Table carries each row's object, which the sort reads
    params = {"includeObject": "Object"} if sort_by and server_print else {}
    results = builder.fetch(inv, selection, accept=accept, chunk_size=flags["chunk-size"],
                            ignore=ignore, params=params)
    if sort_by and human:
        _sort_tables(results, sort_by)
    if human:
        _print_tables(inv, results, namespace)
    else:
        _print_generic(inv, selection, results)
    if results.errors:
        raise Aggregate(results.errors)
    return None


def _never(_: Exception) -> bool:
    return False


def _discovery_attempts(args: list[str]) -> int:
    """How many times kubectl asks for discovery before it gives up on a server it cannot
    reach: once per kind of the first argument (the category lookup; not in TYPE/NAME
    form), then four times resolving the first kind."""
    if not args or "/" in args[0] or (len(args) > 1 and "," in args[0]):
        return 4
    return 4 + len(args[0].split(","))


def _log_discovery_failures(inv: Invocation, error: ConnectionFailed, attempts: int) -> None:
    """kubectl logs every discovery attempt that could not reach the server."""
    from minikube_py.mkctl.transport import klog_error

    for _ in range(attempts):
        inv.err.write(klog_error("memcache.go:381", "Couldn't get current server API group "
                                 "list", error) + "\n")


def _validate(inv: Invocation, output: str) -> None:
    """GetOptions.Validate."""
    flags = inv.flags
    if flags["show-labels"] and output not in HUMAN_FORMATS:
        raise MkctlError(f"--show-labels option cannot be used with {output} printer")
    if flags["label-columns"] and output.startswith("custom-columns"):
        raise MkctlError(f"--label-columns option cannot be used with {output} printer")
    if flags["output-watch-events"] and not (flags["watch"] or flags["watch-only"]):
        raise MkctlError("--output-watch-events option can only be used with --watch or "
                         "--watch-only")


def _raw(inv: Invocation) -> None:
    """`get --raw /path`: the body of a GET, as the server sent it."""
    if inv.args:
        raise MkctlError("arguments may not be passed when --raw is specified")
    if not inv.flags["raw"].startswith("/"):
        raise MkctlError(f'--raw must be a valid URL path: parse "{inv.flags["raw"]}": '
                         "invalid URI for request")
    path, _, query = inv.flags["raw"].partition("?")
    params = dict(part.partition("=")[::2] for part in query.split("&") if part)
    response = inv.client.get(path, params)
    if response.status < 200 or response.status > 206:
        from minikube_py.mkctl.transport import status_error

        raise status_error(response)
    inv.out.write(response.body.decode("utf-8", "replace"))


# -- human-readable output ----------------------------------------------------------------

def _sort_tables(results: builder.Results, sort_by: str) -> None:
    """RuntimeSorter.Sort for human output, as kubectl does it: one Table, its rows by
    the field of their objects (one list without the server's columns: its items);
    several answers, the answers themselves by the field at their top level (a Table
    has none of an object's fields: kubectl then finds none)."""
    from minikube_py.mkctl import sorter  # --sort-by only: its JSONPath costs a start 20 ms

    if len(results.infos) == 1:
        only = results.infos[0].object
        if only.get("kind") == "Table":
            sorter.sort_table(only, sort_by)
        elif isinstance(only.get("items"), list):
            only["items"] = sorter.sort_objects(only["items"], sort_by)
        return
    ordered = sorter.sort_objects([info.object for info in results.infos], sort_by)
    by_id = {id(info.object): info for info in results.infos}
    results.infos[:] = [by_id[id(obj)] for obj in ordered]


def _table_options(inv: Invocation, info: builder.Info, with_namespace: bool,
                   with_kind: bool) -> PrintOptions:
    flags = inv.flags
    return PrintOptions(
        no_headers=flags["no-headers"], wide=flags["output"] == "wide",
        with_namespace=with_namespace, with_kind=with_kind or flags["show-kind"],
        kind=info.request.resource.group_kind, show_labels=flags["show-labels"],
        column_labels=flags["label-columns"])


def _print(printer: TablePrinter, obj: Obj, event_type: str = "") -> None:
    """TablePrinter (get's): a Table as a table, anything else with the default columns."""
    if obj.get("kind") == "Table" and obj.get("apiVersion", "").startswith("meta.k8s.io/"):
        printer.print_table(obj, event_type)
    elif isinstance(obj.get("items"), list):
        printer.print_objects(obj["items"], event_type)
    else:
        printer.print_objects([obj], event_type)


def _print_tables(inv: Invocation, results: builder.Results, namespace: str) -> None:
    flags = inv.flags
    infos = results.infos
    resources = {(info.request.resource.group, info.request.resource.version,
                  info.request.resource.kind) for info in infos}
    with_kind = len(infos) > 1 and len(resources) > 1
    all_namespaced = not flags["all-namespaces"]
    writer = TabWriter(inv.out)
    printer: TablePrinter | None = None
    last = None
    for info in infos:
        resource = info.request.resource
        all_namespaced = all_namespaced and resource.namespaced
        if printer is None or last != resource:
            writer.flush()
            writer.forget_widths()
            if last is not None and not flags["no-headers"] and writer.written:
                writer.separator_pending = True
            with_namespace = flags["all-namespaces"] and resource.namespaced
            printer = TablePrinter(_table_options(inv, info, with_namespace, with_kind), writer)
            last = resource
        _print(printer, info.object)
    writer.flush()
    if not writer.written and not flags["ignore-not-found"] and not results.errors:
        if all_namespaced:
            inv.err.write(f"No resources found in {namespace} namespace.\n")
        else:
            inv.err.write("No resources found\n")


# -- other formats ------------------------------------------------------------------------

def _with_type(item: Obj, listing: Obj) -> Obj:
    """A list's items carry no apiVersion and kind; kubectl gives them the list's."""
    if item.get("kind") or item.get("apiVersion"):
        return item
    kind = listing.get("kind", "")
    return {"apiVersion": listing.get("apiVersion", ""),
            "kind": kind[:-4] if kind.endswith("List") else kind, **item}


def _printer(inv: Invocation) -> ObjectPrinter:
    return generic_printer(inv.flags["output"], inv.flags["template"],
                           no_headers=inv.flags["no-headers"], out=inv.out)


def _print_generic(inv: Invocation, selection: builder.Selection, results: builder.Results
                   ) -> None:
    """printGeneric: the one object named, or everything found in one List."""
    if selection.single_item_implied and results.errors:
        raise results.errors[0]
    items: list[Obj] = []
    for info in results.infos:
        if isinstance(info.object.get("items"), list):
            items += [_with_type(item, info.object) for item in info.object["items"]]
        else:
            items.append(info.object)
    if not items and inv.flags["ignore-not-found"]:
        return
    if inv.flags["sort-by"]:
        from minikube_py.mkctl import sorter

        items = sorter.sort_objects(items, inv.flags["sort-by"])
    printer = _printer(inv)
    if selection.single_item_implied and len(items) == 1:
        printer.print_obj(items[0])
    else:
        printer.print_obj({"apiVersion": "v1", "items": items, "kind": "List",
                           "metadata": {"resourceVersion": ""}})
    printer.flush()


# -- watching -----------------------------------------------------------------------------

def _watch(inv: Invocation, selection: builder.Selection, accept: str, human: bool,
           ignore: Callable[[Exception], bool]) -> None:
    """GetOptions.watch: print what is there (unless --watch-only), then every change."""
    flags = inv.flags
    results = builder.fetch(inv, selection, accept=accept, chunk_size=flags["chunk-size"])
    if results.errors:
        if ignore(results.errors[0]):
            return
        raise results.errors[0]
    info = results.infos[0]
    events = flags["output-watch-events"]
    writer = TabWriter(inv.out)
    if human:
        table = TablePrinter(_table_options(inv, info, flags["all-namespaces"], False), writer)
    else:
        generic = _printer(inv)
    # kubectl's skipPrinter: objects are not shown while `output` is false -- the list of
    # --watch-only, and the first event of a watch on one object (the server's ADDED
    # replay of what was just printed). A skipped Table still sets the columns.
    output = not flags["watch-only"]

    def show(obj: Obj, event_type: str) -> None:
        if human:
            if not output:
                if obj.get("kind") == "Table":
                    table.print_table({**obj, "rows": []})
                return
            _print(table, obj, event_type if events else "")
            writer.flush()
        elif output:
            generic.print_obj({"type": event_type, "object": obj} if events else obj)
            generic.flush()

    is_list = not selection.single_item_implied
    if is_list:
        versions = {(i.object.get("metadata") or {}).get("resourceVersion", "")
                    for i in results.infos}
        version = versions.pop() if len(versions) == 1 else ""
        for listed in results.infos:
            if human or not isinstance(listed.object.get("items"), list):
                show(listed.object, "ADDED")
            else:
                for item in listed.object["items"]:
                    show(_with_type(item, listed.object), "ADDED")
    else:
        version = "0"
        show(info.object, "ADDED")
    writer.flush()
    output = is_list
    if len(selection.requests) != 1:
        raise MkctlError("you may only watch a single resource or type of resource at a time")
    request = selection.requests[0]
    params = builder.list_params(selection)
    if request.name:
        params["fieldSelector"] = f"metadata.name={request.name}"
    params["resourceVersion"] = version
    with _exit_quietly_on_signals(inv.client):
        for event in inv.client.watch(request.resource.path(request.namespace), params,
                                      accept=accept):
            show(event.get("object") or {}, event.get("type", ""))
            output = True


@contextlib.contextmanager
def _exit_quietly_on_signals(client: RESTClient) -> Iterator[None]:
    """Interrupted or terminated while watching, kubectl exits with code 1, silently.
    Python runs the handler between two steps of the main thread, so a signal that lands
    just before the watch's read is entered would wait for the next event: the signal
    also writes a byte (signal.set_wakeup_fd) to a socket a thread waits on, which then
    ends the read (client.interrupt), and the handler runs."""
    import signal  # (here: `get` without -w starts without them)
    import socket
    import threading

    def leave(signum: int, frame: object) -> None:
        raise Exit(1)

    def end_the_read() -> None:
        if woken.recv(1):
            client.interrupt()

    previous = {signum: signal.signal(signum, leave)
                for signum in (signal.SIGINT, signal.SIGTERM)}
    woken, waker = socket.socketpair()
    waker.setblocking(False)
    previous_wakeup = signal.set_wakeup_fd(waker.fileno())
    thread = threading.Thread(target=end_the_read, name="signal", daemon=True)
    thread.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        woken.shutdown(socket.SHUT_RDWR)  # the thread's recv ends, with nothing
        thread.join()
        woken.close()
        waker.close()


COMMAND = Command(
    name="get",
    summary="Display one or many resources",
    usage="get [(-o|--output=)json|yaml|name|wide|custom-columns=...|custom-columns-file=...|"
          "jsonpath=...|jsonpath-file=...] (TYPE[.VERSION][.GROUP] [NAME | -l label] | "
          "TYPE[.VERSION][.GROUP]/NAME ...) [flags] [options]",
    run=run,
    flags=[
        ALL_NAMESPACES_FLAG,
        Flag("chunk-size", INT, default=builder.DEFAULT_CHUNK_SIZE,
             help="Return large lists in chunks rather than all at once. Pass 0 to disable."),
        FIELD_SELECTOR_FLAG,
        Flag("ignore-not-found", BOOL,
             help="If set to true, suppresses NotFound error for specific objects that do not "
                  "exist."),
        Flag("label-columns", STRINGS, shorthand="L",
             help="Accepts a comma separated list of labels that are going to be presented as "
                  "columns. Names are case-sensitive. You can also use multiple flag options "
                  "like -L label1 -L label2..."),
        Flag("no-headers", BOOL,
             help="When using the default or custom-column output format, don't print "
                  "headers (default print headers)."),
        Flag("output", shorthand="o",
             help="Output format. One of: (json, yaml, name, wide, custom-columns, "
                  "custom-columns-file, jsonpath, jsonpath-as-json, jsonpath-file)."),
        Flag("output-watch-events", BOOL,
             help="Output watch event objects when --watch or --watch-only is used. Existing "
                  "objects are output as initial ADDED events."),
        Flag("raw", help="Raw URI to request from the server."),
        SELECTOR_FLAG,
        Flag("server-print", BOOL, default=True,
             help="If true, have the server return the appropriate table output."),
        Flag("show-kind", BOOL,
             help="If present, list the resource type for the requested object(s)."),
        Flag("show-labels", BOOL,
             help="When printing, show all labels as the last column (default hide labels "
                  "column)"),
        Flag("sort-by", help="If non-empty, sort list types using this field specification.  "
             "The field specification is expressed as a JSONPath expression (e.g. "
             "'{.metadata.name}'). The field in the API resource specified by this JSONPath "
             "expression must be an integer or a string."),
        Flag("template",
             help="Template string or path to template file to use when -o=jsonpath, "
                  "-o=jsonpath-file."),
        Flag("watch", BOOL, shorthand="w",
             help="After listing/getting the requested object, watch for changes."),
        Flag("watch-only", BOOL,
             help="Watch for changes to the requested object(s), without listing/getting "
                  "first."),
    ],
    examples="""  # List all pods in ps output format
  mkctl get pods

  # List all pods in ps output format with more information (such as node name)
  mkctl get pods -o wide

  # List deployments in JSON output format, in the "v1" version of the "apps" API group
  mkctl get deployments.v1.apps -o json

  # List all replication controllers and services together in ps output format
  mkctl get rc,services

  # List one or more resources by their type and names
  mkctl get rc/web service/frontend pods/web-pod-13je7

  # List all pods existing in all namespaces
  mkctl get pods --all-namespaces""",
)
