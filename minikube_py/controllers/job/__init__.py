"""The Job controller, split as upstream splits pkg/controller/job: controller.py
(informers, syncJob and manageJob), tracking.py (finalizer-based pod tracking through
status.uncountedTerminatedPods, and finishing the Job), backoff.py (the pod-failure
backoff), indexed.py (Indexed completion mode), conditions.py (Job conditions; what
CronJob and TTL-after-finished read), pods.py (how the controller reads a pod)."""

from minikube_py.controllers.job.backoff import BackoffRecord
from minikube_py.controllers.job.conditions import finished_condition, is_job_finished
from minikube_py.controllers.job.controller import JobController
from minikube_py.controllers.job.indexed import (
    JOB_COMPLETION_INDEX,
    completion_index,
    format_indexes,
    parse_indexes,
)
from minikube_py.controllers.job.pods import JOB_TRACKING_FINALIZER

__all__ = [
    "JOB_COMPLETION_INDEX",
    "JOB_TRACKING_FINALIZER",
    "BackoffRecord",
    "JobController",
    "completion_index",
    "finished_condition",
    "format_indexes",
    "is_job_finished",
    "parse_indexes",
]
