"""The image manager: make sure a container's image is present, per its imagePullPolicy.

Upstream `pkg/kubelet/images/image_manager.go` EnsureImageExists: Never / IfNotPresent /
Always, the events Pulling / Pulled / Failed / BackOff, and a per-image back-off after a
failed pull (ErrImagePull first, then ImagePullBackOff until the back-off expires).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from minikube_py.api import Obj
from minikube_py.cri import CRIError, RuntimeService
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.backoff import Backoff

RecordEvent = Callable[[Obj, str, str, str], None]


class ImagePullError(Exception):
    """A container cannot start for want of its image: reason is the waiting reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def go_error_text(error: CRIError) -> str:
    """How a Go gRPC client prints the error (what upstream shows users)."""
    code = "".join(part.title() for part in error.code.name.split("_"))
    return f"rpc error: code = {code} desc = {error.message}"


def pull_policy(container: Obj) -> str:
    """imagePullPolicy, defaulted as the API server does when it is missing."""
    if container.get("imagePullPolicy"):
        return container["imagePullPolicy"]
    image = container.get("image", "")
    tag = image.rsplit("/", 1)[-1]
    return "Always" if "@" not in image and (":" not in tag or tag.endswith(":latest")) \
        else "IfNotPresent"


class ImageManager:
    def __init__(self, runtime: RuntimeService, record_event: RecordEvent,
                 backoff: Backoff) -> None:
        self.runtime = runtime
        self.record_event = record_event
        self.backoff = backoff

    @staticmethod
    def backoff_key(pod: Obj, image: str) -> str:
        """Each pod backs off on its own, as upstream's <pod uid>_<image> key does."""
        return f"{pod['metadata']['uid']}_{image}"

    def remaining_backoff(self, pod: Obj, image: str) -> float:
        return self.backoff.remaining(self.backoff_key(pod, image))

    async def image_ref(self, image: str) -> str | None:
        """The image's id if the runtime has it, else None."""
        answer = await self.runtime.image_status(
            api_pb2.ImageStatusRequest(image=api_pb2.ImageSpec(image=image)))
        return answer.image.id if answer.HasField("image") and answer.image.id else None

    async def ensure_image(self, pod: Obj, container: Obj,
                           sandbox: api_pb2.PodSandboxConfig) -> str:
        """EnsureImageExists: the image ref to create the container from, or ImagePullError."""
        image = container.get("image", "")
        policy = pull_policy(container)
        present = await self.image_ref(image)
        if present and policy != "Always":
            self.record_event(pod, "Normal", "Pulled",
                              f'Container image "{image}" already present on machine')
            return present
        if policy == "Never":
            message = f'Container image "{image}" is not present with pull policy of Never'
            self.record_event(pod, "Warning", "ErrImageNeverPull", message)
            raise ImagePullError("ErrImageNeverPull", message)
        key = self.backoff_key(pod, image)
        if self.backoff.is_in_backoff(key):
            message = f'Back-off pulling image "{image}"'
            self.record_event(pod, "Normal", "BackOff", message)
            raise ImagePullError("ImagePullBackOff", message)
        self.record_event(pod, "Normal", "Pulling", f'Pulling image "{image}"')
        started = time.monotonic()
        try:
            answer = await self.runtime.pull_image(api_pb2.PullImageRequest(
                image=api_pb2.ImageSpec(image=image), sandbox_config=sandbox))
        except CRIError as error:
            self.backoff.next(key)
            text = go_error_text(error)
            self.record_event(pod, "Warning", "Failed", f'Failed to pull image "{image}": {text}')
            self.record_event(pod, "Warning", "Failed", "Error: ErrImagePull")
            raise ImagePullError("ErrImagePull", text) from error
        self.backoff.reset(key)
        took = time.monotonic() - started
        self.record_event(pod, "Normal", "Pulled",
                          f'Successfully pulled image "{image}" in {took:.3f}s')
        return answer.image_ref
