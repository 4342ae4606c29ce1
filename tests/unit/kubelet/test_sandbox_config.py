"""generatePodSandboxConfig's security context: a pod with a privileged container gets a
privileged sandbox (containerd refuses the container otherwise), any other does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikube_py.api import Obj
from minikube_py.kubelet.kuberuntime_sandbox import DNSSettings, sandbox_config


def pod(**containers: list[Obj]) -> Obj:
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"containers": [{"name": "plain", "image": "busybox"}], **containers}}


@pytest.mark.parametrize(("spec", "privileged"), [
    ({}, False),
    ({"containers": [{"name": "a", "securityContext": {"privileged": False}}]}, False),
    ({"containers": [{"name": "a"}, {"name": "b", "securityContext": {"privileged": True}}]},
     True),
    ({"initContainers": [{"name": "i", "securityContext": {"privileged": True}}]}, True),
    ({"ephemeralContainers": [{"name": "e", "securityContext": {"privileged": True}}]}, True),
])
def test_the_sandbox_is_privileged_when_a_container_is(spec: Obj, privileged: bool,
                                                       tmp_path: Path) -> None:
    config = sandbox_config(pod(**spec), 0, logs_root=tmp_path, dns=DNSSettings())
    assert config.linux.security_context.privileged is privileged
