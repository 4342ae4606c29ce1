"""The in-tree plugin registry: upstream plugin name -> class (a profile names plugins
by these names). To add your own plugin, add it here, or pass your own registry to
`Scheduler` (docs/scheduler.md shows both)."""

from __future__ import annotations

from minikube_py.scheduler.framework.interface import Plugin
from minikube_py.scheduler.plugins.default_binder import DefaultBinder
from minikube_py.scheduler.plugins.default_preemption import DefaultPreemption
from minikube_py.scheduler.plugins.image_locality import ImageLocality
from minikube_py.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from minikube_py.scheduler.plugins.node_affinity import NodeAffinity
from minikube_py.scheduler.plugins.node_name import NodeName
from minikube_py.scheduler.plugins.node_ports import NodePorts
from minikube_py.scheduler.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
)
from minikube_py.scheduler.plugins.node_resources_fit import NodeResourcesFit
from minikube_py.scheduler.plugins.node_unschedulable import NodeUnschedulable
from minikube_py.scheduler.plugins.pod_topology_spread import PodTopologySpread
from minikube_py.scheduler.plugins.priority_sort import PrioritySort
from minikube_py.scheduler.plugins.taint_toleration import TaintToleration
from minikube_py.scheduler.plugins.volume_binding import VolumeBinding

IN_TREE_PLUGINS: dict[str, type[Plugin]] = {plugin.name: plugin for plugin in (
    PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
    NodeResourcesFit, VolumeBinding, PodTopologySpread, InterPodAffinity, DefaultPreemption,
    NodeResourcesBalancedAllocation, ImageLocality, DefaultBinder,
)}
