"""`mkctl apply -f`: client-side apply (kubectl apply without --server-side).

    mkctl apply -f web.yaml        deployment.apps/web created | configured | unchanged

The steps of kubectl's apply.go, for each object of the files (manifests.py):
1. `modified`: the object as written, with the `kubectl.kubernetes.io/last-applied-
   configuration` annotation set to its own compact JSON (keys sorted, then a newline);
2. GET the live object; absent, POST `modified` (`created`);
3. present: a three-way strategic merge patch between the last applied configuration
   (`original`, from the live object's annotation), `modified` and the live object:
   - deletions: what `original` had and `modified` no longer has, as `null` (in a list
     merged by key, `{"$patch": "delete", key: value}`);
   - changes: what `modified` says that the live object does not (fields the server
     defaulted and `modified` never mentioned are left alone);
   an empty patch prints `unchanged`, any other is sent as
   `application/strategic-merge-patch+json` (a custom resource's as
   `application/merge-patch+json`) and prints `configured`.

The patch is computed in strategic.py from the kind's schema, as kubectl does from the
Go types (lists merged by key, `$setElementOrder`, `$retainKeys`,
`$deleteFromPrimitiveList`); a kind without a schema (a custom resource) gets a JSON
merge patch.

With --server-side the object is sent whole as an apply patch
(`application/apply-patch+yaml`, field manager "kubectl", ?force=true with
--force-conflicts): the server merges it and tracks each field's manager
(apiserver/endpoints/apply.py), and the object prints as `serverside-applied`.

-l picks the objects of the files whose labels match. --prune (with -l or --all) then
deletes what an earlier apply made and this one no longer names: in each namespace the
files' objects went to, every object of the allowlisted kinds (kubectl's default list,
or --prune-allowlist) that matches the selector, carries the last-applied annotation and
is not one of the objects just applied; it prints as `pruned`. Nothing is pruned when
any object failed, and, as in kubectl, not with --server-side.
"""

from __future__ import annotations

import json
from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl import manifests
from minikube_py.mkctl.changes import (
    DRY_RUN_FLAG,
    OUTPUT_FLAG,
    RECURSIVE_FLAG,
    TEMPLATE_FLAG,
    VALIDATE_FLAG,
    OperationPrinter,
    dry_run,
    field_manager_flag,
    filename_flag,
    in_file,
    write_params,
)
from minikube_py.mkctl.command import PROGRAM, Command, Invocation
from minikube_py.mkctl.discovery import APIResource
from minikube_py.mkctl.errors import Aggregate, MkctlError, NoResourceMatch, StatusError
from minikube_py.mkctl.flags import BOOL, INT, SELECTOR_FLAG, STRINGS, Flag

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FIELD_MANAGER = "kubectl-client-side-apply"
SERVER_SIDE_FIELD_MANAGER = "kubectl"
# kubectl's default --prune-allowlist: (group, version, kind, namespaced).
PRUNED_KINDS = [("", "v1", "ConfigMap", True), ("", "v1", "Endpoints", True),
                ("", "v1", "Namespace", False), ("", "v1", "PersistentVolumeClaim", True),
                ("", "v1", "PersistentVolume", False), ("", "v1", "Pod", True),
                ("", "v1", "ReplicationController", True), ("", "v1", "Secret", True),
                ("", "v1", "Service", True), ("batch", "v1", "Job", True),
                ("batch", "v1", "CronJob", True), ("networking.k8s.io", "v1", "Ingress", True),
                ("apps", "v1", "DaemonSet", True), ("apps", "v1", "Deployment", True),
                ("apps", "v1", "ReplicaSet", True), ("apps", "v1", "StatefulSet", True)]
CASCADE = {"background": "Background", "true": "Background", "foreground": "Foreground",
           "orphan": "Orphan", "false": "Orphan"}
APPLY_PATCH = "application/apply-patch+yaml"
# A built-in kind's patch is strategic; a custom resource's (no schema) a JSON merge patch.
PATCH_TYPES = {False: "application/strategic-merge-patch+json",
               True: "application/merge-patch+json"}
