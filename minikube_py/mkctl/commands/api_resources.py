"""`mkctl api-resources`: the resources the server serves (kubectl api-resources).

    NAME          SHORTNAMES   APIVERSION   NAMESPACED   KIND
    pods          po           v1           true         Pod
    deployments   deploy       apps/v1      true         Deployment

Every resource of each group's preferred version (and those only other versions have),
sorted by group (the core group first), then name; subresources are left out. Discovery
is fetched afresh unless --cached.
"""

from __future__ import annotations

from typing import Any

from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.discovery import APIResource
from minikube_py.mkctl.errors import ConnectionFailed, MkctlError
from minikube_py.mkctl.flags import BOOL, STRINGS, Flag
from minikube_py.mkctl.printers import unknown_format
from minikube_py.mkctl.printers.tabwriter import TabWriter

HEADERS = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
WIDE_HEADERS = [*HEADERS, "VERBS", "CATEGORIES"]


def preferred_resources(resources: list[APIResource]) -> list[APIResource]:
    """ServerPreferredResources: per group, a resource's first (preferred) version only."""
    seen: set[tuple[str, str]] = set()
    preferred = []
    for resource in resources:
        if (resource.group, resource.name) not in seen:
            seen.add((resource.group, resource.name))
            preferred.append(resource)
    return preferred


def run(inv: Invocation) -> None:
    flags = inv.flags
    if inv.args:
        raise inv.usage_error(f"unexpected arguments: [{' '.join(inv.args)}]")
    if flags["sort-by"] not in ("", "name", "kind"):
        raise MkctlError("--sort-by accepts only name or kind")
    output = flags["output"]
    if output not in ("", "wide", "name", "json", "yaml"):
        raise unknown_format(output)
    if not flags["cached"]:
        inv.discovery.invalidate()
    try:
        resources = preferred_resources(inv.discovery.groups().resources)
    except ConnectionFailed as error:
        from minikube_py.mkctl.transport import klog_error

        inv.err.write(klog_error("memcache.go:381", "Couldn't get current server API group "
                                 "list", error) + "\n")
        raise
    selected = [resource for resource in resources if _wanted(inv, resource)]
    order = {"name": lambda r: (r.name, r.name), "kind": lambda r: (r.kind, r.name)}.get(
        flags["sort-by"], lambda r: (r.group, r.name))
    selected.sort(key=order)
    if output in ("json", "yaml"):
        return _print_list(inv, selected, output)
    writer = TabWriter(inv.out)
    if output == "name":
        for resource in selected:
            writer.write_row([resource.group_resource])
    else:
        if not flags["no-headers"]:
            writer.write_row(WIDE_HEADERS if output == "wide" else HEADERS)
        for resource in selected:
            row = [resource.name, ",".join(resource.short_names), resource.group_version,
                   "true" if resource.namespaced else "false", resource.kind]
            if output == "wide":
                row += [",".join(resource.verbs), ",".join(resource.categories)]
            writer.write_row(row)
    writer.flush()
    return None


def _wanted(inv: Invocation, resource: APIResource) -> bool:
    flags = inv.flags
    if not resource.verbs:
        return False
    if "api-group" in flags.changed and flags["api-group"] != resource.group:
        return False
    if "namespaced" in flags.changed and flags["namespaced"] != resource.namespaced:
        return False
    if not set(flags["verbs"]) <= set(resource.verbs):
        return False
    return set(flags["categories"]) <= set(resource.categories)


def _print_list(inv: Invocation, resources: list[APIResource], output: str) -> None:
    """The APIResourceList, fields in the Go struct's order."""
    items: list[dict[str, Any]] = []
    for resource in resources:
        item: dict[str, Any] = {"name": resource.name, "singularName": resource.singular_name,
                                "namespaced": resource.namespaced}
        if resource.group:
            item["group"] = resource.group
        if resource.version:
            item["version"] = resource.version
        item["kind"] = resource.kind
        item["verbs"] = list(resource.verbs)
        if resource.short_names:
            item["shortNames"] = list(resource.short_names)
        if resource.categories:
            item["categories"] = list(resource.categories)
        items.append(item)
    document = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "",
                "resources": items}
    if output == "json":
        from minikube_py.mkctl.printers.gojson import dumps

        inv.out.write(dumps(document, sort_keys=False) + "\n")
    else:
        from minikube_py.api.goyaml.emit import dump

        inv.out.write(dump(document))


COMMAND = Command(
    name="api-resources",
    summary="Print the supported API resources on the server",
    description="Print the supported API resources on the server.",
    usage="api-resources [flags] [options]",
    run=run,
    flags=[
        Flag("api-group", help="Limit to resources in the specified API group."),
        Flag("cached", BOOL, help="Use the cached list of resources if available."),
        Flag("categories", STRINGS,
             help="Limit to resources that belong to the specified categories."),
        Flag("namespaced", BOOL, default=True,
             help="If false, non-namespaced resources will be returned, otherwise returning "
                  "namespaced resources by default."),
        Flag("no-headers", BOOL,
             help="When using the default or custom-column output format, don't print "
                  "headers (default print headers)."),
        Flag("output", shorthand="o", help="Output format. One of: (json, yaml, name, wide)."),
        Flag("sort-by", help="If non-empty, sort list of resources using specified field. The "
                             "field can be either 'name' or 'kind'."),
        Flag("verbs", STRINGS, help="Limit to resources that support the specified verbs."),
    ],
    examples="""  # Print the supported API resources
  mkctl api-resources

  # Print the supported API resources with more information
  mkctl api-resources -o wide

  # Print the supported namespaced resources
  mkctl api-resources --namespaced=true

  # Print the supported API resources with a specific APIGroup
  mkctl api-resources --api-group=rbac.authorization.k8s.io""",
)
