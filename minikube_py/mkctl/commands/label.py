"""`mkctl label`: add, change or remove labels (kubectl label); `annotate` is the same
command on annotations (annotate.py).

    mkctl label pod web tier=frontend            pod/web labeled
    mkctl label pod web tier=backend --overwrite
    mkctl label pod web tier-                    pod/web unlabeled
    mkctl label pods -l app=web tier=frontend | --all

The steps of kubectl's label.go:
1. the arguments split into resources and changes (`key=value`, `key-`); at least one
   change, never the same key both set and removed, values checked client-side;
2. the objects (builder.py; a kind alone needs -l or --all), or -f files;
3. for each object: GET it, apply the changes to its map, refuse to change a value
   without --overwrite ("'tier' already has a value (frontend), and --overwrite is
   false"), and send what changed as a JSON merge patch
   (`{"metadata":{"labels":{"tier":"backend","old":null}}}`);
4. print `kind/name labeled` ("unlabeled" when keys were only removed, "modified" when
   some were removed and others set, "not labeled" when nothing changed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from minikube_py.mkctl import builder, manifests
from minikube_py.mkctl.changes import (
    DRY_RUN_FLAG,
    OUTPUT_FLAG,
    RECURSIVE_FLAG,
    TEMPLATE_FLAG,
    OperationPrinter,
    dry_run,
    filename_flag,
)
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.discovery import APIResource
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, SELECTOR_FLAG, Flag

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class MapKind:
    """What the command edits: metadata.labels or metadata.annotations, and its words."""

    field: str  # "labels"
    noun: str  # "label"
    done: str  # "labeled"
    undone: str  # "unlabeled": the map lost keys
    unchanged: str  # "not labeled"
    field_manager: str


LABELS = MapKind("labels", "label", "labeled", "unlabeled", "not labeled", "kubectl-label")


def split_changes(inv: Invocation, kind: MapKind) -> tuple[list[str], dict[str, str], list[str]]:
    """Step 1: the resource arguments, the keys to set, the keys to remove."""
    resources, sets, removes = [], {}, []
    for arg in inv.args:
        if "=" in arg:
            key, _, value = arg.partition("=")
            if "=" in value or not key:
                raise MkctlError(f"invalid {kind.noun} spec: {arg}")
            if kind is LABELS and not _LABEL_VALUE.match(value):
                raise MkctlError(
                    f'invalid label value: "{arg}": a valid label must be an empty string or '
                    "consist of alphanumeric characters, '-', '_' or '.', and must start and "
                    "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                    "'12345', regex used for validation is "
                    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
            sets[key] = value
        elif arg.endswith("-") and len(arg) > 1 and (resources or inv.flags["filename"]):
            removes.append(arg[:-1])
        else:
            resources.append(arg)
    if not sets and not removes:
        raise MkctlError(f"at least one {kind.noun} update is required")
    if any(key in sets for key in removes):
        raise MkctlError(f"can not both modify and remove a {kind.noun} in the same command")
    return resources, sets, removes


def _objects(inv: Invocation, resources: list[str]) -> list[tuple[APIResource, str, str]]:
    """Step 2: (resource, namespace, name) of every object to change."""
    namespace, enforce = inv.namespace()
    flags = inv.flags
    if flags["filename"]:
        found = []
        errors: list[Exception] = []
        for manifest in manifests.manifests(inv, flags["filename"], flags["recursive"],
                                            namespace, enforce):
            if isinstance(manifest, MkctlError):
                errors.append(manifest)
            else:
                found.append((manifest.resource, manifest.namespace, manifest.name))
        if errors:
            raise Aggregate(errors)
        return found
    if not resources:
        raise inv.usage_error("one or more resources must be specified as <resource> <name> "
                              "or <resource>/<name>")
    listing = bool(flags["selector"] or flags["all"])
    if len(resources) == 1 and "/" not in resources[0] and not listing:
        raise MkctlError("resource(s) were provided, but no name was specified")
    selection = builder.select(inv, resources, namespace=namespace,
                               all_namespaces=flags["all-namespaces"],
                               label_selector=flags["selector"], field_selector="")
    found = []
    for request in selection.requests:
        if request.name:
            found.append((request.resource, request.namespace, request.name))
            continue
        listed = builder.fetch(inv, builder.Selection([request], False,
                                                      selection.label_selector),
                               accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
        if listed.errors:
            raise Aggregate(listed.errors)
        for info in listed.infos:
            for item in info.object.get("items") or []:
                metadata = item.get("metadata") or {}
                found.append((request.resource, metadata.get("namespace", ""),
                              metadata.get("name", "")))
    return found


def edit(inv: Invocation, kind: MapKind) -> None:
    """The whole command, for labels or annotations."""
    resources, sets, removes = split_changes(inv, kind)
    mode = dry_run(inv)
    overwrite = inv.flags["overwrite"]
    printer = OperationPrinter(inv, kind.done)
    errors: list[Exception] = []
    for resource, namespace, name in _objects(inv, resources):
        path = resource.path(namespace, name)
        try:
            current = inv.client.get_json(path)
        except StatusError as error:
            errors.append(error)
            continue
        old = dict((current.get("metadata") or {}).get(kind.field) or {})
        new = dict(old)
        refused = [f"'{key}' already has a value ({old[key]})" for key, value in sets.items()
                   if key in old and old[key] != value and not overwrite]
        if refused and kind is LABELS:
            errors.append(MkctlError(f"{refused[0]}, and --overwrite is false"))
            continue
        if refused:
            errors.append(MkctlError("--overwrite is false but found the following declared "
                                     f"annotation(s): {'; '.join(refused)}"))
            continue
        new.update(sets)
        for key in removes:
            if key in new:
                del new[key]
            elif kind is LABELS:
                inv.out.write(f'label "{key}" not found.\n')
        changed = {key: value for key, value in new.items() if old.get(key) != value}
        changed.update({key: None for key in old if key not in new})
        result = current
        if changed and mode != "client":
            params = {"fieldManager": kind.field_manager}
            if mode == "server":
                params["dryRun"] = "All"
            try:
                result = inv.client.request_json(
                    "PATCH", path, params, body={"metadata": {kind.field: changed}},
                    content_type="application/merge-patch+json")
            except StatusError as error:
                errors.append(error)
                continue
        elif mode == "client":
            result = {**current, "metadata": {**(current.get("metadata") or {}), kind.field: new}}
        printer.print_obj(result, operation=_message(kind, old, new))
    if errors:
        raise Aggregate(errors)


def _message(kind: MapKind, old: dict[str, str], new: dict[str, str]) -> str:
    """label's words: keys only removed, only added or changed, or both ("modified")."""
    if kind is not LABELS:
        return kind.done
    removed = any(key not in new for key in old)
    added = any(old.get(key) != value for key, value in new.items())
    if removed and added:
        return "modified"
    return kind.undone if removed else kind.done if added else kind.unchanged


