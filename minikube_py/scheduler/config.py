"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): profiles and their plugins.

    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles:
      - schedulerName: default-scheduler          # the defaults below
      - schedulerName: bin-packing
        plugins:
          score:
            disabled: [{name: NodeResourcesBalancedAllocation}]
            enabled: [{name: NodeResourcesFit, weight: 5}]
        pluginConfig:
          - name: NodeResourcesFit
            args: {scoringStrategy: {type: MostAllocated}}

Every profile starts from the default plugin set (`multiPoint`: a plugin is enabled at
every extension point it implements); `disabled` removes plugins (`*` removes all
defaults of that point), `enabled` adds them, after the defaults, in order. A config
that names an unknown plugin, gives a bad weight or repeats a profile fails at start
with one line naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from minikube_py.api import Obj

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
EXTENSION_POINT_NAMES = ("queueSort", "preFilter", "filter", "postFilter", "preScore",
                         "score", "reserve", "permit", "preBind", "bind", "postBind")

# getDefaultPlugins() for v1 (multiPoint), with the default Score weights. Of the volume
# plugins only VolumeBinding is built (no VolumeRestrictions, NodeVolumeLimits, VolumeZone).
DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeBinding", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)


class ConfigError(ValueError):
    """The configuration is invalid; the message names the field, as upstream's does."""


@dataclass
class PluginSet:
    """One extension point's plugins: (name, weight) in order; weight 0 = unset."""

    enabled: list[tuple[str, int]] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


@dataclass
class Extender:
    """An HTTP extender (upstream Extender config)."""

    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 1
    http_timeout: float = 30.0
    node_cache_capable: bool = False
    ignorable: bool = False
    managed_resources: list[str] = field(default_factory=list)


@dataclass
class Profile:
    scheduler_name: str
    multi_point: PluginSet
    points: dict[str, PluginSet]
    plugin_args: dict[str, Obj]
    percentage_of_nodes_to_score: int | None = None


@dataclass
class SchedulerConfiguration:
    profiles: list[Profile]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    extenders: list[Extender] = field(default_factory=list)


def default_configuration() -> SchedulerConfiguration:
    return parse_configuration({"apiVersion": API_VERSION,
                                "kind": "KubeSchedulerConfiguration"}, known_plugins=None)


def load_configuration(path: str | Path, known_plugins: set[str] | None) -> SchedulerConfiguration:
    try:
        document = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read scheduler config {path}: {error}") from error
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: a KubeSchedulerConfiguration must be a YAML mapping")
    return parse_configuration(document, known_plugins)


def _plugin_set(raw: Any, where: str, known: set[str] | None) -> PluginSet:
    if raw is None:
        return PluginSet()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object with enabled/disabled lists")
    result = PluginSet()
    for kind in ("enabled", "disabled"):
        for index, item in enumerate(raw.get(kind) or []):
            path = f"{where}.{kind}[{index}]"
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ConfigError(f"{path}.name: Required value")
            name = item["name"]
            if known is not None and name != "*" and name not in known:
                raise ConfigError(f'{path}.name: Invalid value: "{name}": '
                                  "plugin is not registered")
            if kind == "disabled":
                result.disabled.append(name)
                continue
            weight = item.get("weight", 0)
            if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
                raise ConfigError(f"{path}.weight: Invalid value: {weight!r}: "
                                  "must be a non-negative integer")
            if weight > 100:
                raise ConfigError(f"{path}.weight: Invalid value: {weight}: "
                                  "must not be greater than 100")
            result.enabled.append((name, weight))
    return result


