"""The Priority admission plugin (cases after upstream's
plugin/pkg/admission/priority/admission_test.go, TestPodAdmission)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.errors import APIError
from minikube_py.api.resources import by_kind
from minikube_py.apiserver.auth.admission import CREATE, UPDATE, Chain
from minikube_py.apiserver.auth.admission.priority import Priority, admit_priority


def priority_class(name: str, value: int, *, default: bool = False,
                   policy: str = "PreemptLowerPriority") -> Obj:
    return {"metadata": {"name": name}, "value": value, "globalDefault": default,
            "preemptionPolicy": policy}


def pod(**spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


HIGH = priority_class("high", 1000)
POLITE = priority_class("polite", 1000, policy="Never")


@pytest.mark.parametrize(
    ("spec", "classes", "expected"),
    [
        pytest.param({}, [HIGH], (None, 0, "PreemptLowerPriority"),
                     id="no class and no default class: priority 0"),
        pytest.param({}, [HIGH, priority_class("base", 10, default=True)],
                     ("base", 10, "PreemptLowerPriority"),
                     id="the globalDefault class is given to a pod without one"),
        pytest.param({}, [priority_class("b", 20, default=True),
                          priority_class("a", 10, default=True)],
                     ("a", 10, "PreemptLowerPriority"),
                     id="of two default classes, the lower value wins"),
        pytest.param({"priorityClassName": "high"}, [HIGH], ("high", 1000, "PreemptLowerPriority"),
                     id="the named class"),
        pytest.param({"priorityClassName": "polite"}, [POLITE], ("polite", 1000, "Never"),
                     id="the class's preemptionPolicy"),
        pytest.param({"priorityClassName": "high", "priority": 1000}, [HIGH],
                     ("high", 1000, "PreemptLowerPriority"), id="an agreeing priority is fine"),
        pytest.param({"priorityClassName": "system-node-critical"}, [],
                     ("system-node-critical", 2000001000, "PreemptLowerPriority"),
                     id="the built-in system classes"),
    ],
)
def test_the_pod_gets_its_classes_priority(spec: Obj, classes: list[Obj],
                                           expected: tuple[str | None, int, str]) -> None:
    admitted = pod(**spec)
    admit_priority(admitted, classes)
    got = admitted["spec"]
    assert (got.get("priorityClassName"), got["priority"], got["preemptionPolicy"]) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"priorityClassName": "missing"},
                     "no PriorityClass with name missing was found", id="unknown class"),
        pytest.param({"priorityClassName": "high", "priority": 5},
                     "the integer value of priority (5) must not be provided in pod spec; "
                     "priority admission controller computed 1000 from the given PriorityClass "
                     "name", id="a priority that disagrees with the class"),
        pytest.param({"priority": 7},
                     "the integer value of priority (7) must not be provided in pod spec; "
                     "priority admission controller computed 0 from the given PriorityClass "
                     "name", id="a priority without a class"),
        pytest.param({"priorityClassName": "polite", "preemptionPolicy": "PreemptLowerPriority"},
                     "the string value of PreemptionPolicy (PreemptLowerPriority) must not be "
                     "provided in pod spec; priority admission controller computed Never from "
                     "the given PriorityClass name", id="a preemptionPolicy that disagrees"),
    ],
)
def test_contradicting_the_class_is_forbidden(spec: Obj, message: str) -> None:
    with pytest.raises(APIError) as refused:
        admit_priority(pod(**spec), [HIGH, POLITE])
    assert refused.value.code == 403
    assert refused.value.message == f'pods "web" is forbidden: {message}'


async def test_an_update_without_priority_keeps_the_one_resolved_at_create() -> None:
    pods = by_kind("v1", "Pod")
    assert pods is not None
    chain = Chain([Priority(lambda: [HIGH])])
    old = pod(priorityClassName="high")
    await chain.admit(chain.attributes(pods, CREATE, "ns", "web", old, None))
    assert (old["spec"]["priority"], old["spec"]["preemptionPolicy"]) == (
        1000, "PreemptLowerPriority")
    new = copy.deepcopy(old)
    del new["spec"]["priority"], new["spec"]["preemptionPolicy"]
    await chain.admit(chain.attributes(pods, UPDATE, "ns", "web", new, old))
    assert (new["spec"]["priority"], new["spec"]["preemptionPolicy"]) == (
        1000, "PreemptLowerPriority")
