"""The HPA controller's small rules: conditions keep their transition time unless their
status changes (setCondition); each direction's tolerance comes from the HPA's behavior,
else from --horizontal-pod-autoscaler-tolerance (tolerancesForHpa); scale targets map to
the resources that have a scale subresource."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from minikube_py.api import Obj
from minikube_py.controllers.podautoscaler.controller import (
    milli_quantity,
    scale_resource_for,
    set_condition,
    tolerances_for,
)
from minikube_py.controllers.podautoscaler.replica_calculator import Tolerances

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_set_condition_moves_the_transition_time_only_on_a_status_change() -> None:
    hpa: Obj = {}
    set_condition(hpa, "AbleToScale", "True", "SucceededGetScale", "got it", NOW)
    later = NOW + timedelta(seconds=15)
    set_condition(hpa, "AbleToScale", "True", "SucceededRescale", "scaled", later)
    assert hpa["status"]["conditions"] == [{
        "type": "AbleToScale", "status": "True", "reason": "SucceededRescale",
        "message": "scaled", "lastTransitionTime": "2026-11-29T12:00:00Z"}]
    set_condition(hpa, "AbleToScale", "False", "FailedGetScale", "gone", later)
    assert hpa["status"]["conditions"][0]["lastTransitionTime"] == "2026-11-29T12:00:15Z"


def test_scale_targets_map_to_resources_with_a_scale_subresource() -> None:
    deployments = scale_resource_for("apps/v1", "Deployment")
    controllers = scale_resource_for("v1", "ReplicationController")
    assert deployments is not None and deployments.plural == "deployments"
    assert controllers is not None and controllers.plural == "replicationcontrollers"
    assert scale_resource_for("apps/v1", "DaemonSet") is None
    assert scale_resource_for("apps/v1", "Gadget") is None


def test_milli_quantities_print_as_go_does() -> None:
    assert [milli_quantity(v) for v in (600, 1000, 1500, 0)] == ["600m", "1", "1500m", "0"]


def test_tolerances_come_from_each_directions_behavior_else_the_flag() -> None:
    hpa: Obj = {"spec": {"behavior": {"scaleUp": {"tolerance": "50m"},
                                      "scaleDown": {"policies": []}}}}
    assert tolerances_for(hpa, 0.1) == Tolerances(scale_down=0.1, scale_up=0.05)
    assert tolerances_for({"spec": {}}, 0.2) == Tolerances(0.2, 0.2)
