"""`mkctl create`: create objects from files or from a few flags (kubectl create).

    mkctl create -f web.yaml                 every object of the file (or dir, or -)
    mkctl create -f web.yaml -o name         `deployment.apps/web` for each
    mkctl create -f web.yaml --dry-run=server
    mkctl create namespace|deployment|configmap|secret generic ...   (create_objects.py)

The steps of kubectl's create.go (RunCreate):
1. the objects of the -f files (manifests.py), each placed in its namespace;
2. each is POSTed to its collection (with --save-config, carrying the annotation apply
   reads, apply.py), `?fieldManager=kubectl-create&fieldValidation=Strict`
   (and `dryRun=All` for a server dry run; nothing is sent for a client dry run);
3. each success is printed as it happens (`configmap/settings created`);
4. the failures, one line each at the end: the server's, named after the file
   (`Error from server (AlreadyExists): error when creating "web.yaml": ...`), then
   the documents that could not be read or mapped; exit 1.
"""

from __future__ import annotations

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
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.commands.apply import annotated
from minikube_py.mkctl.commands.create_objects import SUBCOMMANDS
from minikube_py.mkctl.errors import Aggregate, MkctlError, StatusError
from minikube_py.mkctl.flags import BOOL, Flag

FIELD_MANAGER = "kubectl-create"


def run(inv: Invocation) -> None:
    if inv.args:
        raise inv.usage_error(f"Unexpected args: [{' '.join(inv.args)}]")
    if not inv.flags["filename"]:
        raise MkctlError("must specify one of -f and -k")
    mode = dry_run(inv)
    params = write_params(inv, FIELD_MANAGER)
    namespace, enforce = inv.namespace()
    printer = OperationPrinter(inv, "created")
    errors: list[Exception] = []
    document_errors: list[Exception] = []
    for manifest in manifests.manifests(inv, inv.flags["filename"], inv.flags["recursive"],
                                        namespace, enforce):
        if isinstance(manifest, MkctlError):
            document_errors.append(manifest)
            continue
        if inv.flags["save-config"]:
            manifest = manifest._replace(object=annotated(manifest.object))
        if mode == "client":
            printer.print_obj(manifest.object)
            continue
        try:
            created = inv.client.request_json(
                "POST", manifest.resource.path(manifest.namespace),
                params, body=manifest.object)
        except StatusError as error:
            errors.append(in_file(error, "creating", manifest.source))
            continue
        printer.print_obj(created)
    if errors or document_errors:
        raise Aggregate(errors + document_errors)


COMMAND = Command(
    name="create",
    summary="Create a resource from a file or from stdin",
    description="Create a resource from a file or from stdin.\n\n JSON and YAML formats are "
                "accepted.",
    usage="create -f FILENAME [options]",
    run=run,
    subcommands=SUBCOMMANDS,
    flags=[DRY_RUN_FLAG, filename_flag("create the resource"), OUTPUT_FLAG, RECURSIVE_FLAG,
           TEMPLATE_FLAG, VALIDATE_FLAG, field_manager_flag(FIELD_MANAGER),
           Flag("save-config", BOOL,
                help="If true, the configuration of current object will be saved in its "
                     "annotation. Otherwise, the annotation will be unchanged. This flag is "
                     "useful when you want to perform mkctl apply on this object in the "
                     "future.")],
    examples="""  # Create a pod using the data in pod.json
  mkctl create -f ./pod.json

  # Create a pod based on the JSON passed into stdin
  cat pod.json | mkctl create -f -""",
)
