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

Lists of objects are merged by their key as the strategic merge patch's struct tags say
for the fields below (containers and volumes by name, ports by containerPort or port,
volumeMounts by mountPath); every other list is replaced whole when it differs. Not
done: the `$setElementOrder` and `$retainKeys` directives, pruning (--prune), and
--server-side.
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

Obj = dict[str, Any]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FIELD_MANAGER = "kubectl-client-side-apply"
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "env": "name", "volumes": "name", "volumeMounts": "mountPath",
              "imagePullSecrets": "name", "volumeDevices": "devicePath"}


def merge_key(field: str, items: list[Any]) -> str | None:
    """The strategic merge key of a list of objects, or None for a list replaced whole."""
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    if field == "ports":
        return "containerPort" if "containerPort" in items[0] else "port"
    return MERGE_KEYS.get(field)


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


def deletions(original: Any, modified: Any) -> Obj:
    """What `original` set and `modified` no longer does."""
    patch: Obj = {}
    for key, value in original.items():
        if key not in modified:
            patch[key] = None
        elif isinstance(value, dict) and isinstance(modified[key], dict):
            inner = deletions(value, modified[key])
            if inner:
                patch[key] = inner
        elif isinstance(value, list) and isinstance(modified[key], list):
            mkey = merge_key(key, value)
            if mkey is None:
                continue
            kept = {item.get(mkey) for item in modified[key] if isinstance(item, dict)}
            gone = [{"$patch": "delete", mkey: item.get(mkey)} for item in value
                    if item.get(mkey) not in kept]
            if gone:
                patch[key] = gone
    return patch


def changes(current: Any, modified: Any) -> Obj:
    """What `modified` says and `current` does not (its own fields left alone)."""
    patch: Obj = {}
    for key, value in modified.items():
        live = current.get(key) if isinstance(current, dict) else None
        if isinstance(value, dict) and isinstance(live, dict):
            inner = changes(live, value)
            if inner:
                patch[key] = inner
        elif isinstance(value, list) and isinstance(live, list) and merge_key(key, value):
            mkey = merge_key(key, value)
            by_key = {item.get(mkey): item for item in live if isinstance(item, dict)}
            items = []
            for item in value:
                inner = changes(by_key.get(item.get(mkey)) or {}, item)
                if inner:
                    items.append({mkey: item.get(mkey), **inner})
            if items:
                patch[key] = items
        elif value != live:
            patch[key] = value
    return patch


def _merged(a: Obj, b: Obj) -> Obj:
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = out[key] + value
        else:
            out[key] = value
    return out


def three_way_patch(original: Obj | None, modified: Obj, current: Obj) -> Obj:
    """Step 3: deletions since the last apply, merged with the changes to the live object."""
    return _merged(deletions(original or {}, modified), changes(current, modified))


def run(inv: Invocation) -> None:
    if not inv.flags["filename"]:
        raise MkctlError("must specify one of -f and -k")
    if inv.args:
        raise inv.usage_error(f"Unexpected args: [{' '.join(inv.args)}]")
    mode = dry_run(inv)
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
            patch = three_way_patch(original, modified, current)
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


COMMAND = Command(
    name="apply",
    summary="Apply a configuration to a resource by file name or stdin",
    usage="apply (-f FILENAME | -k DIRECTORY) [options]",
    run=run,
    flags=[DRY_RUN_FLAG, filename_flag("apply the configuration"), OUTPUT_FLAG,
           RECURSIVE_FLAG, TEMPLATE_FLAG, VALIDATE_FLAG,
           field_manager_flag(FIELD_MANAGER)],
    examples="""  # Apply the configuration in pod.json to a pod
  mkctl apply -f ./pod.json

  # Apply the JSON passed into stdin to a pod
  cat pod.json | mkctl apply -f -""",
)
