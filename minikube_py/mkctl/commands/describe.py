"""`mkctl describe`: show details of a resource or group of resources (kubectl describe).

    mkctl describe pod web                the pod, with its containers and events
    mkctl describe pods/web nodes/n1      objects by kind/name
    mkctl describe pods                   every pod of the namespace (no events unless
                                          --show-events=true is given)
    mkctl describe pods -l app=web -A     by label, in every namespace
    mkctl describe pods web-              no pod "web-": every pod whose name starts so

The steps of kubectl's describe.go (DescribeOptions.Run):
1. the arguments become requests (builder.py), as for get; lists are flattened into
   their items;
2. events are shown for one object only, unless --show-events was given;
3. each object goes to the describer of its kind (describers/), which reads what it
   needs around it (events by a field selector on involvedObject, a node's pods, ...);
   descriptions are separated by two blank lines;
4. `describe TYPE NAME` that finds nothing describes every TYPE whose name starts
   with NAME instead, and fails with the first error if none does;
5. "No resources found in <ns> namespace." on stderr when there was nothing to
   describe; the errors, one line each, and exit code 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minikube_py.api import Obj
from minikube_py.mkctl import builder
from minikube_py.mkctl.command import PROGRAM, Command, Invocation
from minikube_py.mkctl.errors import Aggregate, MkctlError
from minikube_py.mkctl.flags import ALL_NAMESPACES_FLAG, BOOL, INT, SELECTOR_FLAG, Flag

if TYPE_CHECKING:
    from minikube_py.mkctl.describers import Settings



class ClientLookups:
    """describers.Lookups over the command's REST client."""

    def __init__(self, inv: Invocation) -> None:
        self.client = inv.client

    def list(self, path: str, params: dict[str, str]) -> list[Obj]:
        page = self.client.get_json(path, params)
        items = list(page.get("items") or [])
        while (page.get("metadata") or {}).get("continue"):
            page = self.client.get_json(path, {**params,
                                               "continue": page["metadata"]["continue"]})
            items += page.get("items") or []
        return items

    def get(self, path: str) -> Obj:
        return self.client.get_json(path)


def run(inv: Invocation) -> None:
    from minikube_py.mkctl.describers import Settings

    flags = inv.flags
    if not inv.args:
        raise MkctlError("You must specify the type of resource to describe. Use "
                         f'"{PROGRAM} api-resources" for a complete list of supported '
                         "resources.\n")
    namespace, _ = inv.namespace()
    selection = builder.select(inv, list(inv.args), namespace=namespace,
                               all_namespaces=flags["all-namespaces"],
                               label_selector=flags["selector"], field_selector="")
    results = builder.fetch(inv, selection, accept="", chunk_size=flags["chunk-size"])
    objects = _flatten(results)
    show_events = flags["show-events"]
    if (results.errors or len(objects) > 1) and "show-events" not in flags.changed:
        show_events = False
    settings = Settings(show_events, flags["chunk-size"])
    # A lone NotFound (several errors come as an aggregate, which is no NotFound).
    if (len(inv.args) == 2 and len(results.errors) == 1
            and builder.is_not_found(results.errors[0])):
        return _describe_matching(inv, namespace, results.errors, settings)
    errors = list(results.errors)
    lookups = ClientLookups(inv)
    seen: set[str] = set()
    first = True
    for request, obj in objects:
        try:
            text = _describe(request, obj, lookups, settings)
        except MkctlError as error:
            if str(error) not in seen:
                seen.add(str(error))
                errors.append(error)
            continue
        inv.out.write(text if first else "\n\n" + text)
        first = False
    if not objects and not errors:
        if flags["all-namespaces"]:
            inv.err.write("No resources found\n")
        else:
            inv.err.write(f"No resources found in {namespace} namespace.\n")
    if errors:
        raise Aggregate(errors)


def _flatten(results: builder.Results) -> list[tuple[builder.Request, Obj]]:
    """Flatten: a list's items, each on its own, with the apiVersion and kind a list's
    items lack (kubectl's describers GET each object again, which has them)."""
    objects = []
    for info in results.infos:
        items = info.object.get("items")
        if not isinstance(items, list):
            objects.append((info.request, info.object))
            continue
        resource = info.request.resource
        api_version = f"{resource.group}/{resource.version}" if resource.group else (
            resource.version)
        for obj in items:
            objects.append((info.request, {"apiVersion": api_version, "kind": resource.kind,
                                           **obj}))
    return objects


def _describe(request: builder.Request, obj: Obj, lookups: ClientLookups,
              settings: Settings) -> str:
    from minikube_py.mkctl.describers import describer_for

    resource = request.resource
    describer = describer_for(resource.group, resource.kind)
    if describer is None:
        raise MkctlError(f"{PROGRAM} describe cannot describe {resource.kind} yet; use "
                         f"`{PROGRAM} get {resource.name} -o yaml`")
    return describer(obj, lookups, settings)


def _describe_matching(inv: Invocation, namespace: str, original: list[Exception],
                       settings: Settings) -> None:
    """DescribeMatchingResources: every object of the type whose name starts with the
    name given, each followed by a newline; the first error if there is none."""
    kind, prefix = inv.args
    selection = builder.select(inv, [kind], namespace=namespace, all_namespaces=False,
                               label_selector="", field_selector="", single_type=True)
    results = builder.fetch(inv, selection, accept="", chunk_size=inv.flags["chunk-size"])
    if results.errors:
        raise results.errors[0]
    lookups = ClientLookups(inv)
    found = False
    for request, obj in _flatten(results):
        if (obj.get("metadata") or {}).get("name", "").startswith(prefix):
            found = True
            inv.out.write(_describe(request, obj, lookups, settings) + "\n")
    if not found:
        raise Aggregate(original)


COMMAND = Command(
    name="describe",
    summary="Show details of a specific resource or group of resources",
    usage="describe (-f FILENAME | TYPE [NAME_PREFIX | -l label] | TYPE/NAME)",
    run=run,
    flags=[
        ALL_NAMESPACES_FLAG,
        Flag("chunk-size", INT, default=builder.DEFAULT_CHUNK_SIZE,
             help="Return large lists in chunks rather than all at once. Pass 0 to disable."),
        SELECTOR_FLAG,
        Flag("show-events", BOOL, default=True,
             help="If true, display events related to the described object. Defaults to "
                  "true for a single object, false for multiple objects and prefix "
                  "matching."),
    ],
    description=(
        "Show details of a specific resource or group of resources.\n\n"
        " Print a detailed description of the selected resources, including related "
        "resources such as events or controllers. You may select a single object by name, "
        "all objects of that type, provide a name prefix, or label selector. For "
        "example:\n\n"
        f"        $ {PROGRAM} describe TYPE NAME_PREFIX\n        \n"
        " will first check for an exact match on TYPE and NAME_PREFIX. If no such resource "
        "exists, it will output details for every resource that has a name prefixed with "
        "NAME_PREFIX.\n\n"
        f'Use "{PROGRAM} api-resources" for a complete list of supported resources.'),
    examples="""  # Describe a node
  mkctl describe nodes kubernetes-node-emt8.c.myproject.internal

  # Describe a pod
  mkctl describe pods/nginx

  # Describe all pods
  mkctl describe pods

  # Describe pods by label name=myLabel
  mkctl describe pods -l name=myLabel

  # Describe all pods managed by the 'frontend' replication controller
  # (rc-created pods get the name of the rc as a prefix in the pod name)
  mkctl describe pods frontend""",
)
