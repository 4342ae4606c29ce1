"""Mirror pods: the API's copies of the static pods a kubelet runs from its manifests.

Upstream pkg/kubelet/pod/mirror_client.go, with the annotations of
pkg/kubelet/types/pod_update.go. A static pod comes from a file on the node
(config_file.py), so the API server knows nothing of it; once the API server answers,
the kubelet creates a *mirror pod* that shows it to kubectl and carries its status:

    name, namespace   the static pod's: <name>-<node name>, "default" when unset
    annotations       kubernetes.io/config.source  where the kubelet read it ("file")
                      kubernetes.io/config.hash    the static pod's UID, a hash of its
                                                   manifest, node name and file path
                      kubernetes.io/config.seen    when the kubelet first saw it
                      kubernetes.io/config.mirror  the mirror pod's own: the same hash
    ownerReferences   the Node, as controller: a deleted Node takes its mirror pods
                      along (the garbage collector), and NodeRestriction admission lets
                      a node create only mirror pods it owns
    spec              the static pod's, spec.nodeName already set: never scheduled

A mirror pod is only a view. The kubelet never runs it; deleting it stops nothing (the
kubelet creates it again); a mirror pod whose config.mirror hash is not its static
pod's (the manifest changed) is deleted and created anew. Its UID is the API server's,
not the static pod's: the status manager writes the static pod's status to it by its
own UID (status_manager.py).
"""

from __future__ import annotations

import copy
import logging

from minikube_py.api import Obj
from minikube_py.api.podutil import pod_key
from minikube_py.client.errors import AlreadyExists, ClientError, Conflict, NotFound
from minikube_py.client.logs import kv, log_v
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)

# pkg/kubelet/types/pod_update.go
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CONFIG_FIRST_SEEN_ANNOTATION = "kubernetes.io/config.seen"
CONFIG_HASH_ANNOTATION = "kubernetes.io/config.hash"
FILE_SOURCE = "file"  # pods from --pod-manifest-path
API_SOURCE = "api"  # pods from the API server


def _annotations(pod: Obj) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def is_static_pod(pod: Obj) -> bool:
    """IsStaticPod: the pod came from a source other than the API server."""
    source = _annotations(pod).get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != API_SOURCE


def is_mirror_pod(pod: Obj) -> bool:
    """IsMirrorPod: the API's copy of a static pod (it carries config.mirror)."""
    return CONFIG_MIRROR_ANNOTATION in _annotations(pod)


def pod_hash(pod: Obj) -> str:
    """getPodHash: the static pod's config.hash."""
    return _annotations(pod).get(CONFIG_HASH_ANNOTATION, "")


def is_mirror_pod_of(mirror: Obj, static: Obj) -> bool:
    """IsMirrorPodOf: same name and namespace, and the mirror holds the static pod's hash."""
    if pod_full_name(mirror) != pod_full_name(static):
        return False
    mirror_hash = _annotations(mirror).get(CONFIG_MIRROR_ANNOTATION)
    return mirror_hash is not None and mirror_hash == pod_hash(static)


def pod_full_name(pod: Obj) -> str:
    """GetPodFullName: `<name>_<namespace>`, what ties a static pod to its mirror pod."""
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('name', '')}_{metadata.get('namespace', '')}"


def mirror_pod_for(pod: Obj, node: Obj) -> Obj:
    """The mirror pod of a static pod: its metadata and spec, the config.mirror
    annotation, and the Node as its only owner (CreateMirrorPod's copy)."""
    metadata = {key: copy.deepcopy(value) for key, value in pod["metadata"].items()
                if key not in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences")}
    metadata["annotations"] = {**_annotations(pod), CONFIG_MIRROR_ANNOTATION: pod_hash(pod)}
    metadata["ownerReferences"] = [{
        "apiVersion": "v1", "kind": "Node", "name": node["metadata"]["name"],
        "uid": node["metadata"]["uid"], "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": copy.deepcopy(pod["spec"])}


class MirrorClient:
    """basicMirrorClient: create and delete one node's mirror pods."""

    def __init__(self, client: Client, node_name: str) -> None:
        self.pods = client.resource("pods")
        self.nodes = client.resource("nodes")
        self.node_name = node_name

    async def create_mirror_pod(self, pod: Obj) -> Obj | None:
        """CreateMirrorPod: the created mirror pod, or None when there is none to make
        yet (the Node is not registered, or is being deleted) or the API refused."""
        try:
            node = await self.nodes.get(self.node_name)
        except NotFound:
            log_v(log, 4, "No need to create a mirror pod, since failed to get node info "
                  "from the cluster", node=self.node_name)
            return None
        except ClientError as error:
            log.error("%s", kv("Failed creating a mirror pod", pod=pod_key(pod),
                               err=str(error)))
            return None
        if node["metadata"].get("deletionTimestamp"):
            log_v(log, 4, "No need to create a mirror pod, since node has been removed "
                  "from the cluster", node=self.node_name)
            return None
        log_v(log, 4, "Creating a mirror pod for static pod", pod=pod_key(pod))
        try:
            return await self.pods.create(mirror_pod_for(pod, node),
                                          pod["metadata"]["namespace"])
        except AlreadyExists:
            # the pod informer has yet to deliver it: its ADD wakes the static pod again
            log_v(log, 4, "Mirror pod exists already", pod=pod_key(pod))
            return None
        except ClientError as error:
            log.error("%s", kv("Failed creating a mirror pod", pod=pod_key(pod),
                               err=str(error)))
            return None

    async def delete_mirror_pod(self, mirror: Obj) -> bool:
        """DeleteMirrorPod: at once (grace 0) and only this one (its UID as precondition);
        False when it was gone or replaced already, or the API could not be reached."""
        metadata = mirror["metadata"]
        log_v(log, 2, "Deleting a mirror pod", pod=pod_key(mirror), podUID=metadata["uid"])
        try:
            await self.pods.delete(metadata["name"], metadata["namespace"],
                                   grace_period_seconds=0,
                                   preconditions={"uid": metadata["uid"]})
        except (NotFound, Conflict):
            return False
        except ClientError as error:
            log.error("%s", kv("Failed deleting a mirror pod", pod=pod_key(mirror),
                               err=str(error)))
            return False
        return True
