"""`mkctl cordon` and `mkctl uncordon`: mark nodes unschedulable, or schedulable again
(kubectl's drain.go, whose cordon helper both use).

    mkctl cordon node-1            node/node-1 cordoned
    mkctl cordon node-1            node/node-1 already cordoned
    mkctl uncordon node-1          node/node-1 uncordoned
    mkctl cordon -l pool=spare

Each node is read; one already as asked is only reported ("already cordoned"); the
others get a strategic merge patch of `spec.unschedulable` (true, or null to clear it).
"""

from __future__ import annotations

from minikube_py.mkctl import builder
from minikube_py.mkctl.changes import DRY_RUN_FLAG, dry_run
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import Aggregate, StatusError
from minikube_py.mkctl.flags import Flag


def set_unschedulable(inv: Invocation, desired: bool, command: str = "") -> list[str]:
    """Cordon (or uncordon) the nodes the arguments name; their names. `command`: the
    command to name in the usage error (drain cordons too)."""
    verb = "cordon" if desired else "uncordon"
    mode = dry_run(inv) if "dry-run" in inv.flags.values else "none"
    selector = inv.flags["selector"]
    if len(inv.args) != 1 and not (selector and not inv.args):
        raise inv.usage_error(f"USAGE: {command or verb} NODE [flags]")
    args = ["nodes", *inv.args]
    selection = builder.select(inv, args, namespace="", all_namespaces=False,
                               label_selector=selector, field_selector="")
    results = builder.fetch(inv, selection, accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
    errors: list[Exception] = list(results.errors)
    suffix = {"none": "", "client": " (dry run)", "server": " (server dry run)"}[mode]
    names: list[str] = []
    for info in results.infos:
        nodes = info.object["items"] if isinstance(info.object.get("items"), list) else [
            info.object]
        for node in nodes:
            name = (node.get("metadata") or {}).get("name", "")
            if bool((node.get("spec") or {}).get("unschedulable")) == desired:
                inv.out.write(f"node/{name} already {verb}ed{suffix}\n")
                names.append(name)
                continue
            if mode != "client":
                params = {"dryRun": "All"} if mode == "server" else {}
                try:
                    inv.client.request_json(
                        "PATCH", f"/api/v1/nodes/{name}", params,
                        body={"spec": {"unschedulable": True if desired else None}},
                        content_type="application/strategic-merge-patch+json")
                except StatusError as error:
                    errors.append(error)
                    continue
            inv.out.write(f"node/{name} {verb}ed{suffix}\n")
            names.append(name)
    if errors:
        raise Aggregate(errors)
    return names


def run(inv: Invocation) -> None:
    set_unschedulable(inv, True)


FLAGS = [
    DRY_RUN_FLAG,
    Flag("selector", shorthand="l", help="Selector (label query) to filter on"),
]

COMMAND = Command(
    name="cordon",
    summary="Mark node as unschedulable",
    usage="cordon NODE [options]",
    run=run,
    flags=FLAGS,
    examples="""  # Mark node "foo" as unschedulable
  mkctl cordon foo""",
)
