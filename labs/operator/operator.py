"""A kopf operator for the lab's Website: each Website gets a Deployment and a Service.

    Website created   -> create the Deployment and the Service, owned by the Website,
                         and write status (phase Pending, the children's names)
    spec.replicas     -> scale the Deployment, write status.replicas
    Deployment status -> copy readyReplicas into the owner's status (phase Ready when all
                         are ready)
    Website deleted   -> delete the children; kopf holds the Website with its finalizer
                         until this handler has finished

Run it with `kopf run --standalone --namespace default labs/operator/operator.py`.
"""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "labs.minikube-py.io", "v1", "websites"
MANAGED_BY = {"app.kubernetes.io/managed-by": "website-operator"}
PORT = 8080  # the port the lab's image serves on


@kopf.on.startup()
def configure(**_: Any) -> None:
    """Log the handlers' client in with $KUBECONFIG, as kopf logs itself in."""
    kubernetes.config.load_kube_config()


def deployment(name: str, image: str, replicas: int) -> dict[str, Any]:
    """The Deployment a Website named `name` wants."""
    labels = {"app": name, **MANAGED_BY}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": image,
                                         "ports": [{"containerPort": PORT}]}]},
            },
        },
    }


def service(name: str) -> dict[str, Any]:
    """The Service in front of the Website's pods."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": {"app": name, **MANAGED_BY}},
        "spec": {"selector": {"app": name},
                 "ports": [{"port": 80, "targetPort": PORT}]},
    }


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_children(spec: kopf.Spec, name: str, namespace: str, patch: kopf.Patch,
                    logger: kopf.Logger, **_: Any) -> None:
    """Create the Deployment and the Service, each owned by the Website."""
    replicas = spec.get("replicas", 1)
    children = [deployment(name, spec["image"], replicas), service(name)]
    for child in children:
        kopf.adopt(child)  # ownerReferences to the Website, and its namespace
    creates = (kubernetes.client.AppsV1Api().create_namespaced_deployment,
               kubernetes.client.CoreV1Api().create_namespaced_service)
    for create, child in zip(creates, children, strict=True):
        try:
            create(namespace, child)
        except kubernetes.client.ApiException as error:
            if error.status != 409:  # made by an earlier try of this handler: keep it
                raise kopf.TemporaryError(f"creating {child['kind']} {name}: {error.reason}",
                                          delay=5) from error
    logger.info(f"Created Deployment {namespace}/{name} and Service {namespace}/{name}")
    patch.status["phase"] = "Pending"
    patch.status["replicas"] = replicas
    patch.status["deployment"] = name
    patch.status["service"] = name


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.replicas")
def scale(new: int | None, name: str, namespace: str, patch: kopf.Patch,
          logger: kopf.Logger, **_: Any) -> None:
    """Give the Deployment the Website's new replica count."""
    replicas = 1 if new is None else new
    kubernetes.client.AppsV1Api().patch_namespaced_deployment(
        name, namespace, {"spec": {"replicas": replicas}})
    logger.info(f"Scaled Deployment {namespace}/{name} to {replicas}")
    patch.status["replicas"] = replicas


@kopf.on.event("apps", "v1", "deployments", labels=MANAGED_BY)
def report_ready(body: kopf.Body, type: str | None, namespace: str, **_: Any) -> None:
    """Copy the Deployment's readyReplicas into its Website's status."""
    owners = [ref for ref in body.metadata.get("ownerReferences", [])
              if ref.get("kind") == "Website" and ref.get("apiVersion") == f"{GROUP}/{VERSION}"]
    if type == "DELETED" or not owners:
        return
    ready = body.status.get("readyReplicas", 0)
    wanted = body.spec.get("replicas", 1)
    status = {"readyReplicas": ready, "phase": "Ready" if ready >= wanted else "Pending"}
    try:
        kubernetes.client.CustomObjectsApi().patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, owners[0]["name"], {"status": status})
    except kubernetes.client.ApiException as error:
        if error.status != 404:  # the Website is gone: nothing to report to
            raise


@kopf.on.delete(GROUP, VERSION, PLURAL)
def delete_children(name: str, namespace: str, logger: kopf.Logger, **_: Any) -> None:
    """Delete the children (the garbage collector would too, later: this is at once)."""
    for delete in (kubernetes.client.AppsV1Api().delete_namespaced_deployment,
                   kubernetes.client.CoreV1Api().delete_namespaced_service):
        try:
            delete(name, namespace)
        except kubernetes.client.ApiException as error:
            if error.status != 404:
                raise
    logger.info(f"Deleted the children of Website {namespace}/{name}")
