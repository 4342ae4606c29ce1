"""metrics.k8s.io/v1beta1: the resource usage `kubectl top` reads. Not served by the API
server itself: the metrics server (minikube_py/metrics) serves it behind an APIService,
and publishes these schemas in its own OpenAPI documents.

Upstream: k8s.io/metrics/pkg/apis/metrics/v1beta1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import QUANTITY_MAP, STRING, array, f, obj
from minikube_py.api.schema.meta import TIME, api_object

METRICS = "io.k8s.metrics.pkg.apis.metrics.v1beta1"

CONTAINER_METRICS = obj(
    f"{METRICS}.ContainerMetrics",
    "Resource usage of one container.",
    name=f(STRING, "Container name corresponding to the one from pod.spec.containers.",
           required=True),
    usage=f(QUANTITY_MAP, "The memory and CPU usage of the container.", required=True),
)

NODE_METRICS = api_object(
    f"{METRICS}.NodeMetrics",
    "Resource usage of a node: its CPU rate and memory working set.",
    timestamp=f(TIME, "The end of the window the usage was measured over.", required=True),
    window=f(STRING, "The length of that window, as a duration.", required=True),
    usage=f(QUANTITY_MAP, "The memory and CPU usage of the node.", required=True),
)

POD_METRICS = api_object(
    f"{METRICS}.PodMetrics",
    "Resource usage of a pod, container by container.",
    timestamp=f(TIME, "The end of the window the usage was measured over.", required=True),
    window=f(STRING, "The length of that window, as a duration.", required=True),
    containers=f(array(CONTAINER_METRICS), "Metrics of each container of the pod.",
                 required=True),
)
