"""Container lifecycle hooks: run a postStart or preStop handler (exec, httpGet, sleep).

Upstream `pkg/kubelet/lifecycle/handlers.go` handlerRunner.Run. The caller decides what a
failure means: a failed postStart kills the container (event FailedPostStartHook), a failed
preStop is only reported (FailedPreStopHook) before the container is stopped anyway. Upstream
keeps the detailed message returned here out of those events, which only say
"PostStartHook failed" / "PreStopHook failed", so that a secret in a command line or output
does not leak through the API.

Unlike a probe, a hook has no timeout of its own (the caller bounds preStop by the grace
period) and an httpGet hook fails only when no answer comes back: any status code counts
as delivered. Upstream's retry of an https hook over plain http is not reproduced.
"""

from __future__ import annotations

import asyncio
import json

from minikube_py.api import Obj
from minikube_py.kubelet.prober import ExecSync, HTTPGetError, http_get, http_request, pod_name

NO_TIMEOUT = 0.0  # CRI ExecSync's "no timeout"


async def run_lifecycle_handler(handler: Obj, pod: Obj, container: Obj, container_id: str, *,
                                pod_ip: str, exec_sync: ExecSync) -> str | None:
    """handlerRunner.Run: None when the hook succeeded, else upstream's failure message."""
    where = (f"for Container {json.dumps(container.get('name', ''))} "
             f"in Pod {json.dumps(pod_name(pod))}")
    if "exec" in handler:
        command = list((handler["exec"] or {}).get("command") or [])
        error, output = await _run_exec(exec_sync, container_id, command)
        if error is None:
            return None
        return (f"Exec lifecycle hook ({go_list(command)}) {where} failed - error: {error}, "
                f"message: {json.dumps(output)}")
    if "httpGet" in handler:
        action = handler["httpGet"]
        error = await _run_http(action, container, pod_ip)
        if error is None:
            return None
        return f"HTTP lifecycle hook ({action.get('path', '')}) {where} failed - error: {error}"
    if "sleep" in handler:
        await asyncio.sleep(float((handler["sleep"] or {}).get("seconds", 0)))
        return None
    return f"Cannot run handler: invalid handler: {json.dumps(handler)}"


async def _run_exec(exec_sync: ExecSync, container_id: str,
                    command: list[str]) -> tuple[str | None, str]:
    """RunInContainer: (error text or None, combined output)."""
    try:
        exit_code, output = await exec_sync(container_id, command, NO_TIMEOUT)
    except TimeoutError:
        return f"command {json.dumps(' '.join(command))} timed out", ""
    except Exception as error:  # the runtime could not run it
        return str(error), ""
    if exit_code != 0:
        return f"command '{' '.join(command)}' exited with {exit_code}: {output}", output
    return None, output


async def _run_http(action: Obj, container: Obj, pod_ip: str) -> str | None:
    """runHTTPHandler: GET the hook's URL (host defaults to the pod IP); an error text if
    no response came back."""
    if not action.get("host") and not pod_ip:
        return "failed to find networking container: the pod has no IP"
    try:
        request = http_request(action, container, pod_ip, purpose="lifecycle")
        await http_get(request, timeout=None)
    except (ValueError, HTTPGetError) as error:
        return str(error)
    return None


def go_list(items: list[str]) -> str:
    """A string slice as Go's %v prints it: [sh -c exit 1]."""
    return "[" + " ".join(items) + "]"