CONFLICTS_HELP = """Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts"""
def go_json(value: Any) -> str:
    """encoding/json's compact form: keys sorted, HTML characters escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def annotated(obj: Obj) -> Obj:
    """Step 1: the object with its last-applied-configuration annotation."""
    metadata = obj.setdefault("metadata", {})
    annotations = dict(metadata.get("annotations") or {})
    annotations.pop(LAST_APPLIED, None)
    metadata["annotations"] = annotations
    configuration = go_json(obj) + "\n"
    return {**obj, "metadata": {**metadata, "annotations": {**annotations,
                                                            LAST_APPLIED: configuration}}}


def schema_of(obj: Obj) -> Any:
    """The schema of a built-in kind (None for a custom resource)."""
    from minikube_py.api.schema.registry import schema_for

    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return schema_for(group, version, str(obj.get("kind", "")))


def run(inv: Invocation) -> None:
    if not inv.flags["filename"]:
        raise MkctlError("must specify one of -f and -k")
    if inv.args:
        raise inv.usage_error(f"Unexpected args: [{' '.join(inv.args)}]")
    mode = dry_run(inv)
    if inv.flags["force-conflicts"] and not inv.flags["server-side"]:
        raise MkctlError("--force-conflicts only works with --server-side")
    if mode == "client" and inv.flags["server-side"]:
        raise MkctlError("--dry-run=client doesn't work with --server-side (did you mean "
                         "--dry-run=server instead?)")
    if inv.flags["server-side"] and inv.flags["prune"]:
        raise MkctlError("--prune is in alpha and doesn't currently work on objects created "
                         "by server-side apply")
    if inv.flags["all"] and inv.flags["selector"]:
        raise MkctlError("cannot set --all and --selector at the same time")
    if inv.flags["prune"] and not inv.flags["all"] and not inv.flags["selector"]:
        raise MkctlError("all resources selected for prune without explicitly passing --all. "
                         "To prune all resources, pass the --all flag. If you did not mean to "
                         "prune all resources, specify a label selector")
    pruner = Pruner(inv, mode) if inv.flags["prune"] else None
    if inv.flags["server-side"]:
        run_server_side(inv, pruner)
        return
    params = write_params(inv, FIELD_MANAGER)
    namespace, enforce = inv.namespace()
    printer = OperationPrinter(inv, "configured")
    errors: list[Exception] = []
    document_errors: list[Exception] = []
    for manifest in selected(inv, namespace, enforce):
        if isinstance(manifest, MkctlError):
            document_errors.append(manifest)
            continue
        if pruner:
            pruner.visit_namespace(manifest)
        modified = annotated(manifest.object)
        path = manifest.resource.path(manifest.namespace, manifest.name)
        try:
            current = inv.client.get_json(path)
        except StatusError as error:
            if error.reason != "NotFound":
                errors.append(in_file(error, "retrieving current configuration of",
                                      manifest.source))
                continue
            current = None
        try:
            if current is None:
                result = modified if mode == "client" else inv.client.request_json(
                    "POST", manifest.resource.path(manifest.namespace),
                    params, body=modified)
                if pruner:
                    pruner.visit(result)
                printer.print_obj(result, operation="created")
                continue
            if pruner:
                pruner.visit(current)
            annotations = (current.get("metadata") or {}).get("annotations") or {}
            original = json.loads(annotations[LAST_APPLIED]) if LAST_APPLIED in annotations \
                else None
            if original is None:
                inv.warn(f"resource {manifest.resource.name}/{manifest.name} is "
                         f"missing the {LAST_APPLIED} annotation which is required by "
                         f"{PROGRAM} apply. {PROGRAM} apply should only be used on resources "
                         f"created declaratively by either {PROGRAM} create --save-config or "
                         f"{PROGRAM} apply. The missing annotation will be patched "
                         "automatically.")
            from minikube_py.mkctl.strategic import three_way_patch

            schema = schema_of(modified)
            patch = three_way_patch(original, modified, current, schema)
            if not patch:
                printer.print_obj(current, operation="unchanged")
                continue
            result = current if mode == "client" else inv.client.request_json(
                "PATCH", path, params, body=patch,
                content_type=PATCH_TYPES[schema is None])
            printer.print_obj(result, operation="configured")
        except StatusError as error:
            errors.append(in_file(error, "applying patch" if current else "creating",
                                  manifest.source))
    if errors or document_errors:
        raise Aggregate(errors + document_errors)
    if pruner:
        pruner.prune()


def selected(inv: Invocation, namespace: str, enforce: bool) -> Any:
    """The files' objects (or their errors), those -l matches when it is given."""
    everything = manifests.manifests(inv, inv.flags["filename"], inv.flags["recursive"],
                                     namespace, enforce)
    if not inv.flags["selector"]:
        yield from everything
        return
    from minikube_py.api.selectors import SelectorError, parse_label_selector

    try:
        selector = parse_label_selector(inv.flags["selector"])
    except SelectorError as error:
        raise MkctlError(str(error)) from None
    for manifest in everything:
        if isinstance(manifest, MkctlError) or selector.matches(
                (manifest.object.get("metadata") or {}).get("labels") or {}):
            yield manifest


