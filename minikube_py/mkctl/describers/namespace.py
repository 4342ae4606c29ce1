"""`describe namespace` (describe.go: NamespaceDescriber, DescribeResourceQuotas,
DescribeLimitRanges): the namespace's status and conditions, then the quotas and limit
ranges that apply inside it."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import print_annotations_multiline, print_labels_multiline
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, PrefixWriter, rfc1123z
from minikube_py.mkctl.errors import StatusError

SCOPE_HELP = {
    "Terminating": "Matches all pods that have an active deadline. These pods have a limited "
                   "lifespan on a node before being actively terminated by the system.",
    "NotTerminating": "Matches all pods that do not have an active deadline. These pods "
                      "usually include long running pods whose container command is not "
                      "expected to terminate.",
    "BestEffort": "Matches all pods that do not have resource requirements set. These pods "
                  "have a best effort quality of service.",
    "NotBestEffort": "Matches all pods that have at least one resource requirement set. "
                     "These pods have a burstable or guaranteed quality of service.",
}


def _list_unless_unserved(lookups: Lookups, path: str, settings: Settings) -> list[Obj] | None:
    """A list, or None when the server does not serve the resource (NotFound)."""
    params = {"limit": str(settings.chunk_size)} if settings.chunk_size > 0 else {}
    try:
        return lookups.list(path, params)
    except StatusError as error:
        if error.reason == "NotFound":
            return None
        raise


def namespace_describer(namespace: Obj, lookups: Lookups, settings: Settings) -> str:
    name = (namespace.get("metadata") or {}).get("name", "")
    quotas = _list_unless_unserved(lookups, f"/api/v1/namespaces/{name}/resourcequotas",
                                   settings)
    limit_ranges = _list_unless_unserved(lookups, f"/api/v1/namespaces/{name}/limitranges",
                                         settings)
    return describe_namespace(namespace, quotas, limit_ranges)


def describe_namespace(namespace: Obj, quotas: list[Obj] | None,
                       limit_ranges: list[Obj] | None) -> str:
    """describeNamespace."""
    meta, status = namespace.get("metadata") or {}, namespace.get("status") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"Status:\t{status.get('phase', '')}\n")
    if status.get("conditions"):
        w.write(LEVEL_0, "Conditions:\n")
        w.write(LEVEL_1, "Type\tStatus\tLastTransitionTime\tReason\tMessage\n")
        w.write(LEVEL_1, "----\t------\t------------------\t------\t-------\n")
        for c in status["conditions"]:
            w.write(LEVEL_1, f"{c.get('type', '')}\t{c.get('status', '')}\t"
                             f"{rfc1123z(c.get('lastTransitionTime'))}\t{c.get('reason', '')}\t"
                             f"{c.get('message', '')}\n")
    if quotas is not None:
        w.write(LEVEL_0, "\n")
        describe_resource_quotas(quotas, w)
    if limit_ranges is not None:
        w.write(LEVEL_0, "\n")
        describe_limit_ranges(limit_ranges, w)
    return w.tabbed()


def describe_resource_quotas(quotas: list[Obj], w: PrefixWriter) -> None:
    """DescribeResourceQuotas: each quota by name, its scopes, its used and hard."""
    if not quotas:
        w.write(LEVEL_0, "No resource quota.\n")
        return
    w.write(LEVEL_0, "Resource Quotas\n")
    for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
        w.write(LEVEL_1, f"Name:\t{quota['metadata']['name']}\n")
        scopes = sorted((quota.get("spec") or {}).get("scopes") or [])
        if scopes:
            w.write(LEVEL_1, f"Scopes:\t{', '.join(scopes)}\n")
            for scope in scopes:
                if scope in SCOPE_HELP:
                    w.write(LEVEL_1, f"* {SCOPE_HELP[scope]}\n")
        w.write(LEVEL_1, "Resource\tUsed\tHard\n")
        w.write(LEVEL_1, "--------\t---\t---\n")
        status = quota.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        for resource in sorted(hard):
            w.write(LEVEL_1, f"{resource}\t{used.get(resource, '0')}\t{hard[resource]}\n")


def describe_limit_ranges(limit_ranges: list[Obj], w: PrefixWriter) -> None:
    """DescribeLimitRanges: one row per limit and resource. kubectl walks a map here, so
    the order of a limit's resources varies from run to run; mkctl sorts them."""
    if not limit_ranges:
        w.write(LEVEL_0, "No LimitRange resource.\n")
        return
    w.write(LEVEL_0, "Resource Limits\n Type\tResource\tMin\tMax\tDefault Request\t"
                     "Default Limit\tMax Limit/Request Ratio\n")
    w.write(LEVEL_0, " ----\t--------\t---\t---\t---------------\t-------------\t"
                     "-----------------------\n")
    fields = ("min", "max", "defaultRequest", "default", "maxLimitRequestRatio")
    for limit_range in limit_ranges:
        for item in (limit_range.get("spec") or {}).get("limits") or []:
            names = sorted({name for field in fields for name in item.get(field) or {}})
            for name in names:
                values = "\t".join(str((item.get(field) or {}).get(name, "-"))
                                   for field in fields)
                w.write(LEVEL_0, f" {item.get('type', '')}\t{name}\t{values}\n")
