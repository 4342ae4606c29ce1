"""Strategies of apps/v1: Deployment, ReplicaSet, StatefulSet, DaemonSet.

Each owns pods through a pod template and a label selector. The selector is required,
must select the template's labels, and (in apps/v1) never changes after creation.
Defaults and rules follow upstream pkg/apis/apps/v1/defaults.go and apps validation.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, defaulted_dict, set_default, set_default_if_zero
from minikube_py.api.poddefaults import set_pod_spec_defaults
from minikube_py.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_annotations,
    validate_dns1123_label,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
)
from minikube_py.apiserver.registry.strategies.base import (
    KindStrategy,
    NoGenerationStrategy,
    bump_generation_if_metadata_changed,
)
from minikube_py.apiserver.registry.strategies.fields import (
    SELECTOR_MISMATCH,
    child,
    forbid_template_deadline,
    int_or_percent_value,
    selector_is_empty,
    semantic,
    template_labels_match,
    validate_positive_int_or_percent,
    validate_workload_selector,
)
from minikube_py.apiserver.registry.strategies.podspec_validation import validate_pod_template

DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
DAEMONSET_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
REPLICA_COUNTS = ("replicas", "readyReplicas", "availableReplicas", "updatedReplicas")


def set_template_defaults(spec: Obj) -> None:
    """The pod template of a workload is defaulted like a pod spec."""
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        pod_spec = template.setdefault("spec", {})
        if isinstance(pod_spec, dict):
            set_pod_spec_defaults(pod_spec)


def _rolling_update_to_default(spec: Obj, strategy_field: str) -> Obj | None:
    """Default the update strategy's type to RollingUpdate; then its rollingUpdate to default.

    The strategy is spec.strategy for Deployments, spec.updateStrategy for StatefulSets and
    DaemonSets. Returns None when the type is another one (nothing more to default).
    """
    strategy = defaulted_dict(spec, strategy_field)
    set_default_if_zero(strategy, "type", "RollingUpdate")
    if strategy["type"] != "RollingUpdate":
        return None
    return defaulted_dict(strategy, "rollingUpdate")


def validate_template_for_controller(spec: Obj, path: str, kind: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet: selector matches, restartPolicy Always.

    When the selector does not even parse, the template is not looked at.
    """
    template = as_dict(spec.get("template"))
    template_path = child(path, "template")
    matches = template_labels_match(spec.get("selector"), template)
    if matches is None:
        return [invalid(child(path, "selector"), spec.get("selector"), "invalid label selector")]
    errors: list[FieldError] = []
    if not matches:
        labels = as_dict(template.get("metadata")).get("labels")
        errors.append(
            invalid(child(template_path, "metadata", "labels"), labels, SELECTOR_MISMATCH)
        )
    errors += validate_pod_template(template, template_path)
    errors += _restart_policy_always(template, template_path)
    return errors + forbid_template_deadline(template, template_path, kind)


def _restart_policy_always(template: Obj, path: str) -> list[FieldError]:
    policy = as_dict(template.get("spec")).get("restartPolicy")
    if policy != "Always":
        return [not_supported(child(path, "spec", "restartPolicy"), policy, ["Always"])]
    return []


