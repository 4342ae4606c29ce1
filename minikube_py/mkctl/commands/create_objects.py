"""`mkctl create KIND NAME ...`: objects built from flags (kubectl's create_namespace.go,
create_deployment.go, create_configmap.go, create_secret.go).

    mkctl create namespace dev
    mkctl create deployment web --image=nginx:1.25 [--image=...] [--replicas=2] [--port=80]
    mkctl create configmap settings --from-literal=color=blue --from-file=app.conf
    mkctl create secret generic creds --from-literal=password=s3cret --from-file=key=id_rsa

Each builds the object as kubectl's generator does (its fields in the Go struct's order,
which `-o json` of a client dry run shows), sets its namespace only when -n was given,
then POSTs it with `?fieldManager=kubectl-create` and prints the operation line
(changes.py).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable

from minikube_py.api import Obj
from minikube_py.mkctl.changes import (
    DRY_RUN_FLAG,
    OUTPUT_FLAG,
    TEMPLATE_FLAG,
    VALIDATE_FLAG,
    OperationPrinter,
    dry_run,
    field_manager_flag,
    write_params,
)
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import MkctlError, StatusError
from minikube_py.mkctl.flags import ARRAY, INT, STRINGS, Flag

FIELD_MANAGER = "kubectl-create"


def _one_name(inv: Invocation) -> str:
    if len(inv.args) != 1:
        raise inv.usage_error(f"exactly one NAME is required, got {len(inv.args)}")
    return inv.args[0]


def _metadata(inv: Invocation, name: str, labels: dict[str, str] | None = None) -> Obj:
    """ObjectMeta in struct order: name, namespace (only when -n was given), labels."""
    metadata: Obj = {"name": name}
    namespace, enforced = inv.namespace()
    if enforced:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    return metadata


def _send(inv: Invocation, obj: Obj, collection: Callable[[str], str], failed: str = ""
          ) -> None:
    """Create the object (or, for a client dry run, only print it). `failed`: how the
    generator words a failure of the server ("failed to create deployment: "), if it
    rewords them."""
    printer = OperationPrinter(inv, "created")
    params = write_params(inv, FIELD_MANAGER)
    if dry_run(inv) == "client":
        printer.print_obj(obj, struct_order=True)
        return
    namespace, _ = inv.namespace()
    try:
        created = inv.client.request_json("POST", collection(namespace), params, body=obj)
    except StatusError as error:
        if not failed:
            raise
        raise MkctlError(failed + str(error)) from None
    printer.print_obj(created)


# -- namespace ----------------------------------------------------------------------------

def run_namespace(inv: Invocation) -> None:
    name = _one_name(inv)
    dry_run(inv)
    obj = {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": name}, "spec": {},
           "status": {}}
    _send(inv, obj, lambda namespace: "/api/v1/namespaces")


# -- deployment ---------------------------------------------------------------------------

def _container_names(images: list[str]) -> list[str]:
    """Each image's name without registry, tag or digest, `_` read as `-`; a name used
    twice gets a suffix, as kubectl's sanitizeAndUniquify."""
    names: list[str] = []
    for image in images:
        name = image.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0].replace("_", "-")
        if name in names:
            name = f"{name}-{os.urandom(3).hex()[:5]}"
        names.append(name)
    return names


def run_deployment(inv: Invocation) -> None:
    name = _one_name(inv)
    images = inv.flags["image"]
    if not images:
        raise MkctlError('required flag(s) "image" not set')
    port = inv.flags["port"]
    dry_run(inv)
    labels = {"app": name}
    containers = []
    for index, (image, container_name) in enumerate(zip(images, _container_names(images),
                                                         strict=True)):
        container: Obj = {"name": container_name, "image": image}
        if port >= 0 and index == 0:  # the port is the first container's
            container["ports"] = [{"containerPort": port}]
        container["resources"] = {}
        containers.append(container)
    obj = {"kind": "Deployment", "apiVersion": "apps/v1",
           "metadata": _metadata(inv, name, labels),
           "spec": {"replicas": inv.flags["replicas"],
                    "selector": {"matchLabels": dict(labels)},
                    "template": {"metadata": {"labels": dict(labels)},
                                 "spec": {"containers": containers}},
                    "strategy": {}},
           "status": {}}
    _send(inv, obj, lambda namespace: f"/apis/apps/v1/namespaces/{namespace}/deployments",
          "failed to create deployment: ")


# -- configmap and secret: data from literals and files -------------------------------------