class Pruner:
    """--prune: what this apply saw, then the deletion of what it did not."""

    def __init__(self, inv: Invocation, mode: str) -> None:
        self.inv, self.mode = inv, mode
        self.uids: set[str] = set()
        self.namespaces: list[str] = []
        self.kinds = self._allowlist()
        cascade = inv.flags["cascade"]
        if cascade not in CASCADE:
            raise MkctlError(f'invalid cascade value ({cascade}). Must be "background", '
                             '"foreground", or "orphan"')
        self.options: Obj = {"propagationPolicy": CASCADE[cascade]}
        if inv.flags["grace-period"] >= 0:
            self.options["gracePeriodSeconds"] = inv.flags["grace-period"]
        if mode == "server":
            self.options["dryRun"] = ["All"]

    def _allowlist(self) -> list[tuple[str, str, str, bool]]:
        if not self.inv.flags["prune-allowlist"]:
            return PRUNED_KINDS
        kinds = []
        for text in self.inv.flags["prune-allowlist"]:
            parts = text.split("/")
            if len(parts) != 3:
                raise MkctlError(f"invalid GroupVersionKind format: {text}, please follow "
                                 "<group/version/kind>")
            group = "" if parts[0] == "core" else parts[0]
            try:
                resource = self.inv.mapper.resource_for_kind(group, parts[1], parts[2])
            except NoResourceMatch:
                raise MkctlError(_no_match(group, parts[1], parts[2])) from None
            kinds.append((group, parts[1], parts[2], resource.namespaced))
        return kinds

    def _resources(self) -> list[APIResource]:
        """The allowlist's resources, namespaced ones first (kubectl's GetRESTMappings)."""
        from minikube_py.mkctl.transport import klog_line

        if not self.inv.flags["prune-allowlist"]:
            self.inv.err.write(klog_line(
                "W", "prune.go:71", "Deprecated: kubectl apply will no longer prune "
                "non-namespaced resources by default when used with the --namespace flag in a "
                "future release. To preserve the current behaviour, list the resources you "
                "want to target explicitly in the --prune-allowlist flag.") + "\n")
        found = []
        for group, version, kind, namespaced in self.kinds:
            try:
                found.append(self.inv.mapper.resource_for_kind(group, version, kind))
            except NoResourceMatch:
                raise MkctlError(
                    f"error retrieving RESTMappings to prune: invalid resource {group}/"
                    f"{version}, Kind={kind}, Namespaced={str(namespaced).lower()}: "
                    f"{_no_match(group, version, kind)}") from None
        return sorted(found, key=lambda resource: not resource.namespaced)

    def visit_namespace(self, manifest: Any) -> None:
        if manifest.namespace and manifest.namespace not in self.namespaces:
            self.namespaces.append(manifest.namespace)

    def visit(self, obj: Obj) -> None:
        uid = (obj.get("metadata") or {}).get("uid")
        if uid:
            self.uids.add(uid)

    def prune(self) -> None:
        printer = OperationPrinter(self.inv, "pruned")
        resources = self._resources()
        for namespace in self.namespaces:
            for resource in resources:
                if resource.namespaced:
                    self._prune(resource, namespace, printer)
        for resource in resources:
            if not resource.namespaced:
                self._prune(resource, "", printer)

    def _prune(self, resource: APIResource, namespace: str, printer: OperationPrinter
               ) -> None:
        params = {"labelSelector": self.inv.flags["selector"]} if self.inv.flags[
            "selector"] else {}
        listed = self.inv.client.get_json(resource.path(namespace), params)
        api_version = f"{resource.group}/{resource.version}" if resource.group \
            else resource.version
        for item in listed.get("items") or []:
            metadata = item.get("metadata") or {}
            if LAST_APPLIED not in (metadata.get("annotations") or {}) \
                    or metadata.get("uid") in self.uids:
                continue
            if self.mode != "client":
                self.inv.client.request_json("DELETE", resource.path(namespace,
                                                                     metadata["name"]),
                                             {}, body=self.options)
            printer.print_obj({"apiVersion": api_version, "kind": resource.kind, **item})