def _nonnegative_fields(obj: Obj, fields: tuple[str, ...], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for field in fields:
        if obj.get(field) is not None:
            errors += validate_nonnegative(obj[field], child(path, field))
    return errors


def _immutable_selector(new: Obj, old: Obj) -> list[FieldError]:
    """apps/v1 forbids changing the selector (older API versions allowed it)."""
    return validate_immutable(
        as_dict(new.get("spec")).get("selector"),
        as_dict(old.get("spec")).get("selector"),
        "spec.selector",
    )


def validate_replica_status(status: Obj, counts: tuple[str, ...]) -> list[FieldError]:
    """The replica counters of a workload's status: non-negative, within status.replicas."""
    errors = _nonnegative_fields(
        status, (*counts, "observedGeneration", "collisionCount"), "status"
    )
    replicas = status.get("replicas", 0)
    for field in counts[1:]:
        value = status.get(field, 0)
        if isinstance(value, int) and isinstance(replicas, int) and value > replicas:
            errors.append(
                invalid(f"status.{field}", value, "cannot be greater than status.replicas")
            )
    ready, available = status.get("readyReplicas", 0), status.get("availableReplicas", 0)
    if isinstance(ready, int) and isinstance(available, int) and available > ready:
        errors.append(
            invalid("status.availableReplicas", available, "cannot be greater than readyReplicas")
        )
    return errors


def _collision_count_not_decremented(new: Obj, old: Obj) -> list[FieldError]:
    count = as_dict(new.get("status")).get("collisionCount")
    old_count = as_dict(old.get("status")).get("collisionCount")
    if isinstance(old_count, int) and (not isinstance(count, int) or count < old_count):
        return [invalid("status.collisionCount", count or 0, "cannot be decremented")]
    return []


# --- Deployment --------------------------------------------------------------------------


class DeploymentStrategy(KindStrategy):
    """Deployments: declarative rollouts of ReplicaSets."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Annotations bump the generation too: they are copied to the ReplicaSets."""
        super().prepare_for_update(new, old)
        bump_generation_if_metadata_changed(new, old, "annotations")

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """A /status write keeps the annotations it carries (upstream resets only spec and
        labels): the controller records `deployment.kubernetes.io/revision` this way,
        without bumping the generation as a spec update would."""
        annotations = as_dict(new.get("metadata")).get("annotations")
        super().prepare_for_status_update(new, old)
        if annotations is None:
            new["metadata"].pop("annotations", None)
        else:
            new["metadata"]["annotations"] = annotations

    def default(self, obj: Obj) -> None:
        """SetDefaults_Deployment."""
        spec = defaulted_dict(obj, "spec")
        set_default(spec, "replicas", 1)
        rolling = _rolling_update_to_default(spec, "strategy")
        if rolling is not None:
            set_default(rolling, "maxUnavailable", "25%")
            set_default(rolling, "maxSurge", "25%")
        set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
        set_default(spec, "progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE_SECONDS)
        set_template_defaults(spec)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateDeploymentSpec."""
        spec = as_dict(obj.get("spec"))
        errors = _nonnegative_fields(spec, ("replicas",), "spec")
        errors += validate_workload_selector(spec, "spec", "deployment")
        errors += validate_template_for_controller(spec, "spec", "ReplicaSet")
        errors += _validate_deployment_strategy(as_dict(spec.get("strategy")), "spec.strategy")
        errors += _nonnegative_fields(
            spec, ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"), "spec"
        )
        deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds", 0)
        if isinstance(deadline, int) and isinstance(min_ready, int) and deadline <= min_ready:
            errors.append(
                invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self.validate(new) + _immutable_selector(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateDeploymentStatus (and the annotations a status write may change)."""
        status = as_dict(new.get("status"))
        errors = validate_annotations(as_dict(new["metadata"].get("annotations")),
                                      "metadata.annotations")
        errors += validate_replica_status(status, REPLICA_COUNTS)
        errors += _nonnegative_fields(status, ("unavailableReplicas",), "status")
        return errors + _collision_count_not_decremented(new, old)


def _validate_deployment_strategy(strategy: Obj, path: str) -> list[FieldError]:
    """ValidateDeploymentStrategy."""
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [
                forbidden(
                    child(path, "rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            ]
        return []
    if kind == "RollingUpdate":
        if rolling is None:
            return [
                required(child(path, "rollingUpdate"), "this should be defaulted and never be nil")
            ]
        return _validate_rolling_update_deployment(as_dict(rolling), child(path, "rollingUpdate"))
    return [not_supported(path, strategy, ["Recreate", "RollingUpdate"])]


def _validate_rolling_update_deployment(rolling: Obj, path: str) -> list[FieldError]:
    """ValidateRollingUpdateDeployment: maxSurge and maxUnavailable are not both 0."""
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    unavailable_path = child(path, "maxUnavailable")
    errors = validate_positive_int_or_percent(unavailable, unavailable_path)
    errors += validate_positive_int_or_percent(surge, child(path, "maxSurge"))
    if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
        errors.append(invalid(unavailable_path, unavailable, "may not be 0 when `maxSurge` is 0"))
    return errors


# --- ReplicaSet --------------------------------------------------------------------------


class ReplicaSetStrategy(KindStrategy):
    """ReplicaSets: keep N copies of a pod template running."""

    def default(self, obj: Obj) -> None:
        spec = defaulted_dict(obj, "spec")
        set_default(spec, "replicas", 1)
        set_template_defaults(spec)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateReplicaSetSpec (its empty-selector message says "deployment" upstream too)."""
        spec = as_dict(obj.get("spec"))
        errors = _nonnegative_fields(spec, ("replicas", "minReadySeconds"), "spec")
        errors += validate_workload_selector(spec, "spec", "deployment")
        return errors + validate_template_for_controller(spec, "spec", "ReplicaSet")

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self.validate(new) + _immutable_selector(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateReplicaSetStatus."""
        status = as_dict(new.get("status"))
        return validate_replica_status(
            status, ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        )

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.replicas"] = str(as_dict(obj.get("status")).get("replicas", 0))
        return fields


# --- ReplicationController (core/v1) ----------------------------------------------------


class ReplicationControllerStrategy(KindStrategy):
    """ReplicationControllers: a ReplicaSet whose selector is a plain label map."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_ReplicationController: selector and labels from the template's labels
        when empty, replicas 1."""
        spec = defaulted_dict(obj, "spec")
        template = spec.get("template")
        if isinstance(template, dict):
            labels = as_dict(template.get("metadata")).get("labels")
            if labels:
                if not spec.get("selector"):
                    spec["selector"] = dict(labels)
                if not obj["metadata"].get("labels"):
                    obj["metadata"]["labels"] = dict(labels)
            pod_spec = template.setdefault("spec", {})
            if isinstance(pod_spec, dict):
                set_pod_spec_defaults(pod_spec)
        set_default(spec, "replicas", 1)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateReplicationControllerSpec: a non-empty selector that the template's
        labels match, and a template (ValidatePodTemplateSpecForRC)."""
        spec = as_dict(obj.get("spec"))
        errors = _nonnegative_fields(spec, ("replicas", "minReadySeconds"), "spec")
        selector = spec.get("selector")
        if not isinstance(selector, dict) or not selector:
            errors.append(required("spec.selector", ""))
        if not isinstance(spec.get("template"), dict):
            return [*errors, required("spec.template", "")]
        if not errors:
            as_label_selector = {**spec, "selector": {"matchLabels": selector}}
            errors += validate_template_for_controller(as_label_selector, "spec",
                                                       "ReplicationController")
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self.validate(new)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateReplicationControllerStatus."""
        return validate_replica_status(
            as_dict(new.get("status")),
            ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"))

    def label_selector(self, obj: Obj) -> Obj | None:
        selector = as_dict(obj.get("spec")).get("selector")
        return {"matchLabels": selector} if isinstance(selector, dict) else None

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.replicas"] = str(as_dict(obj.get("status")).get("replicas", 0))
        return fields


# --- StatefulSet -------------------------------------------------------------------------


STATEFULSET_MUTABLE_FIELDS = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


class StatefulSetStrategy(KindStrategy):
    """StatefulSets: pods with stable names (`web-0`, `web-1`) and their own volumes."""

    # Pod names are `<name>-<ordinal>` and become host names: the name is a DNS label.
    name_validator = staticmethod(validate_dns1123_label)

    def default(self, obj: Obj) -> None:
        """SetDefaults_StatefulSet."""
        spec = defaulted_dict(obj, "spec")
        set_default_if_zero(spec, "podManagementPolicy", "OrderedReady")
        rolling = _rolling_update_to_default(spec, "updateStrategy")
        if rolling is not None:
            set_default(rolling, "partition", 0)
        retention = defaulted_dict(spec, "persistentVolumeClaimRetentionPolicy")
        set_default_if_zero(retention, "whenDeleted", "Retain")
        set_default_if_zero(retention, "whenScaled", "Retain")
        set_default(spec, "replicas", 1)
        set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
        set_template_defaults(spec)
        for claim in spec.get("volumeClaimTemplates") or []:
            if isinstance(claim, dict):
                set_default(defaulted_dict(claim, "spec"), "volumeMode", "Filesystem")
                claim_status = claim.setdefault("status", {})
                if isinstance(claim_status, dict):
                    set_default_if_zero(claim_status, "phase", "Pending")

    def validate(self, obj: Obj) -> list[FieldError]:
        return _validate_statefulset_spec(as_dict(obj.get("spec")))

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateStatefulSetUpdate: only a few spec fields may change."""
        spec, old_spec = semantic(as_dict(new.get("spec"))), semantic(as_dict(old.get("spec")))
        errors = _validate_statefulset_spec(as_dict(new.get("spec")))
        frozen = {k: v for k, v in spec.items() if k not in STATEFULSET_MUTABLE_FIELDS}
        old_frozen = {k: v for k, v in old_spec.items() if k not in STATEFULSET_MUTABLE_FIELDS}
        if frozen != old_frozen:
            errors.append(
                forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            )
        return errors

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        status = as_dict(new.get("status"))
        errors = validate_replica_status(
            status,
            (
                "replicas",
                "readyReplicas",
                "currentReplicas",
                "updatedReplicas",
                "availableReplicas",
            ),
        )
        return errors + _collision_count_not_decremented(new, old)


def _validate_statefulset_spec(spec: Obj) -> list[FieldError]:
    """ValidateStatefulSetSpec: upstream does not validate the pod spec of the template yet."""
    errors: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        errors.append(required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errors.append(
            invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
        )
    errors += _validate_statefulset_update_strategy(as_dict(spec.get("updateStrategy")))
    retention = as_dict(spec.get("persistentVolumeClaimRetentionPolicy"))
    for field in ("whenDeleted", "whenScaled"):
        if field in retention and retention[field] not in ("Retain", "Delete"):
            errors.append(
                not_supported(
                    f"spec.persistentVolumeClaimRetentionPolicy.{field}",
                    retention[field],
                    ["Retain", "Delete"],
                )
            )
    errors += _nonnegative_fields(spec, ("replicas", "minReadySeconds"), "spec")
    start = as_dict(spec.get("ordinals")).get("start")
    if start is not None:
        errors += validate_nonnegative(start, "spec.ordinals.start")
    errors += validate_workload_selector(spec, "spec", "statefulset")
    template = as_dict(spec.get("template"))
    matches = template_labels_match(spec.get("selector"), template)
    if matches is None:
        errors.append(invalid("spec.selector", spec.get("selector"), ""))
    else:
        metadata = as_dict(template.get("metadata"))
        if not matches:
            errors.append(
                invalid("spec.template.metadata.labels", metadata.get("labels"), SELECTOR_MISMATCH)
            )
        errors += validate_labels(as_dict(metadata.get("labels")), "spec.template.labels")
        errors += validate_annotations(
            as_dict(metadata.get("annotations")), "spec.template.annotations"
        )
    errors += _restart_policy_always(template, "spec.template")
    return errors + forbid_template_deadline(template, "spec.template", "StatefulSet")


def _validate_statefulset_update_strategy(strategy: Obj) -> list[FieldError]:
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    path = "spec.updateStrategy"
    if not kind:
        return [required(path)]
    if kind == "OnDelete":
        if rolling is not None:
            return [
                invalid(
                    child(path, "rollingUpdate"),
                    rolling,
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            ]
        return []
    if kind != "RollingUpdate":
        return [invalid(path, strategy, "must be 'RollingUpdate' or 'OnDelete'")]
    rolling = as_dict(rolling)
    rolling_path = child(path, "rollingUpdate")
    errors = _nonnegative_fields(rolling, ("partition",), rolling_path)
    unavailable = rolling.get("maxUnavailable")
    if unavailable is not None:
        unavailable_path = child(rolling_path, "maxUnavailable")
        errors += validate_positive_int_or_percent(unavailable, unavailable_path)
        if int_or_percent_value(unavailable) == 0:
            errors.append(invalid(unavailable_path, unavailable, "cannot be 0"))
    return errors


# --- DaemonSet ---------------------------------------------------------------------------


class DaemonSetStrategy(KindStrategy):
    """DaemonSets: one pod per (matching) node."""

    def prepare_for_create(self, obj: Obj) -> None:
        """The template generation starts at 1 (kept in an annotation in apps/v1)."""
        super().prepare_for_create(obj)
        defaulted_dict(obj["metadata"], "annotations")[DAEMONSET_TEMPLATE_GENERATION] = "1"

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """A template change bumps the template generation as well as the generation."""
        super().prepare_for_update(new, old)
        stored = as_dict(old["metadata"].get("annotations")).get(DAEMONSET_TEMPLATE_GENERATION)
        generation = int(stored) if isinstance(stored, str) and stored.isdigit() else 0
        template = semantic(as_dict(new.get("spec")).get("template"))
        if template != semantic(as_dict(old.get("spec")).get("template")):
            generation += 1
        annotations = defaulted_dict(new["metadata"], "annotations")
        annotations[DAEMONSET_TEMPLATE_GENERATION] = str(generation)

    def default(self, obj: Obj) -> None:
        """SetDefaults_DaemonSet."""
        spec = defaulted_dict(obj, "spec")
        rolling = _rolling_update_to_default(spec, "updateStrategy")
        if rolling is not None:
            set_default(rolling, "maxUnavailable", 1)
            set_default(rolling, "maxSurge", 0)
        set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
        set_template_defaults(spec)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateDaemonSetSpec: a missing selector selects nothing, so it never matches."""
        spec = as_dict(obj.get("spec"))
        selector = spec.get("selector")
        errors: list[FieldError] = []
        if isinstance(selector, dict):
            errors += validate_label_selector(selector, "spec.selector")
        template = as_dict(spec.get("template"))
        if template_labels_match(selector, template) is False:
            labels = as_dict(template.get("metadata")).get("labels")
            errors.append(invalid("spec.template.metadata.labels", labels, SELECTOR_MISMATCH))
        if isinstance(selector, dict) and selector_is_empty(selector):
            errors.append(
                invalid("spec.selector", selector, "empty selector is invalid for daemonset")
            )
        errors += validate_pod_template(template, "spec.template")
        errors += _restart_policy_always(template, "spec.template")
        errors += forbid_template_deadline(template, "spec.template", "DaemonSet")
        errors += _nonnegative_fields(spec, ("minReadySeconds", "revisionHistoryLimit"), "spec")
        return errors + _validate_daemonset_update_strategy(as_dict(spec.get("updateStrategy")))

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self.validate(new) + _immutable_selector(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        status = as_dict(new.get("status"))
        errors = _nonnegative_fields(
            status,
            (
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
                "observedGeneration",
                "updatedNumberScheduled",
                "numberAvailable",
                "numberUnavailable",
                "collisionCount",
            ),  # fmt: skip
            "status",
        )
        return errors + _collision_count_not_decremented(new, old)


def _validate_daemonset_update_strategy(strategy: Obj) -> list[FieldError]:
    """ValidateDaemonSetUpdateStrategy: exactly one of maxSurge and maxUnavailable non-zero."""
    path = "spec.updateStrategy"
    kind = strategy.get("type")
    if kind == "OnDelete":
        return []
    if kind != "RollingUpdate":
        return [not_supported(path, strategy, ["RollingUpdate", "OnDelete"])]
    rolling = strategy.get("rollingUpdate")
    rolling_path = child(path, "rollingUpdate")
    if rolling is None:
        return [required(rolling_path)]
    rolling = as_dict(rolling)
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errors = validate_positive_int_or_percent(unavailable, child(rolling_path, "maxUnavailable"))
    errors += validate_positive_int_or_percent(surge, child(rolling_path, "maxSurge"))
    has_unavailable = int_or_percent_value(unavailable) != 0
    has_surge = int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errors.append(
            invalid(
                child(rolling_path, "maxSurge"),
                surge,
                "may not be set when maxUnavailable is non-zero",
            )
        )
    elif not has_unavailable and not has_surge:
        errors.append(
            required(child(rolling_path, "maxUnavailable"), "cannot be 0 when maxSurge is 0")
        )
    return errors


class ControllerRevisionStrategy(NoGenerationStrategy):
    """ControllerRevisions: snapshots the DaemonSet and StatefulSet controllers keep of
    their templates. The data is required and never changes; the revision number is
    never negative, and may change (a rollback renumbers an old snapshot)."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateControllerRevisionCreate."""
        errors = [] if obj.get("data") is not None else [required("data", "data is mandatory")]
        return errors + validate_nonnegative(obj.get("revision", 0), "revision")

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateControllerRevisionUpdate."""
        return self.validate(new) + validate_immutable(new.get("data"), old.get("data"), "data")
