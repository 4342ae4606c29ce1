"""PrioritySort (upstream plugins/queuesort): the default order of the scheduling queue."""

from __future__ import annotations

from minikube_py.scheduler.framework.interface import ClusterEvent, QueuedPodInfo, QueueSortPlugin
from minikube_py.scheduler.framework.runtime import pod_priority


class PrioritySort(QueueSortPlugin):
    """QueueSort: higher spec.priority first; equal priorities in the order they were queued."""

    name = "PrioritySort"

    def less(self, first: QueuedPodInfo, second: QueuedPodInfo) -> bool:
        """Less: should `first` leave the queue before `second`?"""
        first_priority, second_priority = pod_priority(first.pod), pod_priority(second.pod)
        if first_priority != second_priority:
            return first_priority > second_priority
        return first.timestamp < second.timestamp

    def events_to_register(self) -> list[ClusterEvent]:
        """None: a queue-sort plugin never rejects a pod."""
        return []
