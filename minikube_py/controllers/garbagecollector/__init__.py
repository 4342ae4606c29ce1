"""The garbage collector (upstream pkg/controller/garbagecollector): graph.py builds the
ownerReferences graph from informers, collector.py deletes and orphans by it."""

from minikube_py.controllers.garbagecollector.collector import GarbageCollector

__all__ = ["GarbageCollector"]
