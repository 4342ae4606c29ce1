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
   `application/strategic-merge-patch+json` and prints `configured`.

The patch is computed in strategic.py from the kind's schema, as kubectl does from the
Go types (lists merged by key, `$setElementOrder`, `$retainKeys`,
`$deleteFromPrimitiveList`); a kind without a schema (a custom resource) gets a JSON
merge patch.

With --server-side the object is sent whole as an apply patch
(`application/apply-patch+yaml`, field manager "kubectl", ?force=true with
--force-conflicts): the server merges it and tracks each field's manager
(apiserver/apply.py), and the object prints as `serverside-applied`. Not done: pruning
(--prune).
"""

from __future__ import annotations

import json
from typing import Any

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
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, Flag

Obj = dict[str, Any]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FIELD_MANAGER = "kubectl-client-side-apply"
SERVER_SIDE_FIELD_MANAGER = "kubectl"
APPLY_PATCH = "application/apply-patch+yaml"
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
    if inv.flags["server-side"]:
        run_server_side(inv, mode)
        return
    if inv.flags["force-conflicts"]:
        raise MkctlError("--force-conflicts only works with --server-side")
    params = write_params(inv, FIELD_MANAGER)
    namespace, enforce = inv.namespace()
    printer = OperationPrinter(inv, "configured")
    errors: list[Exception] = []
    document_errors: list[Exception] = []
    for manifest in manifests.manifests(inv, inv.flags["filename"], inv.flags["recursive"],
                                        namespace, enforce):
        if isinstance(manifest, MkctlError):
            document_errors.append(manifest)
            continue
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
                printer.print_obj(result, operation="created")
                continue
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

            patch = three_way_patch(original, modified, current, schema_of(modified))
            if not patch:
                printer.print_obj(current, operation="unchanged")
                continue
            result = current if mode == "client" else inv.client.request_json(
                "PATCH", path, params, body=patch,
                content_type="application/strategic-merge-patch+json")
            printer.print_obj(result, operation="configured")
        except StatusError as error:
            errors.append(in_file(error, "applying patch" if current else "creating",
                                  manifest.source))
    if errors or document_errors:
        raise Aggregate(errors + document_errors)


def run_server_side(inv: Invocation, mode: str) -> None:
    """Each object sent whole as an apply patch; the server does the merge."""
    if mode == "client":
        raise MkctlError("--dry-run=client doesn't work with --server-side (did you mean "
                         "--dry-run=server instead?)")
    manager = (inv.flags["field-manager"] if "field-manager" in inv.flags.changed
               else SERVER_SIDE_FIELD_MANAGER)
    params = write_params(inv, manager)
    params["fieldManager"] = manager
    if inv.flags["force-conflicts"]:
        params["force"] = "true"
    namespace, enforce = inv.namespace()
    printer = OperationPrinter(inv, "serverside-applied")
    errors: list[Exception] = []
    for manifest in manifests.manifests(inv, inv.flags["filename"], inv.flags["recursive"],
                                        namespace, enforce):
        if isinstance(manifest, MkctlError):
            errors.append(manifest)
            continue
        path = manifest.resource.path(manifest.namespace, manifest.name)
        try:
            result = inv.client.request_json("PATCH", path, params, body=manifest.object,
                                             content_type=APPLY_PATCH)
        except StatusError as error:
            errors.append(MkctlError(f"{error.status.get('message', '')}\n{CONFLICTS_HELP}")
                          if error.code == 409 else error)
            continue
        printer.print_obj(result)
    if errors:
        raise Aggregate(errors)


COMMAND = Command(
    name="apply",
    summary="Apply a configuration to a resource by file name or stdin",
    usage="apply (-f FILENAME | -k DIRECTORY) [options]",
    run=run,
    flags=[DRY_RUN_FLAG, filename_flag("apply the configuration"), OUTPUT_FLAG,
           RECURSIVE_FLAG, TEMPLATE_FLAG, VALIDATE_FLAG,
           field_manager_flag(FIELD_MANAGER),
           Flag("server-side", BOOL,
                help="If true, apply runs in the server instead of the client."),
           Flag("force-conflicts", BOOL,
                help="If true, server-side apply will force the changes against conflicts.")],
    examples="""  # Apply the configuration in pod.json to a pod
  mkctl apply -f ./pod.json

  # Apply the JSON passed into stdin to a pod
  cat pod.json | mkctl apply -f -""",
)
