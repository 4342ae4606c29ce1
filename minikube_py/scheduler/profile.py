"""Build a profile's Framework from its configuration and the plugin registry.

A plugin enabled in `multiPoint` (the defaults are) joins every extension point it
implements; a plugin listed under one extension point joins only that one. Each plugin
is constructed once per profile, with its `pluginConfig` args.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikube_py.scheduler.config import ConfigError, Profile, resolve_plugins
from minikube_py.scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from minikube_py.scheduler.framework.runtime import ExtensionPoints, Framework, ObserveDuration

DEFAULT_WEIGHT = 1


def build_framework(profile: Profile, registry: Mapping[str, type[Plugin]], *,
                    percentage_of_nodes_to_score: int = 0,
                    observe: ObserveDuration | None = None, **handle: Any) -> Framework:
    """The Framework for one profile (`handle`: client, informers, recorder)."""
    framework = Framework(profile.scheduler_name, ExtensionPoints(), {},
                          percentage_of_nodes_to_score=(
                              profile.percentage_of_nodes_to_score
                              if profile.percentage_of_nodes_to_score is not None
                              else percentage_of_nodes_to_score),
                          observe=observe, **handle)
    instances: dict[str, Plugin] = {}

    def instance(name: str) -> Plugin:
        if name not in instances:
            if name not in registry:
                raise ConfigError(f'profiles: plugin "{name}" is not registered')
            try:
                instances[name] = registry[name](profile.plugin_args.get(name), framework)
            except (ValueError, TypeError) as error:
                raise ConfigError(f"profiles[{profile.scheduler_name}].pluginConfig[{name}]"
                                  f".args: {error}") from error
        return instances[name]

    multi, _explicit = resolve_plugins(profile)
    multi_weights = dict(multi)
    weights: dict[str, int] = {}

    def enabled_at(point: str, interface: type[Plugin]) -> list[Any]:
        """The plugins at one extension point (`point` as the configuration names it):
        the multiPoint ones that implement `interface`, unless disabled there, then those
        enabled there. Each field of ExtensionPoints types the list it gets."""
        plugin_set = profile.points[point]
        chosen: list[str] = []
        if "*" not in plugin_set.disabled:
            chosen = [name for name, _ in multi if name not in plugin_set.disabled
                      and issubclass(registry.get(name, Plugin), interface)]
        for name, weight in plugin_set.enabled:
            if not issubclass(registry.get(name, Plugin), interface):
                raise ConfigError(f'profiles[{profile.scheduler_name}].plugins.{point}: '
                                  f'plugin "{name}" does not extend {point} plugin')
            if name in chosen:
                chosen.remove(name)
            chosen.append(name)
            if point == "score" and weight:
                weights[name] = weight
        if point == "score":
            for name in chosen:
                weights.setdefault(name, multi_weights.get(name) or DEFAULT_WEIGHT)
        return [instance(name) for name in chosen if name in registry]

    plugins = ExtensionPoints(
        queue_sort=enabled_at("queueSort", QueueSortPlugin),
        pre_filter=enabled_at("preFilter", PreFilterPlugin),
        filter=enabled_at("filter", FilterPlugin),
        post_filter=enabled_at("postFilter", PostFilterPlugin),
        pre_score=enabled_at("preScore", PreScorePlugin),
        score=enabled_at("score", ScorePlugin),
        reserve=enabled_at("reserve", ReservePlugin),
        permit=enabled_at("permit", PermitPlugin),
        pre_bind=enabled_at("preBind", PreBindPlugin),
        bind=enabled_at("bind", BindPlugin),
        post_bind=enabled_at("postBind", PostBindPlugin))
    if len(plugins.queue_sort) != 1:
        raise ConfigError(f"profiles[{profile.scheduler_name}].plugins.queueSort: exactly "
                          f"one queue sort plugin is required, got {len(plugins.queue_sort)}")
    if not plugins.bind:
        raise ConfigError(f"profiles[{profile.scheduler_name}].plugins.bind: at least one "
                          "bind plugin is needed")
    framework.plugins = plugins
    framework.score_weights = weights
    return framework
