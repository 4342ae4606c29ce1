"""HorizontalPodAutoscaler behavior defaults, shared by the API server's defaulting and the
HPA controller (upstream's pkg/apis/autoscaling/v2/defaults.go: GenerateHPAScaleUpRules,
GenerateHPAScaleDownRules); and the label of the cluster autoscaler's nodes."""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj

NODE_GROUP_LABEL = "autoscaler.minikube-py.io/node-group"
"""The node group a node of the cluster autoscaler's belongs to: its kubelet registers
with it (the launcher's nodes: `--node-labels`), the autoscaler counts its group by it."""


def default_scale_up_rules() -> Obj:
    """The scale-up rules of an HPA without its own: the older HPA's speed (4 pods or
    double, whichever is more, every 15 s; no stabilization)."""
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def default_scale_down_rules() -> Obj:
    """The scale-down rules of an HPA without its own; the window stays unset, for the
    controller-manager's --horizontal-pod-autoscaler-downscale-stabilization."""
    return {"selectPolicy": "Max", "policies": [
        {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _fill_rules(rules: Any, defaults: Obj) -> Obj:
    """copyHPAScalingRules: the set fields of `rules` over the defaults."""
    for name in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if isinstance(rules, dict) and rules.get(name) is not None:
            defaults[name] = rules[name]
    return defaults


def generate_scale_up_rules(rules: Any) -> Obj:
    """GenerateHPAScaleUpRules: every field set, the defaults where `rules` has none."""
    return _fill_rules(rules, default_scale_up_rules())


def generate_scale_down_rules(rules: Any) -> Obj:
    """GenerateHPAScaleDownRules: the same, stabilizationWindowSeconds possibly unset."""
    return _fill_rules(rules, default_scale_down_rules())