def _no_match(group: str, version: str, kind: str) -> str:
    """meta.NoKindMatchError's words."""
    return f'no matches for kind "{kind}" in version "{f"{group}/{version}" if group else version}"'


def run_server_side(inv: Invocation, pruner: Pruner | None) -> None:
    """Each object sent whole as an apply patch; the server does the merge."""
    manager = (inv.flags["field-manager"] if "field-manager" in inv.flags.changed
               else SERVER_SIDE_FIELD_MANAGER)
    params = write_params(inv, manager)
    params["fieldManager"] = manager
    if inv.flags["force-conflicts"]:
        params["force"] = "true"
    namespace, enforce = inv.namespace()
    printer = OperationPrinter(inv, "serverside-applied")
    errors: list[Exception] = []
    for manifest in selected(inv, namespace, enforce):
        if isinstance(manifest, MkctlError):
            errors.append(manifest)
            continue
        if pruner:
            pruner.visit_namespace(manifest)
        path = manifest.resource.path(manifest.namespace, manifest.name)
        try:
            result = inv.client.request_json("PATCH", path, params, body=manifest.object,
                                             content_type=APPLY_PATCH)
        except StatusError as error:
            errors.append(MkctlError(f"{error.status.get('message', '')}\n{CONFLICTS_HELP}")
                          if error.code == 409 else error)
            continue
        if pruner:
            pruner.visit(result)
        printer.print_obj(result)
    if errors:
        raise Aggregate(errors)
    if pruner:
        pruner.prune()


COMMAND = Command(
    name="apply",
    summary="Apply a configuration to a resource by file name or stdin",
    usage="apply (-f FILENAME | -k DIRECTORY) [options]",
    run=run,
    flags=[DRY_RUN_FLAG, filename_flag("apply the configuration"), OUTPUT_FLAG,
           RECURSIVE_FLAG, TEMPLATE_FLAG, VALIDATE_FLAG,
           field_manager_flag(FIELD_MANAGER),
           Flag("all", BOOL, help="Select all resources in the namespace of the specified "
                                  "resource types."),
           Flag("cascade", default="background",
                help='Must be "background", "orphan", or "foreground". Selects the deletion '
                     "cascading strategy for the dependents (e.g. Pods created by a "
                     "ReplicationController). Defaults to background."),
           Flag("grace-period", INT, default=-1,
                help="Period of time in seconds given to the resource to terminate "
                     "gracefully. Ignored if negative. Set to 1 for immediate shutdown. Can "
                     "only be set to 0 when --force is true (force deletion)."),
           Flag("prune", BOOL,
                help="Automatically delete resource objects, that do not appear in the "
                     "configs and are created by either apply or create --save-config. "
                     "Should be used with either -l or --all."),
           Flag("prune-allowlist", STRINGS,
                help="Overwrite the default allowlist with <group/version/kind> for --prune"),
           SELECTOR_FLAG,
           Flag("server-side", BOOL,
                help="If true, apply runs in the server instead of the client."),
           Flag("force-conflicts", BOOL,
                help="If true, server-side apply will force the changes against conflicts.")],
    examples="""  # Apply the configuration in pod.json to a pod
  mkctl apply -f ./pod.json

  # Apply the JSON passed into stdin to a pod
  cat pod.json | mkctl apply -f -""",
)
