"""How the Job controller reads a pod: uid, phase, tracking finalizer, failed (upstream
job_controller.go's pod predicates and tracking_utils.go's hasJobTrackingFinalizer)."""

from __future__ import annotations

from minikube_py.api import Obj

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"


def uid_of(obj: Obj) -> str:
    return obj["metadata"]["uid"]


def pod_phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase", "")


def has_tracking_finalizer(pod: Obj) -> bool:
    return JOB_TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())


def only_replace_failed_pods(job: Obj) -> bool:
    """onlyReplaceFailedPods: podReplacementPolicy Failed waits for terminating pods to end."""
    spec = job["spec"]
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def is_pod_failed(pod: Obj, job: Obj) -> bool:
    """isPodFailed: phase Failed; or, unless only failed pods are replaced, being deleted
    before it succeeded (a pod deleted while running never reaches Failed)."""
    if pod_phase(pod) == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool(pod["metadata"].get("deletionTimestamp")) and pod_phase(pod) != "Succeeded"

