"""`mkctl taint`: add, change or remove node taints (kubectl taint).

    mkctl taint nodes node-1 dedicated=db:NoSchedule        node/node-1 tainted
    mkctl taint nodes node-1 dedicated=web:NoSchedule --overwrite    node/node-1 modified
    mkctl taint nodes node-1 dedicated:NoSchedule-          node/node-1 untainted
    mkctl taint nodes node-1 dedicated-                     (every effect of the key)
    mkctl taint nodes -l pool=db dedicated=db:NoExecute | --all

The steps of kubectl's taint.go:
1. the arguments: `nodes` (`node/NAME` is refused, as kubectl refuses it), node names,
   then taints to add (`key[=value]:Effect`) and to remove (`key[:Effect]-`); effects
   are NoSchedule, PreferNoSchedule and NoExecute;
2. for each node: refuse to add a taint whose key and effect it has unless --overwrite;
3. the new list (reorganizeTaints): the taints added, then the node's others, less the
   ones removed (a removal that matches nothing is an error);
4. a strategic merge patch of `spec.taints` (the whole list: taints have no merge key),
   and `tainted`, `untainted`, or `modified` (with --overwrite, or added and removed).
"""

from __future__ import annotations

from typing import Any

from minikube_py.mkctl import builder
from minikube_py.mkctl.changes import DRY_RUN_FLAG, OUTPUT_FLAG, OperationPrinter, dry_run
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, SELECTOR_FLAG, Flag

Taint = dict[str, str]
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class _Unprefixed(MkctlError):
    """An error kubectl taint prints without "error: "."""

    def message(self) -> str:
        return str(self)


def _text(taint: Taint) -> str:
    """Taint.ToString: `key=value:Effect`, `key:Effect`, `key`."""
    text = taint["key"] + (f"={taint['value']}" if taint.get("value") else "")
    return text + (f":{taint['effect']}" if taint.get("effect") else "")


def _matches(a: Taint, b: Taint) -> bool:
    return a["key"] == b["key"] and a.get("effect") == b.get("effect")


def parse_taints(inv: Invocation, specs: list[str]) -> tuple[list[Taint], list[Taint]]:
    """Step 1: the taints to add and the taints to remove."""
    add: list[Taint] = []
    remove: list[Taint] = []
    for spec in specs:
        removing = spec.endswith("-")
        body = spec[:-1] if removing else spec
        key_value, sep, effect = body.partition(":")
        key, has_value, value = key_value.partition("=")
        if not key or (not removing and not sep):
            raise MkctlError(f"invalid taint spec: {spec}")
        if sep and effect not in EFFECTS:
            raise inv.usage_error(f"invalid taint effect: {effect}, unsupported taint effect")
        taint: Taint = {"key": key}
        if has_value and value:
            taint["value"] = value
        if effect:
            taint["effect"] = effect
        (remove if removing else add).append(taint)
    if not add and not remove:
        raise MkctlError("at least one taint update is required")
    return add, remove


def reorganize(node: dict[str, Any], overwrite: bool, add: list[Taint],
               remove: list[Taint]) -> tuple[str, list[Taint]]:
    """Step 3: the operation's word and the node's new taints."""
    old = list((node.get("spec") or {}).get("taints") or [])
    new = [dict(taint) for taint in add]
    for taint in old:
        if not any(_matches(taint, other) for other in new):
            new.append(taint)
    added = len(old) != len(new)
    deleted = False
    for taint in remove:
        kept = [other for other in new if not (
            other["key"] == taint["key"] and (not taint.get("effect")
                                             or other.get("effect") == taint["effect"]))]
        if len(kept) == len(new):
            raise MkctlError(f'taint "{_text(taint)}" not found')
        new, deleted = kept, True
    if (added and deleted) or overwrite:
        return "modified", new
    return ("tainted" if added else "untainted"), new


def run(inv: Invocation) -> None:
    flags = inv.flags
    if not inv.args:
        raise inv.usage_error("at least one taint update is required")
    kind, *rest = inv.args
    if "/" in kind:  # kubectl takes the whole argument for a type, and says so unprefixed
        raise _Unprefixed(f'the server doesn\'t have a resource type "{kind}"')
    names = [arg for arg in rest if "=" not in arg and ":" not in arg and not arg.endswith("-")]
    specs = [arg for arg in rest if arg not in names]
    add, remove = parse_taints(inv, specs)
    mode = dry_run(inv)
    selection = builder.select(inv, [kind, *names], namespace="", all_namespaces=False,
                               label_selector=flags["selector"], field_selector="")
    if any(request.resource.kind != "Node" for request in selection.requests):
        raise inv.usage_error("invalid resource type, only nodes are supported")
    results = builder.fetch(inv, selection, accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
    errors: list[Exception] = list(results.errors)
    printer = OperationPrinter(inv, "tainted")
    for info in results.infos:
        nodes = info.object["items"] if isinstance(info.object.get("items"), list) else [
            info.object]
        for node in nodes:
            name = (node.get("metadata") or {}).get("name", "")
            existing = (node.get("spec") or {}).get("taints") or []
            clashing = [taint["key"] for taint in add
                        if any(_matches(taint, other) for other in existing)]
            if clashing and not flags["overwrite"]:
                errors.append(MkctlError(
                    f"node {name} already has {','.join(clashing)} taint(s) with same "
                    "effect(s) and --overwrite is false"))
                continue
            try:
                operation, taints = reorganize(node, flags["overwrite"], add, remove)
            except MkctlError as error:
                errors.append(error)
                continue
            result = {**node, "spec": {**(node.get("spec") or {}), "taints": taints}}
            if mode != "client":
                params = {"fieldManager": "kubectl-taint", "fieldValidation": "Strict"}
                if mode == "server":
                    params["dryRun"] = "All"
                try:
                    result = inv.client.request_json(
                        "PATCH", f"/api/v1/nodes/{name}", params,
                        body={"spec": {"taints": taints}},
                        content_type="application/strategic-merge-patch+json")
                except StatusError as error:
                    errors.append(error)
                    continue
            printer.print_obj({"apiVersion": "v1", "kind": "Node", **result},
                              operation=operation)
    if errors:
        raise Aggregate(errors)


COMMAND = Command(
    name="taint",
    summary="Update the taints on one or more nodes",
    usage="taint NODE NAME KEY_1=VAL_1:TAINT_EFFECT_1 ... KEY_N=VAL_N:TAINT_EFFECT_N "
          "[options]",
    run=run,
    flags=[
        Flag("all", BOOL, help="Select all nodes in the cluster"),
        DRY_RUN_FLAG,
        OUTPUT_FLAG,
        Flag("overwrite", BOOL,
             help="If true, allow taints to be overwritten, otherwise reject taint updates "
                  "that overwrite existing taints."),
        SELECTOR_FLAG,
    ],
    examples="""  # Update node 'foo' with a taint with key 'dedicated' and value 'special-user' and
  # effect 'NoSchedule'; if a taint with that key and effect already exists, its value is
  # replaced as specified
  mkctl taint nodes foo dedicated=special-user:NoSchedule

  # Remove from node 'foo' the taint with key 'dedicated' and effect 'NoSchedule' if one
  # exists
  mkctl taint nodes foo dedicated:NoSchedule-""",
)
