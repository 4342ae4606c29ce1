"""`mkctl exec`: run a command in a container (kubectl exec).

    mkctl exec web -- ls /                      the pod's default container
    mkctl exec -i web -c sidecar -- sh < script
    mkctl exec -it deploy/web -- sh             a pod of the Deployment, a terminal

The steps of kubectl's exec.go:
1. the arguments: the pod (POD or TYPE/NAME) before `--`, the command after it (the
   old form without `--` is refused);
2. the pod read (or chosen by a workload's selector); a finished pod is refused;
3. the container: -c (which the pod must have), else the default one ("Defaulted
   container ..." when several);
4. pods/NAME/exec streamed (remotecommand.py); the command's exit code is ours.
"""

from __future__ import annotations

from minikube_py.mkctl import pods, remotecommand
from minikube_py.mkctl.command import Command, Invocation
from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.flags import BOOL, Flag

STREAM_FLAGS = [
    Flag("container", shorthand="c",
         help="Container name. If omitted, use the kubectl.kubernetes.io/default-container "
              "annotation for selecting the container to be attached or the first container "
              "in the pod will be chosen"),
    Flag("pod-running-timeout", default="1m0s",
         help="The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at "
              "least one pod is running"),
    Flag("quiet", BOOL, shorthand="q", help="Only print output from the remote session"),
    Flag("stdin", BOOL, shorthand="i", help="Pass stdin to the container"),
    Flag("tty", BOOL, shorthand="t", help="Stdin is a TTY"),
]


def query_flags(stdin: bool, tty: bool) -> list[tuple[str, str]]:
    """The streams asked for: stdout always, stderr only without a TTY (which merges it)."""
    query = [("stdin", "true")] if stdin else []
    query.append(("stdout", "true"))
    query.append(("tty", "true") if tty else ("stderr", "true"))
    return query


def run(inv: Invocation) -> None:
    args, dash, flags = inv.args, inv.flags.dash, inv.flags
    target = args[0] if args and dash != 0 else ""
    if dash == -1 and len(args) > 1:
        raise inv.usage_error("exec [POD] [COMMAND] is not supported anymore. Use exec [POD] "
                              "-- [COMMAND] instead")
    command = args[dash:] if dash > -1 else []
    if not target:
        raise MkctlError("pod, type/name or --filename must be specified")
    if not command:
        raise MkctlError("you must specify at least one command for the container")
    namespace, _ = inv.namespace()
    pod, _ = pods.pod_for(inv, target, namespace)
    phase = (pod.get("status") or {}).get("phase", "")
    if phase in ("Succeeded", "Failed"):
        raise MkctlError("cannot exec into a container in a completed pod; current phase "
                         f"is {phase}")
    container = (pods.check_container(pod, flags["container"]) if flags["container"]
                 else pods.default_container(inv, pod, flags["quiet"]))
    tty = remotecommand.use_tty(inv, flags["stdin"], flags["tty"], flags["quiet"])
    query = [("command", word) for word in command] + [("container", container)]
    query += query_flags(flags["stdin"], tty)
    name = pod["metadata"]["name"]
    remotecommand.stream(inv, f"/api/v1/namespaces/{namespace}/pods/{name}/exec", query,
                         stdin=flags["stdin"], tty=tty)


COMMAND = Command(
    name="exec",
    summary="Execute a command in a container",
    usage="exec (POD | TYPE/NAME) [-c CONTAINER] [flags] -- COMMAND [args...] [options]",
    run=run,
    flags=STREAM_FLAGS,
    examples="""  # Get output from running 'date' in pod mypod, in its first container
  mkctl exec mypod -- date

  # Switch to raw terminal mode; sends stdin to 'bash' in ruby-container from pod mypod
  mkctl exec mypod -c ruby-container -i -t -- bash -il

  # Get output from running 'date' command from the first pod of the deployment mydeployment
  mkctl exec deploy/mydeployment -- date""",
)