def _data(inv: Invocation, duplicate: Callable[[str], str]) -> dict[str, bytes]:
    """The keys and values of --from-literal and --from-file, in kubectl's checks;
    `duplicate` words the error of a key given twice."""
    data: dict[str, bytes] = {}

    def add(key: str, value: bytes) -> None:
        if key in data:
            raise MkctlError(duplicate(key))
        data[key] = value

    for literal in inv.flags["from-literal"]:
        key, sep, value = literal.partition("=")
        if not sep or not key:
            raise MkctlError(f"invalid literal source {literal}, expected key=value")
        add(key, value.encode())
    for source in inv.flags["from-file"]:
        key, sep, path = source.partition("=")
        if not sep:
            key, path = "", source
        elif not key:
            raise MkctlError(f"key name for file path {path} missing")
        if os.path.isdir(path):
            if key:
                raise MkctlError("cannot give a key name for a directory path")
            for entry in sorted(os.listdir(path)):
                full = os.path.join(path, entry)
                if os.path.isfile(full):
                    add(entry, _read(full))
            continue
        add(key or os.path.basename(path), _read(path))
    return data


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise MkctlError(f"error reading {path}: "
                         f"{(error.strerror or 'error').lower()}") from None


def run_configmap(inv: Invocation) -> None:
    name = _one_name(inv)
    dry_run(inv)
    data, binary = {}, {}
    for key, value in _data(inv, lambda key: (
            f'cannot add key "{key}", another key by that name already exists in Data for '
            f'ConfigMap "{name}"')).items():
        try:
            data[key] = value.decode("utf-8")
        except UnicodeDecodeError:
            binary[key] = base64.b64encode(value).decode()
    obj: Obj = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": _metadata(inv, name)}
    if data:
        obj["data"] = data
    if binary:
        obj["binaryData"] = binary
    _send(inv, obj, lambda namespace: f"/api/v1/namespaces/{namespace}/configmaps",
          "failed to create configmap: ")


def run_secret_generic(inv: Invocation) -> None:
    name = _one_name(inv)
    dry_run(inv)
    obj: Obj = {"kind": "Secret", "apiVersion": "v1", "metadata": _metadata(inv, name)}
    data = _data(inv, lambda key: (
        f"cannot add key {key}, another key by that name already exists"))
    if data:
        obj["data"] = {key: base64.b64encode(value).decode() for key, value in data.items()}
    if inv.flags["type"]:
        obj["type"] = inv.flags["type"]
    _send(inv, obj, lambda namespace: f"/api/v1/namespaces/{namespace}/secrets",
          "failed to create secret ")  # (sic: kubectl's words, without a colon)


_COMMON = [DRY_RUN_FLAG, OUTPUT_FLAG, TEMPLATE_FLAG, VALIDATE_FLAG,
           field_manager_flag(FIELD_MANAGER)]
_FROM = [
    Flag("from-file", STRINGS,
         help="Key file can be specified using its file path, in which case file basename "
              "will be used as key, or optionally with a key and file path, in which case the "
              "given key will be used.  Specifying a directory will iterate each named file in "
              "the directory whose basename is a valid key."),
    Flag("from-literal", ARRAY,
         help="Specify a key and literal value to insert (i.e. mykey=somevalue)"),
]

SUBCOMMANDS = [
    Command("namespace", "Create a namespace with the specified name",
            usage="namespace NAME [--dry-run=server|client|none] [options]",
            aliases=("ns",), flags=_COMMON, run=run_namespace,
            examples="  # Create a new namespace named my-namespace\n"
                     "  mkctl create namespace my-namespace"),
    Command("deployment", "Create a deployment with the specified name",
            usage="deployment NAME --image=image -- [COMMAND] [args...] [options]",
            aliases=("deploy",), run=run_deployment, flags=[
                *_COMMON,
                Flag("image", STRINGS, help="Image names to run. A deployment can have "
                                            "multiple images set for multi-container pod."),
                Flag("port", INT, default=-1,
                     help="The containerPort that this deployment exposes."),
                Flag("replicas", INT, default=1, shorthand="r",
                     help="Number of replicas to create. Default is 1."),
            ],
            examples="  # Create a deployment named my-dep that runs the nginx image with 3 "
                     "replicas\n  mkctl create deployment my-dep --image=nginx --replicas=3"),
    Command("configmap", "Create a config map from a local file, directory or literal value",
            usage="configmap NAME [--from-file=[key=]source] [--from-literal=key1=value1] "
                  "[--dry-run=server|client|none] [options]",
            aliases=("cm",), flags=[*_COMMON, *_FROM], run=run_configmap,
            examples="  # Create a new config map named my-config with key1=config1 and "
                     "key2=config2\n  mkctl create configmap my-config "
                     "--from-literal=key1=config1 --from-literal=key2=config2"),
    Command("secret", "Create a secret using a specified subcommand", subcommands=[
        Command("generic", "Create a secret from a local file, directory, or literal value",
                usage="generic NAME [--type=string] [--from-file=[key=]source] "
                      "[--from-literal=key1=value1] [--dry-run=server|client|none] [options]",
                flags=[*_COMMON, *_FROM, Flag("type", help="The type of secret to create")],
                run=run_secret_generic,
                examples="  # Create a new secret named my-secret with key1=supersecret\n"
                         "  mkctl create secret generic my-secret "
                         "--from-literal=key1=supersecret"),
    ]),
]
