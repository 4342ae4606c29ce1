"""A container's CRI config: command, env, mounts, resources, security, labels, log path.

Upstream `kuberuntime_container.go` generateContainerConfig (the part that only reshapes
the pod spec; fetching env sources, images and volumes happens before it is called).
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.envvars import expand, mapping_for
from minikube_py.kubelet.pod_actions import container_hash
from minikube_py.kubelet.podstate import (
    CONTAINER_HASH_ANNOTATION,
    CONTAINER_NAME_LABEL,
    INIT_CONTAINER_ANNOTATION,
    MANAGED_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    RESTART_COUNT_ANNOTATION,
    TERMINATION_GRACE_ANNOTATION,
    TERMINATION_MESSAGE_PATH_ANNOTATION,
    TERMINATION_MESSAGE_POLICY_ANNOTATION,
)
from minikube_py.kubelet.resources import ContainerResources
from minikube_py.kubelet.volumes.manager import ContainerMount

PROPAGATION = {"None": api_pb2.PROPAGATION_PRIVATE,
               "HostToContainer": api_pb2.PROPAGATION_HOST_TO_CONTAINER,
               "Bidirectional": api_pb2.PROPAGATION_BIDIRECTIONAL}
def container_log_path(container: Obj, restart_count: int) -> str:
    """Relative to the sandbox's log directory: <container>/<restart count>.log."""
    return f"{container['name']}/{restart_count}.log"


def _security_context(pod: Obj, container: Obj, target_id: str
                      ) -> api_pb2.LinuxContainerSecurityContext:
    pod_context = pod["spec"].get("securityContext") or {}
    own = container.get("securityContext") or {}
    context = api_pb2.LinuxContainerSecurityContext(
        privileged=bool(own.get("privileged")),
        readonly_rootfs=bool(own.get("readOnlyRootFilesystem")),
        no_new_privs=own.get("allowPrivilegeEscalation") is False,
        namespace_options=api_pb2.NamespaceOption(
            network=api_pb2.NODE if pod["spec"].get("hostNetwork") else api_pb2.POD,
            pid=(api_pb2.NODE if pod["spec"].get("hostPID")
                 else api_pb2.TARGET if target_id else api_pb2.CONTAINER),
            target_id=target_id,
            ipc=api_pb2.NODE if pod["spec"].get("hostIPC") else api_pb2.POD))
    user = own.get("runAsUser", pod_context.get("runAsUser"))
    if user is not None:
        context.run_as_user.value = user
    group = own.get("runAsGroup", pod_context.get("runAsGroup"))
    if group is not None:
        context.run_as_group.value = group
    context.supplemental_groups.extend(pod_context.get("supplementalGroups") or [])
    capabilities = own.get("capabilities") or {}
    if capabilities:
        context.capabilities.add_capabilities.extend(capabilities.get("add") or [])
        context.capabilities.drop_capabilities.extend(capabilities.get("drop") or [])
    return context


def container_config(pod: Obj, container: Obj, *, image: str, envs: list[tuple[str, str]],
                     mounts: list[ContainerMount], resources: ContainerResources,
                     restart_count: int, init: bool, target_id: str = ""
                     ) -> api_pb2.ContainerConfig:
    """generateContainerConfig: the CreateContainer request's config for one container.
    `target_id`: an ephemeral container's target, whose process namespace it joins."""
    meta = pod["metadata"]
    env = mapping_for(dict(envs))
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    return api_pb2.ContainerConfig(
        metadata=api_pb2.ContainerMetadata(name=container["name"], attempt=restart_count),
        image=api_pb2.ImageSpec(image=image, user_specified_image=container.get("image", "")),
        command=[expand(part, env) for part in container.get("command") or []],
        args=[expand(part, env) for part in container.get("args") or []],
        working_dir=container.get("workingDir", ""),
        envs=[api_pb2.KeyValue(key=key, value=value) for key, value in envs],
        mounts=[api_pb2.Mount(container_path=m.container_path, host_path=str(m.host_path),
                              readonly=m.readonly,
                              propagation=PROPAGATION.get(m.propagation or "None",
                                                          api_pb2.PROPAGATION_PRIVATE))
                for m in mounts],
        labels={POD_NAME_LABEL: meta["name"], POD_NAMESPACE_LABEL: meta["namespace"],
                POD_UID_LABEL: meta["uid"], CONTAINER_NAME_LABEL: container["name"],
                MANAGED_LABEL: "true"},
        annotations={
            CONTAINER_HASH_ANNOTATION: container_hash(container),
            RESTART_COUNT_ANNOTATION: str(restart_count),
            TERMINATION_MESSAGE_PATH_ANNOTATION: container.get("terminationMessagePath",
                                                               "/dev/termination-log"),
            TERMINATION_MESSAGE_POLICY_ANNOTATION: container.get("terminationMessagePolicy",
                                                                 "File"),
            TERMINATION_GRACE_ANNOTATION: str(grace),
            **({INIT_CONTAINER_ANNOTATION: "true"} if init else {}),
        },
        log_path=container_log_path(container, restart_count),
        stdin=bool(container.get("stdin")), stdin_once=bool(container.get("stdinOnce")),
        tty=bool(container.get("tty")),
        linux=api_pb2.LinuxContainerConfig(
            resources=api_pb2.LinuxContainerResources(
                cpu_period=resources.cpu_period, cpu_quota=resources.cpu_quota,
                cpu_shares=resources.cpu_shares,
                memory_limit_in_bytes=resources.memory_limit_in_bytes,
                oom_score_adj=resources.oom_score_adj),
            security_context=_security_context(pod, container, target_id)),
    )
