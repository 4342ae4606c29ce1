"""`mkctl auth can-i`: ask the API server whether an action is allowed (kubectl auth can-i).

    mkctl auth can-i create pods                  yes
    mkctl auth can-i get pods/web -n dev          no
    mkctl auth can-i list nodes --as bob          (impersonated: Impersonate-User: bob)
    mkctl auth can-i get /healthz                 a non-resource URL

The steps of kubectl's cani.go:
1. the arguments: VERB and RESOURCE[/NAME], or VERB and a /path; the resource resolved
   by discovery (an unknown one is asked about as typed, with a warning), and warnings for
   an unknown verb or a cluster-scoped resource asked about in a namespace;
2. a SelfSubjectAccessReview is created with the resource attributes (the namespace,
   "" with -A) or the non-resource ones; with --as the request is impersonated, so the
   review is of the impersonated user;
3. `yes`, or `no` and the reason if the server gave one; exit 0 for yes, 1 for no.

With --list (and no arguments) a SelfSubjectRulesReview of the namespace instead, its
rules broken down to one verb, resource and name each, the resource rules that differ
only by verb joined again, sorted by their Go text, and printed as a table (kubectl's
rbac.BreakdownRule, CompactRules and SortableRuleSlice).
"""

from __future__ import annotations

from typing import Any

from minikube_py.mkctl.command import PROGRAM, Command, Invocation
from minikube_py.mkctl.errors import Exit, MkctlError, NoResourceMatch
from minikube_py.mkctl.flags import BOOL, Flag

RESOURCE_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete",
                  "deletecollection", "use", "bind", "impersonate", "*", "approve", "sign",
                  "escalate", "attest")
NON_RESOURCE_VERBS = ("get", "put", "post", "head", "options", "delete", "patch", "*")


def _warn(inv: Invocation, message: str) -> None:
    inv.err.write(f"Warning: {message}\n\n")


def _resource_attributes(inv: Invocation, argument: str) -> dict[str, Any]:
    """Step 1 for RESOURCE[/NAME]: resourceFor, and the scope warning."""
    kind, _, name = argument.partition("/")
    attributes: dict[str, Any] = {"resource": kind}
    if name:
        attributes["name"] = name
    if kind == "*":
        return attributes
    try:
        resource = inv.mapper.resource_for(kind.lower())
    except NoResourceMatch as missing:
        in_group = f" in group '{missing.group}'" if missing.group else ""
        _warn(inv, f"the server doesn't have a resource type '{missing.resource}'{in_group}")
        return attributes
    attributes.update(group=resource.group, version=resource.version, resource=resource.name)
    if not resource.namespaced and not inv.flags["all-namespaces"]:
        in_group = f" in group '{resource.group}'" if resource.group else ""
        _warn(inv, f"resource '{resource.name}' is not namespace scoped{in_group}")
    return attributes


def _go_list(values: list[str]) -> str:
    return "[" + " ".join(values) + "]"


def _rule_text(rule: dict[str, list[str]]) -> str:
    """PolicyRule.String(), by which kubectl sorts the rules it lists."""
    fields = ("Verbs", "APIGroups", "Resources", "ResourceNames", "NonResourceURLs")
    return "&PolicyRule{" + "".join(f"{field}:{_go_list(rule.get(field) or [])},"
                                    for field in fields) + "}"


def _listed_rules(status: dict[str, Any]) -> list[dict[str, list[str]]]:
    """The review's rules as kubectl prints them (see the module's last paragraph)."""
    broken: list[dict[str, list[str]]] = []
    for rule in status.get("resourceRules") or []:
        names = rule.get("resourceNames") or []
        broken += [{"Verbs": [verb], "APIGroups": [group], "Resources": [resource],
                    **({"ResourceNames": [name]} if name is not None else {})}
                   for group in rule.get("apiGroups") or []
                   for resource in rule.get("resources") or []
                   for verb in rule.get("verbs") or []
                   for name in (names or [None])]
    for rule in status.get("nonResourceRules") or []:
        broken += [{"Verbs": [verb], "NonResourceURLs": [url]}
                   for url in rule.get("nonResourceURLs") or []
                   for verb in rule.get("verbs") or []]
    compacted, joined = [], {}
    for rule in broken:
        if rule.get("NonResourceURLs"):
            compacted.append(rule)
            continue
        key = (rule["APIGroups"][0], rule["Resources"][0], tuple(rule.get("ResourceNames") or []))
        if key not in joined:
            joined[key] = {field: list(values) for field, values in rule.items()}
        elif rule["Verbs"][0] not in joined[key]["Verbs"]:
            joined[key]["Verbs"].append(rule["Verbs"][0])
    return sorted([*compacted, *joined.values()], key=_rule_text)


