"""`mkctl scale`: set the replicas of a Deployment, ReplicaSet, StatefulSet or
ReplicationController (kubectl scale).

    mkctl scale --replicas=3 deployment/web          deployment.apps/web scaled
    mkctl scale deploy web --replicas=0 --current-replicas=3

The steps of kubectl's scale.go:
1. the objects (builder.py: TYPE NAME, TYPE/NAME, -l or --all with a kind), each read;
2. with --current-replicas, the scale subresource is read and must show that many
   ("Expected replicas to be 3, was 2");
3. a JSON merge patch `{"spec":{"replicas":N}}` to the object's `scale` subresource (a
   kind without one answers NotFound);
4. `kind.group/name scaled` for each.
"""

from __future__ import annotations

from minikube_py.mkctl import builder
from minikube_py.mkctl.changes import DRY_RUN_FLAG, OUTPUT_FLAG, OperationPrinter, dry_run
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, INT, SELECTOR_FLAG, Flag


def run(inv: Invocation) -> None:
    flags = inv.flags
    if "replicas" not in flags.changed:
        raise MkctlError('required flag(s) "replicas" not set')
    replicas = flags["replicas"]
    if replicas < 0:
        raise MkctlError("The --replicas=COUNT flag is required, and COUNT must be greater "
                         "than or equal to 0")
    mode = dry_run(inv)
    if not inv.args:
        raise inv.usage_error("You must specify the type of resource to scale")
    namespace, _ = inv.namespace()
    selection = builder.select(inv, list(inv.args), namespace=namespace,
                               all_namespaces=False,
                               label_selector=flags["selector"], field_selector="")
    results = builder.fetch(inv, selection, accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
    if results.errors:
        raise Aggregate(results.errors)
    printer = OperationPrinter(inv, "scaled")
    errors: list[Exception] = []
    for info in results.infos:
        items = info.object["items"] if isinstance(info.object.get("items"), list) else [
            info.object]
        for obj in items:
            metadata = obj.get("metadata") or {}
            path = info.request.resource.path(metadata.get("namespace", ""),
                                              metadata.get("name", "")) + "/scale"
            try:
                _scale(inv, path, replicas, mode)
            except (StatusError, MkctlError) as error:
                errors.append(error)
                continue
            printer.print_obj({"apiVersion": info.request.resource.group_version,
                               "kind": info.request.resource.kind, **obj})
    if errors:
        raise Aggregate(errors)


def _scale(inv: Invocation, path: str, replicas: int, mode: str) -> None:
    """Steps 2 and 3 for one object."""
    current = inv.flags["current-replicas"]
    if current >= 0:
        scale = inv.client.get_json(path)
        found = (scale.get("spec") or {}).get("replicas", 0)
        if found != current:
            raise MkctlError(f"Expected replicas to be {current}, was {found}")
    if mode == "client":
        return
    params = {"dryRun": "All"} if mode == "server" else {}
    inv.client.request_json("PATCH", path, params, body={"spec": {"replicas": replicas}},
                            content_type="application/merge-patch+json")


COMMAND = Command(
    name="scale",
    summary="Set a new size for a deployment, replica set, or replication controller",
    usage="scale [--resource-version=version] [--current-replicas=count] --replicas=COUNT "
          "(-f FILENAME | TYPE NAME) [options]",
    run=run,
    flags=[
        Flag("all", BOOL, help="Select all resources in the namespace of the specified "
                               "resource types"),
        Flag("current-replicas", INT, default=-1,
             help="Precondition for current size. Requires that the current size of the "
                  "resource match this value in order to scale. -1 (default) for no "
                  "condition."),
        DRY_RUN_FLAG,
        OUTPUT_FLAG,
        Flag("replicas", INT, default=0,
             help="The new desired number of replicas. Required."),
        SELECTOR_FLAG,
    ],
    examples="""  # Scale a deployment named 'foo' to 3
  mkctl scale --replicas=3 deployment/foo""",
)
