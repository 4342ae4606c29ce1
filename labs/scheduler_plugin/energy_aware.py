"""Lab: EnergyAware, an out-of-tree Score plugin: put each pod where it adds the fewest watts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from minikube_py.api.validation import invalid, validate_qualified_name
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    PluginArgsError,
    ScorePlugin,
    Status,
    default_normalize_score,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.handle import Handle

WATTS_PER_CORE_LABEL = "energy.minikube-py.io/watts-per-core"
IDLE_WATTS_LABEL = "energy.minikube-py.io/idle-watts"
DEFAULT_WATTS_PER_CORE = 10.0


class EnergyAware(ScorePlugin):
    """Score: the watts the node would draw more with the pod on it (in milliwatts).
    NormalizeScore: reversed onto 0..100, so the most frugal node scores highest.

    The power model is the linear one usually fitted to servers' measured power curves: a
    node that is on draws its idle watts, plus `watts-per-core` for each busy core. So
    placing a pod costs

        pod cores x watts-per-core                   on a node that already runs pods
        pod cores x watts-per-core + idle watts      on an idle node: it can no longer sleep

    Cpu is counted as upstream's scoring counts it (NodeInfo.non_zero_requested): the
    requests, or 100m for a container without one; so a node is idle when it runs no
    pod. The sums include the pods assumed in earlier cycles, so a burst of pods fills a
    node that is already awake instead of waking another one.
    Nodes advertise their figures as labels:

        kubectl label node rack1-a energy.minikube-py.io/watts-per-core=4.5
        kubectl label node rack1-a energy.minikube-py.io/idle-watts=60

    A missing label, or one that is not a non-negative number, counts as
    `defaultWattsPerCore` watts per core and 0 idle watts.

    Args (pluginConfig): wattsPerCoreLabel, idleWattsLabel, defaultWattsPerCore.
    """

    name = "EnergyAware"

    def __init__(self, args: dict[str, Any] | None = None, handle: Handle | None = None
                 ) -> None:
        super().__init__(args, handle)
        self.watts_per_core_label = self.args.get("wattsPerCoreLabel", WATTS_PER_CORE_LABEL)
        self.idle_watts_label = self.args.get("idleWattsLabel", IDLE_WATTS_LABEL)
        default = self.args.get("defaultWattsPerCore", DEFAULT_WATTS_PER_CORE)
        errors = validate_args(self.watts_per_core_label, self.idle_watts_label, default)
        if errors:
            raise PluginArgsError(errors)
        self.default_watts_per_core = float(default)

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        """The pod's marginal power on this node, in milliwatts (millicores x W/core)."""
        labels = node_info.labels
        per_core = _watts(labels.get(self.watts_per_core_label))
        if per_core is None:
            per_core = self.default_watts_per_core
        milliwatts = pod.non_zero_requests.milli_cpu * per_core
        if node_info.non_zero_requested.milli_cpu == 0:
            milliwatts += 1000 * (_watts(labels.get(self.idle_watts_label)) or 0.0)
        return round(milliwatts), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: dict[str, int]
                        ) -> Status | None:
        """The hungriest node gets 0, a node needing no extra watts 100, the rest between."""
        default_normalize_score(scores, reverse=True)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        """None: a score plugin never rejects a pod, so no event needs to bring one back."""
        return []


def validate_args(watts_per_core_label: Any, idle_watts_label: Any,
                  default_watts_per_core: Any) -> list[str]:
    """The args' field errors: the labels must be label keys, the default a number >= 0."""
    errors = []
    for field, label in (("wattsPerCoreLabel", watts_per_core_label),
                         ("idleWattsLabel", idle_watts_label)):
        messages = (validate_qualified_name(label) if isinstance(label, str)
                    else ["must be a label key"])
        errors += [str(invalid(field, label, message)) for message in messages]
    if _watts(default_watts_per_core) is None:
        errors.append(str(invalid("defaultWattsPerCore", default_watts_per_core,
                                  "must be a non-negative number")))
    return errors


def _watts(value: Any) -> float | None:
    """A label value or arg as watts: a finite, non-negative number, else None."""
    if isinstance(value, bool):
        return None
    try:
        watts = float(value)
    except (TypeError, ValueError):
        return None
    return watts if math.isfinite(watts) and watts >= 0 else None
