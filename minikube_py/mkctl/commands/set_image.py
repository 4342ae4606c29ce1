"""`mkctl set image`: change the image of containers in a workload's pod template, or of
a pod (kubectl set image).

    mkctl set image deployment/web nginx=nginx:1.27      deployment.apps/web image updated
    mkctl set image deploy web '*=busybox:1.36'          every container
    mkctl set image pod/p app=busybox:1.36

Arguments with `=` are CONTAINER=IMAGE pairs, the others name the objects. Each object
is read; the containers (and init containers) are found by name in its pod spec (the
Pod's own, a template's, a CronJob's job template's); the change goes as one strategic
merge patch that lists the changed containers by name. An object whose images are
already as asked is left alone and prints nothing, as kubectl's empty patch does.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl import builder
from minikube_py.mkctl.changes import (
    DRY_RUN_FLAG,
    OUTPUT_FLAG,
    OperationPrinter,
    dry_run,
    field_manager_flag,
)
from minikube_py.mkctl.command import Command, Invocation, run_group
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, SELECTOR_FLAG, Flag


def pod_spec_path(kind: str) -> list[str] | None:
    """Where the pod spec is in an object of this kind (polymorphichelpers.updatePodSpec)."""
    if kind == "Pod":
        return ["spec"]
    if kind == "CronJob":
        return ["spec", "jobTemplate", "spec", "template", "spec"]
    if kind in ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job",
                "ReplicationController", "PodTemplate"):
        return ["template"] if kind == "PodTemplate" else ["spec", "template", "spec"]
    return None


def _changes(spec: Obj, images: dict[str, str]) -> tuple[dict[str, list[Obj]], set[str]]:
    """The containers whose image changes, by field, and the container names found."""
    changed: dict[str, list[Obj]] = {}
    found: set[str] = set()
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            name = container.get("name", "")
            image = images.get(name, images.get("*"))
            if image is None:
                continue
            found.add(name)
            if container.get("image") != image:
                changed.setdefault(field, []).append({"name": name, "image": image})
    return changed, found


def run(inv: Invocation) -> None:
    flags = inv.flags
    mode = dry_run(inv)
    objects = [arg for arg in inv.args if "=" not in arg]
    images: dict[str, str] = {}
    for arg in inv.args:
        if "=" in arg:
            name, _, image = arg.partition("=")
            images[name] = image
    if not objects:
        raise MkctlError("You must provide one or more resources by argument or filename.\n"
                         "Example resource specifications include:\n   '-f rsrc.yaml'\n"
                         "   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'")
    if not images:
        raise MkctlError("at least one image update is required")
    namespace, _ = inv.namespace()
    selection = builder.select(inv, objects, namespace=namespace, all_namespaces=False,
                               label_selector=flags["selector"], field_selector="")
    results = builder.fetch(inv, selection, accept="", chunk_size=builder.DEFAULT_CHUNK_SIZE)
    errors: list[Exception] = list(results.errors)
    printer = OperationPrinter(inv, "image updated")
    for resource, obj in builder.each_object(results):
        path = pod_spec_path(resource.kind)
        if path is None:
            errors.append(MkctlError(f"error: {resource.name}/{obj['metadata']['name']} "
                                     "the object is not a pod or does not have a pod "
                                     f"template: *{resource.version}.{resource.kind}"))
            continue
        spec: Obj = obj
        for key in path:
            spec = spec.get(key) or {}
        changed, found = _changes(spec, images)
        missing = [name for name in images if name != "*" and name not in found]
        if missing:
            errors.append(MkctlError(f'unable to find container named "{missing[0]}"'))
            continue
        if not changed:
            continue
        patch: Obj = changed
        for key in reversed(path):
            patch = {key: patch}
        if mode == "client":  # what would be sent: the object with the new images
            for field, containers in changed.items():
                images_of = {c["name"]: c["image"] for c in containers}
                for container in spec.get(field) or []:
                    container["image"] = images_of.get(container["name"],
                                                       container.get("image"))
        else:
            params = {"fieldManager": flags["field-manager"]}
            if mode == "server":
                params["dryRun"] = "All"
            try:
                answer = inv.client.request_json(
                    "PATCH", resource.path(obj["metadata"].get("namespace", ""),
                                           obj["metadata"]["name"]), params, body=patch,
                    content_type="application/strategic-merge-patch+json")
            except StatusError as error:
                errors.append(error)
                continue
            obj = {"apiVersion": resource.group_version, "kind": resource.kind, **answer}
        printer.print_obj(obj)
    if errors:
        raise Aggregate(errors)


IMAGE = Command(
    name="image",
    summary="Update the image of a pod template",
    usage="set image (-f FILENAME | TYPE NAME) CONTAINER_NAME_1=CONTAINER_IMAGE_1 ... "
          "CONTAINER_NAME_N=CONTAINER_IMAGE_N [options]",
    run=run,
    flags=[
        Flag("all", BOOL, help="Select all resources, in the namespace of the specified "
                               "resource types"),
        DRY_RUN_FLAG,
        field_manager_flag("kubectl-set"),
        OUTPUT_FLAG,
        SELECTOR_FLAG,
    ],
    examples="""  # Set a deployment's nginx container image to 'nginx:1.9.1'
  mkctl set image deployment/nginx nginx=nginx:1.9.1

  # Update image of all containers of deployment frontend to 'nginx:1.9.1'
  mkctl set image deployment frontend *=nginx:1.9.1""",
)

COMMAND = Command(
    name="set",
    summary="Set specific features on objects",
    description="Configure application resources.\n\n These commands help you make changes "
                "to existing application resources.",
    usage="set SUBCOMMAND [options]",
    run=lambda inv: run_group(inv, COMMAND, help_to_stderr=True),
    subcommands=[IMAGE],
)
