"""From resource arguments to requests, and the requests' results (cli-runtime's
resource.Builder, as `kubectl get` drives it).

    pods                  every pod of the namespace (a list, filtered by -l/--field-selector)
    pods,svc              the lists of two kinds
    pod web db            two pods by name
    pod/web svc/web       objects by kind/name (every argument must then have a slash)
    pods,svc web          each kind with each name: pod/web and service/web
    all                   a category: each of its resources, as a list

Each argument is resolved before anything is asked of the server, so a misspelt kind
fails the whole command. Fetching never stops at the first failure: every result and
every error is returned, and the command prints what it got before the errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from minikube_py.mkctl.command import PROGRAM, Invocation
from minikube_py.mkctl.discovery import APIResource
from minikube_py.mkctl.errors import MkctlError, StatusError

DEFAULT_CHUNK_SIZE = 500
TABLE_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")


class Request(NamedTuple):
    """One GET: a collection (name "") or one object; namespace "" for all namespaces or
    a cluster-scoped resource."""

    resource: APIResource
    namespace: str
    name: str = ""


class Selection(NamedTuple):
    """What the arguments asked for (resource.Result before it is visited)."""

    requests: list[Request]
    single_item_implied: bool  # one object named: printed as itself, not in a List
    label_selector: str = ""
    field_selector: str = ""


class Info(NamedTuple):
    """One result (resource.Info): the request and what the server answered."""

    request: Request
    object: dict[str, Any]


class Results:
    def __init__(self) -> None:
        self.infos: list[Info] = []
        self.errors: list[Exception] = []


def split_resource_argument(arg: str) -> list[str]:
    """SplitResourceArgument: comma-separated kinds, duplicates dropped."""
    return list(dict.fromkeys(arg.split(",")))


def _split_type_name(arg: str) -> tuple[str, str]:
    parts = arg.split("/")
    if len(parts) != 2:
        raise MkctlError("arguments in resource/name form may not have more than one slash")
    resource, name = parts
    if not resource or not name or len(split_resource_argument(resource)) != 1:
        raise MkctlError("arguments in resource/name form must have a single resource and name")
    return resource, name


def select(inv: Invocation, args: list[str], *, namespace: str, all_namespaces: bool,
           label_selector: str, field_selector: str, single_type: bool = False) -> Selection:
    """ResourceTypeOrNameArgs + the visitor choice of Builder.Do, without fetching."""
    label_selector, field_selector = label_selector.strip(), field_selector.strip()
    if all_namespaces:
        namespace = ""
    if len(args) >= 2 and len(split_resource_argument(args[0])) > 1:
        args = [f"{kind}/{name}" for kind in split_resource_argument(args[0])
                for name in args[1:]]
    slashed = sum("/" in arg for arg in args)
    if slashed and slashed != len(args):
        raise MkctlError(
            "there is no need to specify a resource type as a separate argument when passing "
            f"arguments in resource/name form (e.g. '{PROGRAM} get resource/<resource_name>' "
            f"instead of '{PROGRAM} get resource resource/<resource_name>'")
    if slashed:
        return _select_tuples(inv, [_split_type_name(arg) for arg in args], namespace,
                              all_namespaces, bool(label_selector or field_selector),
                              single_type)
    kinds: list[str] = []
    for part in args[0].split(",") if args else []:
        expanded = inv.mapper.expand_category(part)
        kinds.extend(expanded if expanded is not None else [part])
    kinds = split_resource_argument(",".join(kinds)) if kinds else []
    names = args[1:]
    selector_given = bool(label_selector or field_selector) or len(args) == 1
    if single_type and len(kinds) > 1:
        raise MkctlError("you may only specify a single resource type")
    if selector_given:
        if names:
            raise MkctlError("name cannot be provided when a selector is specified")
        if not kinds:
            raise MkctlError("at least one resource must be specified to use a selector")
        resources = _resources(inv, kinds)
        return Selection([Request(r, namespace if r.namespaced else "") for r in resources],
                         False, label_selector, field_selector)
    if not kinds:
        raise MkctlError("you must provide a resource and a resource name together")
    if len(kinds) > 1:
        raise MkctlError("you must specify only one resource")
    resource = _resources(inv, kinds)[0]
    _check_namespace(resource, namespace, all_namespaces)
    requests = [Request(resource, namespace if resource.namespaced else "", name)
                for name in names]
    return Selection(requests, len(names) == 1)


def _select_tuples(inv: Invocation, tuples: list[tuple[str, str]], namespace: str,
                   all_namespaces: bool, selector_given: bool, single_type: bool) -> Selection:
    if selector_given:
        raise MkctlError("selectors and the all flag cannot be used when passing resource/name "
                         "arguments")
    mappings: dict[str, APIResource] = {}
    for kind, _ in tuples:
        if kind not in mappings:
            mappings[kind] = inv.mapper.resource_for(kind)
    if single_type and len({(r.group, r.version, r.name) for r in mappings.values()}) > 1:
        raise MkctlError("you may only specify a single resource type")
    requests = []
    for kind, name in tuples:
        resource = mappings[kind]
        _check_namespace(resource, namespace, all_namespaces)
        requests.append(Request(resource, namespace if resource.namespaced else "", name))
    return Selection(requests, len(tuples) == 1)


def _resources(inv: Invocation, kinds: list[str]) -> list[APIResource]:
    """resourceMappings: each kind resolved, the same resource named twice kept once."""
    resources: list[APIResource] = []
    for kind in kinds:
        resource = inv.mapper.resource_for(kind)
        if all((r.group, r.version, r.kind) != (resource.group, resource.version, resource.kind)
               for r in resources):
            resources.append(resource)
    return resources


def _check_namespace(resource: APIResource, namespace: str, all_namespaces: bool) -> None:
    if resource.namespaced and not namespace:
        raise MkctlError("a resource cannot be retrieved by name across all namespaces"
                         if all_namespaces else
                         "namespace may not be empty when retrieving a resource by name")


def fetch(inv: Invocation, selection: Selection, *, accept: str, chunk_size: int,
          ignore: Callable[[Exception], bool] = lambda error: False,
          params: dict[str, str] | None = None) -> Results:
    """Visit every request: lists page by page (`limit`/`continue`), objects by name;
    `params` go with each request."""
    results = Results()
    for request in selection.requests:
        try:
            if request.name:
                obj = inv.client.get_json(
                    request.resource.path(request.namespace, request.name), params or None,
                    accept=accept)
            else:
                obj = _list(inv, request, selection, accept, chunk_size, params or {})
        except StatusError as error:
            if not request.name and error.reason in ("BadRequest", "NotFound"):
                error = _explained(error, request.resource, selection)
            if not ignore(error):
                results.errors.append(error)
            continue
        results.infos.append(Info(request, obj))
    return results


def _explained(error: StatusError, resource: APIResource, selection: Selection
               ) -> StatusError:
    """The Selector visitor's wording of a list the server refused."""
    gvr = f"{resource.group}/{resource.version}, Resource={resource.name}"
    if selection.label_selector or selection.field_selector:
        message = (f'Unable to find "{gvr}" that match label selector '
                   f'"{selection.label_selector}", field selector "{selection.field_selector}"'
                   f": {error}")
    else:
        message = f'Unable to list "{gvr}": {error}'
    return StatusError({**error.status, "message": message})