def parse_configuration(document: Obj, known_plugins: set[str] | None) -> SchedulerConfiguration:
    """Validate and default a KubeSchedulerConfiguration document."""
    if document.get("apiVersion") != API_VERSION:
        raise ConfigError(f'apiVersion: Unsupported value: "{document.get("apiVersion")}": '
                          f'supported values: "{API_VERSION}"')
    if document.get("kind") != "KubeSchedulerConfiguration":
        raise ConfigError(f'kind: Unsupported value: "{document.get("kind")}": supported '
                          'values: "KubeSchedulerConfiguration"')
    percentage = document.get("percentageOfNodesToScore") or 0
    if not isinstance(percentage, int) or not 0 <= percentage <= 100:
        raise ConfigError(f"percentageOfNodesToScore: Invalid value: {percentage!r}: "
                          "not in valid range [0-100]")
    raw_profiles = document.get("profiles") or [{}]
    profiles: list[Profile] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_profiles):
        where = f"profiles[{index}]"
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: must be an object")
        name = raw.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if name in seen:
            raise ConfigError(f'{where}.schedulerName: Duplicate value: "{name}"')
        seen.add(name)
        plugins = raw.get("plugins") or {}
        if not isinstance(plugins, dict):
            raise ConfigError(f"{where}.plugins: must be an object")
        for point in plugins:
            if point != "multiPoint" and point not in EXTENSION_POINT_NAMES:
                raise ConfigError(f'{where}.plugins.{point}: Unsupported value: "{point}"')
        args: dict[str, Obj] = {}
        for arg_index, item in enumerate(raw.get("pluginConfig") or []):
            arg_where = f"{where}.pluginConfig[{arg_index}]"
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ConfigError(f"{arg_where}.name: Required value")
            if item["name"] in args:
                raise ConfigError(f'{arg_where}.name: Duplicate value: "{item["name"]}"')
            if known_plugins is not None and item["name"] not in known_plugins:
                raise ConfigError(f'{arg_where}.name: Invalid value: "{item["name"]}": '
                                  "plugin is not registered")
            args[item["name"]] = dict(item.get("args") or {})
        profile_percentage = raw.get("percentageOfNodesToScore")
        profiles.append(Profile(
            scheduler_name=name,
            multi_point=_plugin_set(plugins.get("multiPoint"), f"{where}.plugins.multiPoint",
                                    known_plugins),
            points={point: _plugin_set(plugins.get(point), f"{where}.plugins.{point}",
                                       known_plugins)
                    for point in EXTENSION_POINT_NAMES},
            plugin_args=args, percentage_of_nodes_to_score=profile_percentage))
    extenders = [_extender(raw, f"extenders[{i}]")
                 for i, raw in enumerate(document.get("extenders") or [])]
    return SchedulerConfiguration(
        profiles=profiles, percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=float(document.get("podInitialBackoffSeconds") or 1),
        pod_max_backoff_seconds=float(document.get("podMaxBackoffSeconds") or 10),
        extenders=extenders)


def _extender(raw: Any, where: str) -> Extender:
    if not isinstance(raw, dict) or not raw.get("urlPrefix"):
        raise ConfigError(f"{where}.urlPrefix: Required value")
    weight = raw.get("weight", 1)
    if raw.get("prioritizeVerb") and (not isinstance(weight, int) or weight <= 0):
        raise ConfigError(f"{where}.weight: Invalid value: {weight!r}: must have a positive "
                          "weight applied to it")
    timeout = str(raw.get("httpTimeout") or "30s")
    return Extender(
        url_prefix=raw["urlPrefix"].rstrip("/"), filter_verb=raw.get("filterVerb") or "",
        prioritize_verb=raw.get("prioritizeVerb") or "", bind_verb=raw.get("bindVerb") or "",
        weight=weight, http_timeout=float(timeout.rstrip("s") or 30),
        node_cache_capable=bool(raw.get("nodeCacheCapable")),
        ignorable=bool(raw.get("ignorable")),
        managed_resources=[r.get("name", "") for r in raw.get("managedResources") or []])


def resolve_plugins(profile: Profile) -> tuple[list[tuple[str, int]], dict[str, list[str]]]:
    """The profile's multiPoint plugins (defaults, minus disabled, plus enabled) and,
    per extension point, the plugins named there explicitly (after disabling `*`)."""
    disabled_all = "*" in profile.multi_point.disabled
    multi = [] if disabled_all else [
        (name, weight) for name, weight in DEFAULT_MULTIPOINT
        if name not in profile.multi_point.disabled]
    for name, weight in profile.multi_point.enabled:
        multi = [entry for entry in multi if entry[0] != name] + [(name, weight)]
    explicit = {point: [name for name, _ in plugin_set.enabled]
                for point, plugin_set in profile.points.items()}
    return multi, explicit
