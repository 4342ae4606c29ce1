"""Lab: a custom scheduler in Python that watches pods and binds them (watch version)."""

from __future__ import annotations

import argparse
import math
import os
from datetime import UTC, datetime

from kubernetes import client, config, watch


def load_client(kubeconfig: str | None) -> client.CoreV1Api:
    """Connect like any client: in-cluster service account by default, else a kubeconfig."""
    if kubeconfig:
        config.load_kube_config(kubeconfig)
    else:
        config.load_incluster_config()
    return client.CoreV1Api()


def bind_pod(api: client.CoreV1Api, pod: client.V1Pod, node_name: str) -> None:
    """Bind: POST a Binding (pod name -> node) to the pod's namespace, as kube-scheduler does."""
    target = client.V1ObjectReference(kind="Node", name=node_name)
    meta = client.V1ObjectMeta(name=pod.metadata.name)
    body = client.V1Binding(target=target, metadata=meta)
    try:
        api.create_namespaced_binding(pod.metadata.namespace, body)
    except ValueError:
        # The pod IS bound. The API server answers 201 with a Status, not a Binding, and the
        # client then fails to read that Status as a V1Binding ("target" is missing):
        # kubernetes-client/python issues 825 and 547. Alternative: _preload_content=False.
        pass


def record_scheduled(api: client.CoreV1Api, pod: client.V1Pod, node_name: str,
                     scheduler_name: str) -> None:
    """The Event kube-scheduler writes after a binding, so `kubectl describe pod` and
    `kubectl get events` say who placed the pod: Normal, Scheduled, "Successfully
    assigned <namespace>/<pod> to <node>"."""
    now = datetime.now(UTC)
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name=f"{pod.metadata.name}."),
        involved_object=client.V1ObjectReference(
            kind="Pod", api_version="v1", namespace=pod.metadata.namespace,
            name=pod.metadata.name, uid=pod.metadata.uid),
        type="Normal", reason="Scheduled",
        message=f"Successfully assigned {pod.metadata.namespace}/{pod.metadata.name} "
                f"to {node_name}",
        source=client.V1EventSource(component=scheduler_name),
        first_timestamp=now, last_timestamp=now, count=1)
    try:
        api.create_namespaced_event(pod.metadata.namespace, event)
    except client.ApiException as e:  # the pod is bound all the same
        print(f"Event for {pod.metadata.namespace}/{pod.metadata.name} not recorded: "
              f"{e.reason}", flush=True)


def choose_node(
    api: client.CoreV1Api, pod: client.V1Pod, node_selector: str | None
) -> str | None:
    """Score: pick the node that runs the fewest pods (ties go to the first node listed)."""
    nodes = api.list_node(label_selector=node_selector).items
    if not nodes:
        return None
    pods = api.list_pod_for_all_namespaces().items
    min_cnt, pick = math.inf, nodes[0].metadata.name
    for n in nodes:
        cnt = sum(1 for p in pods if p.spec.node_name == n.metadata.name)
        if cnt < min_cnt:
            min_cnt, pick = cnt, n.metadata.name
    return pick


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler-name", default="my-scheduler")
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--node-selector", default=None,
                        help="only schedule onto nodes with these labels, e.g. env=prod")
    parser.add_argument("--max-pods", type=int, default=None,
                        help="stop after binding this many pods")
    parser.add_argument("--timeout", type=int, default=None,
                        help="stop after this many seconds (the watch's timeoutSeconds)")
    args = parser.parse_args()

    api = load_client(args.kubeconfig)

    print(f"[watch-student] scheduler starting... name={args.scheduler_name}", flush=True)
    bound = 0
    w = watch.Watch()
    options = {} if args.timeout is None else {"timeout_seconds": args.timeout}
    # Stream Pod events across all namespaces: first ADDED for every existing pod, then changes.
    for evt in w.stream(api.list_pod_for_all_namespaces, **options):
        obj = evt["object"]
        if evt["type"] not in ("ADDED", "MODIFIED") or obj is None or not hasattr(obj, "spec"):
            continue
        # Only act on Pending pods that target our schedulerName.
        if obj.spec.node_name or obj.spec.scheduler_name != args.scheduler_name:
            continue
        if obj.metadata.deletion_timestamp is not None:
            continue
        node = choose_node(api, obj, args.node_selector)
        if node is None:
            print(f"No node for {obj.metadata.namespace}/{obj.metadata.name}", flush=True)
            continue
        try:
            bind_pod(api, obj, node)
        except client.ApiException as e:
            print(f"Binding {obj.metadata.namespace}/{obj.metadata.name} failed: {e.reason}",
                  flush=True)
            continue
        print(f"Bound {obj.metadata.namespace}/{obj.metadata.name} -> {node}", flush=True)
        record_scheduled(api, obj, node, args.scheduler_name)
        bound += 1
        if args.max_pods is not None and bound >= args.max_pods:
            w.stop()


if __name__ == "__main__":
    main()
