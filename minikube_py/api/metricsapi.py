"""The objects that make the metrics server the server of metrics.k8s.io: the APIService
v1beta1.metrics.k8s.io and the Service kube-system/metrics-server it names (and the
APIServices of the custom and external metrics APIs, which its adapter serves too). Shared by the
metrics server (metrics/publish.py writes them) and the launcher (cluster/kubeadm/
addons.py deploys them as upstream's metrics-server manifest does).
"""

from __future__ import annotations

from minikube_py.api import Obj

NAMESPACE = "kube-system"
SERVICE_NAME = "metrics-server"
API_SERVICE = {
    "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
    "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
    "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
             "service": {"namespace": NAMESPACE, "name": SERVICE_NAME, "port": 443},
             "groupPriorityMinimum": 100, "versionPriority": 100,
             "insecureSkipTLSVerify": True},
}



def _adapter_api_service(group: str, version: str) -> Obj:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"{version}.{group}", "labels": {"k8s-app": "metrics-server"}},
            "spec": {"group": group, "version": version,
                     "service": {"namespace": NAMESPACE, "name": SERVICE_NAME, "port": 443},
                     "groupPriorityMinimum": 100, "versionPriority": 100,
                     "insecureSkipTLSVerify": True}}


ADAPTER_API_SERVICES = (_adapter_api_service("custom.metrics.k8s.io", "v1beta2"),
                        _adapter_api_service("external.metrics.k8s.io", "v1beta1"))


def metrics_service() -> Obj:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SERVICE_NAME, "namespace": NAMESPACE,
                         "labels": {"k8s-app": "metrics-server"}},
            "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                "targetPort": "https"}]}}
