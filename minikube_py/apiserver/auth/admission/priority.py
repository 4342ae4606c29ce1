"""Priority (upstream plugin/pkg/admission/priority): a pod's priority from its class.

On create, spec.priority and spec.preemptionPolicy come from spec.priorityClassName, or
from the globalDefault class (which the pod is then given), or are 0 and
PreemptLowerPriority. Values the pod brings that disagree are Forbidden, as is a class
that does not exist. On update, a pod written back without them keeps the ones resolved
at create. PriorityClasses are read from the server's watch cache (upstream reads an
informer, just as eventually consistent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.admission import CREATE, UPDATE, Attributes, Plugin
from minikube_py.apiserver.registry.strategies.others import SYSTEM_PRIORITY_CLASSES

# What a pod gets without a class when no class is the globalDefault
# (scheduling.DefaultPriorityWhenNoDefaultClassExists).
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS = 0
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


class Priority(Plugin):
    name = "Priority"
    operations = frozenset((CREATE, UPDATE))
    mutating = True

    def __init__(self, priority_classes: Callable[[], Iterable[Obj]]) -> None:
        self.priority_classes = priority_classes

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.is_resource("", "pods") and attributes.operation in self.operations
                and isinstance(attributes.obj, dict))

    async def admit(self, attributes: Attributes) -> bool:
        """Admit: resolve the class on create; keep the resolved values on update."""
        pod = attributes.obj
        assert pod is not None
        if attributes.operation == CREATE:
            admit_priority(pod, self.priority_classes())
            return False  # resolved before validation, nothing to prepare again
        spec, old_spec = pod.get("spec"), (attributes.old or {}).get("spec") or {}
        if isinstance(spec, dict):
            for field in ("priority", "preemptionPolicy"):
                if spec.get(field) is None and old_spec.get(field) is not None:
                    spec[field] = old_spec[field]
        return False


def admit_priority(pod: Obj, priority_classes: Iterable[Obj]) -> None:
    """Resolve spec.priorityClassName into spec.priority and spec.preemptionPolicy."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    classes = {pc["metadata"]["name"]: pc for pc in priority_classes}
    class_name = spec.get("priorityClassName") or ""
    if class_name:
        found = classes.get(class_name) or _system_priority_class(class_name)
        if found is None:
            raise _forbidden(pod, f"no PriorityClass with name {class_name} was found")
        priority, policy = found.get("value", 0), found.get("preemptionPolicy")
    else:
        default = _global_default_class(classes.values())
        if default is None:
            priority, policy = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS, PREEMPT_LOWER_PRIORITY
        else:
            spec["priorityClassName"] = default["metadata"]["name"]
            priority, policy = default.get("value", 0), default.get("preemptionPolicy")
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise _forbidden(
            pod, f"the integer value of priority ({spec['priority']}) must not be provided in "
            f"pod spec; priority admission controller computed {priority} from the given "
            "PriorityClass name")
    spec["priority"] = priority
    if policy is None:
        return
    if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
        raise _forbidden(
            pod, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must not "
            f"be provided in pod spec; priority admission controller computed {policy} from "
            "the given PriorityClass name")
    spec["preemptionPolicy"] = policy


def _system_priority_class(name: str) -> Obj | None:
    """system-cluster-critical and system-node-critical, which upstream's API server
    creates at start (known here even before anyone created them)."""
    if name not in SYSTEM_PRIORITY_CLASSES:
        return None
    return {"value": SYSTEM_PRIORITY_CLASSES[name], "preemptionPolicy": PREEMPT_LOWER_PRIORITY}


def _global_default_class(classes: Iterable[Obj]) -> Obj | None:
    """getDefaultPriorityClass: the globalDefault class; should a race have made two, the
    one with the lowest value."""
    defaults = [pc for pc in classes if pc.get("globalDefault")]
    return min(defaults, key=lambda pc: pc.get("value", 0), default=None)


def _forbidden(pod: Obj, why: str) -> errors.APIError:
    return errors.forbidden("pods", "", (pod.get("metadata") or {}).get("name", ""), why)
