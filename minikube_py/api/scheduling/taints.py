"""Taints and tolerations: which pods may be placed on, or stay on, a tainted node.

Upstream: `Toleration.ToleratesTaint` (k8s.io/api/core/v1/toleration.go), the helpers in
k8s.io/component-helpers/scheduling/corev1, and the NoExecute bookkeeping of the
taint-eviction controller (pkg/controller/tainteviction).

A taint is `{"key", "value", "effect"}` on `node.spec.taints`; a toleration is
`{"key", "operator", "value", "effect", "tolerationSeconds"}` on `pod.spec.tolerations`.
"""

from __future__ import annotations

from collections.abc import Iterable

from minikube_py.api import Obj


def toleration_tolerates_taint(toleration: Obj, taint: Obj) -> bool:
    """Toleration.ToleratesTaint: the effect, then the key, then the operator decide.

    An empty effect tolerates every effect; an empty key (only valid with Exists) every
    key. The operator defaults to Equal, which compares values; Exists ignores them.
    Lt and Gt compare numbers only behind the alpha TaintTolerationComparisonOperators
    feature gate, off by default in 1.37, so here they tolerate nothing.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect", ""):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key", ""):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Obj] | None, taint: Obj) -> bool:
    """TolerationsTolerateTaint: true when any one toleration tolerates the taint."""
    return any(toleration_tolerates_taint(t, taint) for t in tolerations or ())


def find_untolerated_taint(
    taints: Iterable[Obj] | None,
    tolerations: Iterable[Obj] | None,
    effects: Iterable[str] | None = None,
) -> Obj | None:
    """FindMatchingUntoleratedTaint: the first taint with one of `effects` (None: any
    effect) that no toleration tolerates, or None when the pod tolerates them all.

    The TaintToleration filter asks with effects NoSchedule and NoExecute.
    """
    wanted = None if effects is None else set(effects)
    tolerations = list(tolerations or ())
    for taint in taints or ():
        if wanted is not None and taint.get("effect") not in wanted:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def get_matching_tolerations(
    taints: Iterable[Obj] | None, tolerations: Iterable[Obj] | None
) -> tuple[bool, list[Obj]]:
    """GetMatchingTolerations: whether every taint is tolerated, and by which tolerations.

    For each taint the first toleration that tolerates it is used; the taint-eviction
    controller passes a node's NoExecute taints and a pod's tolerations, then waits
    `min_toleration_seconds(used)` before evicting the pod.
    """
    tolerations = list(tolerations or ())
    used: list[Obj] = []
    for taint in taints or ():
        match = next((t for t in tolerations if toleration_tolerates_taint(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(tolerations: Iterable[Obj] | None) -> float | None:
    """getMinTolerationTime: how long a pod may stay on a node with NoExecute taints.

    No tolerations means evict now (0). Otherwise the smallest tolerationSeconds wins,
    zero or negative meaning now; when no toleration sets it, None: tolerate forever.
    """
    tolerations = list(tolerations or ())
    if not tolerations:
        return 0.0
    seconds = [
        t["tolerationSeconds"] for t in tolerations if t.get("tolerationSeconds") is not None
    ]
    if not seconds:
        return None
    return float(max(0, min(seconds)))