def common_flags(kind: MapKind) -> list[Flag]:
    return [
        Flag("all", BOOL, help="Select all resources, in the namespace of the specified "
                               "resource types"),
        Flag("all-namespaces", BOOL, shorthand="A",
             help="If true, check the specified action in all namespaces."),
        DRY_RUN_FLAG,
        filename_flag(f"update the {kind.field}"),
        OUTPUT_FLAG,
        Flag("overwrite", BOOL,
             help=f"If true, allow {kind.field} to be overwritten, otherwise reject "
                  f"{kind.noun} updates that overwrite existing {kind.field}."),
        RECURSIVE_FLAG,
        SELECTOR_FLAG,
        TEMPLATE_FLAG,
    ]


def run(inv: Invocation) -> None:
    edit(inv, LABELS)


COMMAND = Command(
    name="label",
    summary="Update the labels on a resource",
    usage="label [--overwrite] (-f FILENAME | TYPE NAME) KEY_1=VAL_1 ... KEY_N=VAL_N "
          "[--resource-version=version] [options]",
    run=run,
    flags=common_flags(LABELS),
    examples="""  # Update pod 'foo' with the label 'unhealthy' and the value 'true'
  mkctl label pods foo unhealthy=true

  # Update pod 'foo' by removing a label named 'bar' if it exists
  mkctl label pods foo bar-""",
)