def _resource_group(rule: dict[str, list[str]]) -> str:
    """describe.CombineResourceGroup: `deployments.apps/scale`."""
    resources, groups = rule.get("Resources") or [], rule.get("APIGroups") or []
    if not resources:
        return ""
    resource, slash, subresource = resources[0].partition("/")
    if groups and groups[0]:
        resource += "." + groups[0]
    return resource + slash + subresource


def can_i_list(inv: Invocation) -> None:
    flags = inv.flags
    if inv.args:
        raise MkctlError("list option must be specified with no arguments")
    if flags["quiet"] or flags["all-namespaces"] or flags["subresource"]:
        raise MkctlError("list option can't be specified with neither quiet, all-namespaces "
                         "nor subresource options")
    review = inv.client.request_json(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        body={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
              "spec": {"namespace": inv.namespace()[0]}})
    status = review.get("status") or {}
    if status.get("incomplete"):
        inv.warn(f"the list may be incomplete: {status.get('evaluationError', '')}")
    from minikube_py.mkctl.printers.tabwriter import TabWriter

    writer = TabWriter(inv.out)
    if not flags["no-headers"]:
        writer.write_row(["Resources", "Non-Resource URLs", "Resource Names", "Verbs"])
    for rule in _listed_rules(status):
        writer.write_row([_resource_group(rule), _go_list(rule.get("NonResourceURLs") or []),
                          _go_list(rule.get("ResourceNames") or []), _go_list(rule["Verbs"])])
    writer.flush()


def can_i(inv: Invocation) -> None:
    flags, args = inv.flags, inv.args
    if flags["list"]:
        return can_i_list(inv)
    if len(args) != 2:
        raise MkctlError("you must specify two arguments: verb resource or verb "
                         f"resource/resourceName.\nSee '{inv.path} -h' for help and examples.")
    verb, target = args
    if target.startswith("/"):
        if flags["subresource"]:
            raise MkctlError("--subresource can not be used with NonResourceURL")
        if verb not in NON_RESOURCE_VERBS:
            _warn(inv, f"verb '{verb}' is not a known verb")
        spec: dict[str, Any] = {"nonResourceAttributes": {"verb": verb, "path": target}}
    else:
        attributes = _resource_attributes(inv, target)
        if verb not in RESOURCE_VERBS:
            _warn(inv, f"verb '{verb}' is not a known verb")
        namespace = "" if flags["all-namespaces"] else inv.namespace()[0]
        attributes.update(namespace=namespace, verb=verb)
        if flags["subresource"]:
            attributes["subresource"] = flags["subresource"]
        spec = {"resourceAttributes": attributes}
    if flags["no-headers"]:
        raise MkctlError("--no-headers cannot be set without --list specified")
    review = inv.client.request_json(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": spec})
    status = review.get("status") or {}
    allowed = bool(status.get("allowed"))
    if not flags["quiet"]:
        line = "yes" if allowed else "no"
        for detail in (status.get("reason"), status.get("evaluationError")):
            if detail:
                line += f" - {detail}"
        inv.out.write(line + "\n")
    if not allowed:
        inv.out.flush()
        raise Exit(1)


CAN_I = Command(
    name="can-i",
    summary="Check whether an action is allowed",
    usage="can-i VERB [TYPE | TYPE/NAME | NONRESOURCEURL] [options]",
    run=can_i,
    flags=[
        Flag("all-namespaces", BOOL, shorthand="A",
             help="If true, check the specified action in all namespaces."),
        Flag("list", BOOL, help="If true, prints all allowed actions."),
        Flag("no-headers", BOOL, help="If true, prints allowed actions without headers"),
        Flag("quiet", BOOL, shorthand="q",
             help="If true, suppress output and just return the exit code."),
        Flag("subresource", help="SubResource such as pod/log or deployment/scale"),
    ],
    examples=f"""  # Check to see if I can create pods in any namespace
  {PROGRAM} auth can-i create pods --all-namespaces

  # Check to see if I can list deployments in my current namespace
  {PROGRAM} auth can-i list deployments.apps

  # Check to see if I can read pod logs
  {PROGRAM} auth can-i get pods --subresource=log

  # Check to see if I can access the URL /logs/
  {PROGRAM} auth can-i get /logs/""",
)

COMMAND = Command(name="auth", summary="Inspect authorization", subcommands=[CAN_I])
