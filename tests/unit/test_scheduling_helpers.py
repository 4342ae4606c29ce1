"""Taints, tolerations and node affinity decide placement as upstream's component-helpers."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.scheduling.nodeaffinity import (
    node_field_requirement_matches,
    node_selector_matches,
    node_selector_requirement_matches,
    node_selector_term_matches,
    pod_matches_node_selector_and_affinity,
    preferred_node_affinity_score,
)
from minikube_py.api.scheduling.taints import (
    find_untolerated_taint,
    get_matching_tolerations,
    min_toleration_seconds,
    toleration_tolerates_taint,
    tolerations_tolerate_taint,
)


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> Obj:
    return {"key": key, "value": value, "effect": effect}


def toleration(
    key: str = "", operator: str = "", value: str = "", effect: str = "", **more: Any
) -> Obj:
    return {"key": key, "operator": operator, "value": value, "effect": effect, **more}


# --- tolerations ------------------------------------------------------------------------


# Cases from upstream TestTolerationToleratesTaint, plus the defaults.
@pytest.mark.parametrize(
    ("tol", "taint_", "tolerated"),
    [
        (toleration("foo", "Exists", effect="NoSchedule"), taint("foo"), True),
        (toleration("foo", "Exists", effect="NoSchedule"), taint("foo", value="bar"), True),
        (toleration("", "Exists", effect="NoSchedule"), taint("foo", value="bar"), True),
        (toleration("foo", "Equal", "bar", "NoSchedule"), taint("foo", value="bar"), True),
        (toleration("foo", "Equal", "value1", "NoSchedule"), taint("foo", value="value2"), False),
        (toleration("foo", "Equal", "bar", "NoSchedule"),
         taint("foo", "NoExecute", value="bar"), False),
        # An empty effect tolerates every effect; an empty operator means Equal.
        (toleration("foo", "Equal", "bar"), taint("foo", "NoExecute", value="bar"), True),
        (toleration("foo", value="bar"), taint("foo", value="bar"), True),
        (toleration("foo", value="bar"), taint("foo", value="baz"), False),
        (toleration(operator="Exists"), taint("anything", "NoExecute", value="x"), True),
        (toleration("other", "Exists"), taint("foo"), False),
        # Lt/Gt sit behind the alpha TaintTolerationComparisonOperators gate (off).
        (toleration("node.kubernetes.io/sla", "Gt", "750"),
         taint("node.kubernetes.io/sla", value="950"), False),
        (toleration("node.kubernetes.io/sla", "Lt", "950"),
         taint("node.kubernetes.io/sla", value="800"), False),
        (toleration("foo", "Bogus", "bar"), taint("foo", value="bar"), False),
    ],
)
def test_toleration_tolerates_taint_as_upstream(tol: Obj, taint_: Obj, tolerated: bool) -> None:
    assert toleration_tolerates_taint(tol, taint_) is tolerated


def test_any_one_toleration_is_enough() -> None:
    tolerations = [toleration("a", "Exists"), toleration("b", "Exists")]
    assert tolerations_tolerate_taint(tolerations, taint("b"))
    assert not tolerations_tolerate_taint(tolerations, taint("c"))
    assert not tolerations_tolerate_taint(None, taint("c"))


SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")  # what the TaintToleration filter checks


@pytest.mark.parametrize(
    ("taints", "tolerations", "effects", "untolerated"),
    [
        ([], [], SCHEDULING_EFFECTS, None),
        (None, None, None, None),
        ([taint("a")], [], SCHEDULING_EFFECTS, taint("a")),
        ([taint("a", "PreferNoSchedule")], [], SCHEDULING_EFFECTS, None),
        ([taint("a", "PreferNoSchedule")], [], None, taint("a", "PreferNoSchedule")),
        ([taint("a"), taint("b", "NoExecute")], [toleration("a", "Exists")], SCHEDULING_EFFECTS,
         taint("b", "NoExecute")),
        ([taint("a"), taint("b")], [], SCHEDULING_EFFECTS, taint("a")),  # the first one
        ([taint("a"), taint("b")], [toleration(operator="Exists")], SCHEDULING_EFFECTS, None),
        ([taint("a", "NoExecute")], [toleration("a", "Exists", effect="NoSchedule")],
         ["NoExecute"], taint("a", "NoExecute")),
    ],
)
def test_find_untolerated_taint_returns_the_first_filtered_taint_nobody_tolerates(
    taints: list[Obj] | None,
    tolerations: list[Obj] | None,
    effects: tuple[str, ...] | None,
    untolerated: Obj | None,
) -> None:
    assert find_untolerated_taint(taints, tolerations, effects) == untolerated


NOT_READY = toleration("node.kubernetes.io/not-ready", "Exists", effect="NoExecute",
                       tolerationSeconds=300)
UNREACHABLE = toleration("node.kubernetes.io/unreachable", "Exists", effect="NoExecute",
                         tolerationSeconds=300)
EVERYTHING = toleration(operator="Exists")


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [
        ([], [NOT_READY], (True, [])),
        ([taint("node.kubernetes.io/not-ready", "NoExecute")], [], (False, [])),
        ([taint("node.kubernetes.io/not-ready", "NoExecute")], [UNREACHABLE, NOT_READY],
         (True, [NOT_READY])),
        ([taint("node.kubernetes.io/not-ready", "NoExecute"),
          taint("node.kubernetes.io/unreachable", "NoExecute")],
         [NOT_READY, UNREACHABLE, EVERYTHING], (True, [NOT_READY, UNREACHABLE])),
        ([taint("node.kubernetes.io/not-ready", "NoExecute"), taint("other", "NoExecute")],
         [NOT_READY], (False, [])),
    ],
)
def test_get_matching_tolerations_lists_the_toleration_used_for_each_taint(
    taints: list[Obj], tolerations: list[Obj], expected: tuple[bool, list[Obj]]
) -> None:
    assert get_matching_tolerations(taints, tolerations) == expected


# Cases from upstream TestGetMinTolerationTime (taint-eviction controller), plus <= 0.
@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        ([], 0.0),  # no tolerations: evict now
        ([None], None),  # tolerated forever
        ([1, 2], 1.0),
        ([1, None], 1.0),
        ([None, 1], 1.0),
        ([300, 0], 0.0),
        ([300, -5], 0.0),
    ],
)
def test_min_toleration_seconds_as_the_taint_eviction_controller(
    seconds: list[int | None], expected: float | None
) -> None:
    tolerations = [toleration(operator="Exists", tolerationSeconds=s) for s in seconds]
    assert min_toleration_seconds(tolerations) == expected


# --- node affinity ----------------------------------------------------------------------


def node(name: str = "", labels: dict[str, str] | None = None) -> Obj:
    return {"metadata": {"name": name, "labels": labels or {}}}


def req(key: str, operator: str, *values: str) -> Obj:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("requirement", "labels", "matches"),
    [
        (req("foo", "In", "bar", "baz"), {"foo": "baz"}, True),
        (req("foo", "In", "bar"), {"foo": "qux"}, False),
        (req("foo", "In", "bar"), {}, False),
        (req("mem-type", "NotIn", "DDR", "DDR2"), {"mem-type": "DDR3"}, True),
        (req("mem-type", "NotIn", "DDR", "DDR2"), {}, True),
        (req("mem-type", "NotIn", "DDR"), {"mem-type": "DDR"}, False),
        (req("GPU", "Exists"), {"GPU": "NVIDIA-GRID-K1"}, True),
        (req("GPU", "Exists"), {}, False),
        (req("GPU", "DoesNotExist"), {}, True),
        (req("GPU", "DoesNotExist"), {"GPU": ""}, False),
        (req("kernel-version", "Gt", "0204"), {"kernel-version": "0206"}, True),
        (req("kernel-version", "Gt", "0206"), {"kernel-version": "0206"}, False),
        (req("cores", "Lt", "8"), {"cores": "4"}, True),
        (req("cores", "Lt", "8"), {"cores": "four"}, False),  # not an int64
        (req("cores", "Lt", "8"), {}, False),
        # Requirements that do not parse match nothing.
        (req("cores", "Gt", "eight"), {"cores": "9"}, False),
        (req("cores", "Gt", "1", "2"), {"cores": "9"}, False),
        (req("foo", "In"), {"foo": ""}, False),
        (req("GPU", "Exists", "x"), {"GPU": "x"}, False),
        (req("invalid key", "In", "x"), {"invalid key": "x"}, False),
        (req("foo", "NotIn", "invalid value: ___@#$%^"), {"foo": "bar"}, False),
        (req("foo", "Equals", "bar"), {"foo": "bar"}, False),
    ],
)
def test_node_selector_requirement_matches_labels(
    requirement: Obj, labels: dict[str, str], matches: bool
) -> None:
    assert node_selector_requirement_matches(requirement, labels) is matches


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        (req("metadata.name", "In", "node-1"), True),
        (req("metadata.name", "In", "node-2"), False),
        (req("metadata.name", "NotIn", "node-2"), True),
        (req("metadata.name", "NotIn", "node-1"), False),
        (req("metadata.name", "In", "node-1", "node-2"), False),  # must have one element
        (req("metadata.name", "Exists"), False),
        (req("metadata.uid", "In", "x"), False),  # an unknown field reads as ""
    ],
)
def test_node_field_requirement_matches_only_the_node_name(requirement: Obj, matches: bool) -> None:
    assert node_field_requirement_matches(requirement, {"metadata.name": "node-1"}) is matches


def test_a_term_ands_expressions_and_fields_and_an_empty_term_matches_nothing() -> None:
    host = node("host_1", {"label_1": "label_1_val"})
    by_label = [req("label_1", "In", "label_1_val")]
    by_name = [req("metadata.name", "In", "host_1")]
    assert node_selector_term_matches({"matchExpressions": by_label, "matchFields": by_name}, host)
    assert not node_selector_term_matches(
        {"matchExpressions": by_label, "matchFields": by_name}, node("host_1")
    )
    assert not node_selector_term_matches({}, host)
    assert not node_selector_term_matches({"matchExpressions": [], "matchFields": []}, host)


# Cases from upstream TestNodeSelectorMatch.
@pytest.mark.parametrize(
    ("terms", "host", "matches"),
    [
        (None, node("host_1"), False),
        ([], node("host_1"), False),
        ([{"matchExpressions": [req("label_1", "In", "label_1_val")],
           "matchFields": [req("metadata.name", "In", "host_1")]}], node("host_1"), False),
        ([{"matchExpressions": [req("label_1", "In", "label_1_val")],
           "matchFields": [req("metadata.name", "In", "host_1")]}],
         node("host_1", {"label_1": "label_1_val"}), True),
        ([{"matchExpressions": [req("label_1", "In", "label_1_val")]},
          {"matchFields": [req("metadata.name", "In", "host_1")]}], node("host_1"), True),
        # A term that does not parse fails alone; the other terms still count.
        ([{"matchFields": [req("metadata.name", "In", "host_1", "host_2")]},
          {"matchExpressions": [req("invalid key", "In", "label_value")]},
          {"matchExpressions": [req("zone", "Exists")]}], node("host_1", {"zone": "a"}), True),
    ],
)
def test_node_selector_ors_its_terms(terms: list[Obj] | None, host: Obj, matches: bool) -> None:
    selector = {} if terms is None else {"nodeSelectorTerms": terms}
    assert node_selector_matches(selector, host) is matches


def required(*terms: Obj) -> Obj:
    selector = {"nodeSelectorTerms": list(terms)}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}


def pod(node_selector: dict[str, str] | None = None, affinity: Obj | None = None) -> Obj:
    spec: Obj = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return {"spec": spec}


# Cases from upstream TestPodMatchesNodeSelectorAndAffinityTerms.
@pytest.mark.parametrize(
    ("the_pod", "labels", "node_name", "matches"),
    [
        (pod(), {}, "", True),
        (pod({"foo": "bar"}), {}, "", False),
        (pod({"foo": "bar"}), {"foo": "bar"}, "", True),
        (pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "", True),
        (pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "", False),
        (pod({"foo": ""}), {}, "", False),
        (pod(affinity=required({"matchExpressions": [req("foo", "In", "bar", "value2")]})),
         {"foo": "bar"}, "", True),
        (pod(affinity=required({"matchExpressions": [req("kernel-version", "Gt", "0204")]})),
         {"kernel-version": "0206"}, "", True),
        (pod(affinity=required({"matchExpressions": [req("foo", "In", "value1", "value2")]})),
         {"foo": "bar"}, "", False),
        (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}),
         {"foo": "bar"}, "", False),  # no terms at all
        (pod(affinity=required()), {"foo": "bar"}, "", False),  # an empty list of terms
        (pod(affinity=required({"matchExpressions": []})), {"foo": "bar"}, "", False),
        (pod(affinity={"nodeAffinity": {}}), {"foo": "bar"}, "", True),
        (pod(affinity=required({"matchExpressions": [req("GPU", "Exists"),
                                                     req("GPU", "NotIn", "AMD", "INTER")]})),
         {"GPU": "NVIDIA-GRID-K1"}, "", True),
        (pod(affinity=required({"matchExpressions": [req("GPU", "Exists"),
                                                     req("GPU", "In", "AMD", "INTER")]})),
         {"GPU": "NVIDIA-GRID-K1"}, "", False),
        (pod(affinity=required({"matchExpressions": [req("foo", "In", "bar", "value2")]},
                               {"matchExpressions": [req("diffkey", "In", "wrong")]})),
         {"foo": "bar"}, "", True),
        (pod({"foo": "bar"}, required({"matchExpressions": [req("foo", "Exists")]})),
         {"foo": "bar"}, "", True),
        (pod({"foo": "bar"}, required({"matchExpressions": [req("foo", "Exists")]})),
         {"foo": "barrrrrr"}, "", False),
        (pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")]})),
         {}, "node_1", True),
        (pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")]})),
         {}, "node_2", False),
        (pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")]},
                               {"matchExpressions": [req("foo", "In", "bar")]})),
         {"foo": "bar"}, "node_2", True),
        (pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")],
                                "matchExpressions": [req("foo", "In", "bar")]})),
         {"foo": "bar"}, "node_2", False),
        (pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")],
                                "matchExpressions": [req("foo", "In", "bar")]})),
         {"foo": "bar"}, "node_1", True),
    ],
)
def test_pod_matches_node_selector_and_required_affinity(
    the_pod: Obj, labels: dict[str, str], node_name: str, matches: bool
) -> None:
    assert pod_matches_node_selector_and_affinity(the_pod, node(node_name, labels)) is matches


def preferred(*weighted: tuple[int, Obj]) -> Obj:
    terms = [{"weight": weight, "preference": preference} for weight, preference in weighted]
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}
    return pod(affinity=affinity)


# Cases from upstream TestPreferredSchedulingTermsScore.
@pytest.mark.parametrize(
    ("the_pod", "score"),
    [
        (pod(), 0),
        (preferred(
            (5, {"matchFields": [req("metadata.name", "In", "host_1")]}),
            (7, {"matchExpressions": [req("unknown_label", "In", "unknown_label_val")]}),
            (11, {"matchExpressions": [req("label_1", "In", "label_1_val")]}),
        ), 16),
        (preferred((0, {"matchFields": [req("metadata.name", "In", "host_1")]})), 0),
        (preferred((3, {})), 0),  # an empty preference matches nothing
    ],
)
def test_preferred_node_affinity_score_sums_matching_weights(the_pod: Obj, score: int) -> None:
    host = node("host_1", {"label_1": "label_1_val"})
    assert preferred_node_affinity_score(the_pod, host) == score