def list_params(selection: Selection) -> dict[str, str]:
    params = {}
    if selection.label_selector:
        params["labelSelector"] = selection.label_selector
    if selection.field_selector:
        params["fieldSelector"] = selection.field_selector
    return params


def _list(inv: Invocation, request: Request, selection: Selection, accept: str,
          chunk_size: int, extra: dict[str, str]) -> dict[str, Any]:
    """A whole list: the pages the server cuts it into, joined (rows of Tables, items of
    lists)."""
    params = {**list_params(selection), **extra}
    if chunk_size > 0:
        params["limit"] = str(chunk_size)
    path = request.resource.path(request.namespace)
    first = inv.client.get_json(path, params, accept=accept)
    page = first
    while (page.get("metadata") or {}).get("continue"):
        page = inv.client.get_json(path, {**params, "continue": page["metadata"]["continue"]},
                                   accept=accept)
        key = "rows" if page.get("kind") == "Table" else "items"
        first.setdefault(key, [])
        first[key] = (first[key] or []) + (page.get(key) or [])
    return first


def is_not_found(error: Exception) -> bool:
    return isinstance(error, StatusError) and error.reason == "NotFound"


def named_objects(inv: Invocation, selection: Selection, errors: list[Exception]
                  ) -> list[Request]:
    """Each object the selection names, as a Request with its name: a named request as it
    is, a collection listed (by the selectors) into its objects; listing errors go to
    `errors`. What delete and wait act on, one object at a time."""
    found: list[Request] = []
    for request in selection.requests:
        if request.name:
            found.append(request)
            continue
        listed = fetch(inv, Selection([request], False, selection.label_selector,
                                      selection.field_selector),
                       accept="", chunk_size=DEFAULT_CHUNK_SIZE)
        errors.extend(listed.errors)
        for info in listed.infos:
            for item in info.object.get("items") or []:
                metadata = item.get("metadata") or {}
                found.append(Request(request.resource, metadata.get("namespace", ""),
                                     metadata.get("name", "")))
    return found


def each_object(results: Results) -> Iterator[tuple[APIResource, dict[str, Any]]]:
    """Every object fetched, a list's items one by one, each with its resource and with
    the apiVersion and kind a list's items leave out (as the dynamic client fills them)."""
    for info in results.infos:
        items = info.object["items"] if isinstance(info.object.get("items"), list) else [
            info.object]
        resource = info.request.resource
        for obj in items:
            yield resource, {"apiVersion": resource.group_version, "kind": resource.kind,
                             **obj}
