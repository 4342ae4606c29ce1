"""`mkctl attach`: attach to the standard streams of a running container (kubectl attach).

    mkctl attach web                    the output of the pod's default container
    mkctl attach -it web -c shell       its stdin too, on a terminal

The steps of kubectl's attach.go: the pod (POD or TYPE/NAME, one argument); a finished
pod is refused; the container (-c, else the default one); pods/NAME/attach streamed as
exec is (remotecommand.py), until the container ends or the command is stopped.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl import pods, remotecommand
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.commands.exec import STREAM_FLAGS, query_flags
from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.flags import Flag

RECORDED = ("All commands and output from this session will be recorded in container logs, "
            "including credentials and sensitive information passed through the command "
            "prompt.")


def _container_spec(pod: Obj, name: str) -> Obj:
    spec = pod.get("spec") or {}
    return next((c for kind in ("containers", "initContainers", "ephemeralContainers")
                 for c in spec.get(kind) or [] if c["name"] == name), {})


def run(inv: Invocation) -> None:
    flags = inv.flags
    if not inv.args:
        raise MkctlError("at least 1 argument is required for attach")
    if len(inv.args) > 2:
        raise MkctlError("expected POD, TYPE/NAME, or TYPE NAME, (at most 2 arguments) saw "
                         f"{len(inv.args)}: [{' '.join(inv.args)}]")
    namespace, _ = inv.namespace()
    target = inv.args[0] if len(inv.args) == 1 else f"{inv.args[0]}/{inv.args[1]}"
    pod, _ = pods.pod_for(inv, target, namespace)
    phase = (pod.get("status") or {}).get("phase", "")
    if phase in ("Succeeded", "Failed"):
        raise MkctlError("cannot attach a container in a completed pod; current phase is "
                         f"{phase}")
    try:
        container = (pods.check_container(pod, flags["container"]) if flags["container"]
                     else pods.default_container(inv, pod, flags["quiet"]))
    except MkctlError as error:
        raise MkctlError(f"cannot attach to the container: {error}") from None
    tty = flags["tty"]
    if tty and not _container_spec(pod, container).get("tty"):
        inv.err.write(f"error: Unable to use a TTY - container {container} did not "
                      "allocate one\n")
        tty = False
    tty = remotecommand.use_tty(inv, flags["stdin"], tty, flags["quiet"])
    if not flags["quiet"]:
        inv.err.write(RECORDED + "\nIf you don't see a command prompt, try pressing enter.\n")
    query = [("container", container), *query_flags(flags["stdin"], tty)]
    name = pod["metadata"]["name"]
    remotecommand.stream(inv, f"/api/v1/namespaces/{namespace}/pods/{name}/attach", query,
                         stdin=flags["stdin"], tty=tty)


COMMAND = Command(
    name="attach",
    summary="Attach to a running container",
    usage="attach (POD | TYPE/NAME) -c CONTAINER [options]",
    run=run,
    flags=[*STREAM_FLAGS, Flag("detach-keys", default="ctrl-p,ctrl-q",
                               help="Override the key sequence for detaching a container")],
    examples="""  # Get output from running pod mypod; the default container is attached to
  mkctl attach mypod

  # Switch to raw terminal mode; sends stdin to 'bash' in ruby-container from pod mypod
  # and sends stdout/stderr from 'bash' back to the client
  mkctl attach mypod -c ruby-container -i -t""",
)
