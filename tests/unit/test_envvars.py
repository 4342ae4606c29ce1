"""A container's environment is built as upstream's makeEnvironmentVariables builds it."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.kubelet.envvars import ContainerConfigError, expand, make_environment, mapping_for


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


CONFIG_MAPS = {
    ("ns", "app-config"): {"metadata": {"name": "app-config"},
                           "data": {"MODE": "fast", "LEVEL": "3", "BAD=KEY": "x"}},
    ("ns", "more"): {"metadata": {"name": "more"}, "data": {"MODE": "slow"}},
}
SECRETS = {("ns", "creds"): {"metadata": {"name": "creds"},
                             "data": {"USER": b64("admin"), "PASSWORD": b64("s3cr3t")}}}


class Store:
    """get_config_map / get_secret over dicts, counting the fetches."""

    def __init__(self) -> None:
        self.fetches: list[tuple[str, str, str]] = []

    async def config_map(self, namespace: str, name: str) -> Obj | None:
        self.fetches.append(("configmap", namespace, name))
        return CONFIG_MAPS.get((namespace, name))

    async def secret(self, namespace: str, name: str) -> Obj | None:
        self.fetches.append(("secret", namespace, name))
        return SECRETS.get((namespace, name))


def service(namespace: str, name: str, cluster_ip: str, *ports: Obj) -> Obj:
    return {"metadata": {"namespace": namespace, "name": name},
            "spec": {"clusterIP": cluster_ip, "ports": list(ports)}}


KUBERNETES = service("default", "kubernetes", "10.96.0.1",
                     {"name": "https", "port": 443, "protocol": "TCP"})


def make_pod(container: Obj, **spec: Any) -> Obj:
    return {
        "metadata": {"name": "web-1", "namespace": "ns", "uid": "uid-1",
                     "labels": {"app": "web"}, "annotations": {"team": "blue"}},
        "spec": {"nodeName": "node-a", "serviceAccountName": "builder",
                 "containers": [container, {"name": "side", "resources": {
                     "limits": {"memory": "64Mi"}}}], **spec},
    }


async def environment(container: Obj, *, services: list[Obj] | None = None,
                      store: Store | None = None, allocatable: Obj | None = None,
                      **spec: Any) -> list[tuple[str, str]]:
    store = store or Store()
    return await make_environment(
        make_pod(container, **spec), container, get_config_map=store.config_map,
        get_secret=store.secret, services=services or [], pod_ip="10.244.1.5",
        pod_ips=["10.244.1.5", "fd00::5"], host_ip="192.168.1.10", node_name="node-a",
        allocatable=allocatable)


# -- $(VAR) expansion -----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("$(A)", "alpha"),
    ("x-$(A)-$(B)-y", "x-alpha-beta-y"),
    ("$$(A)", "$(A)"),
    ("$$$(A)", "$alpha"),
    ("$(MISSING)", "$(MISSING)"),
    ("$(A", "$(A"),
    ("cost: $5", "cost: $5"),
    ("trailing $", "trailing $"),
    ("$()", "$()"),
    ("$(B)", "beta"),
])
def test_expand_follows_upstream_syntax(text: str, expected: str) -> None:
    assert expand(text, mapping_for({"A": "alpha"}, {"A": "shadowed", "B": "beta"})) == expected


# -- service links ----------------------------------------------------------------------------

async def test_service_links_give_host_port_and_docker_link_variables() -> None:
    redis = service("ns", "redis-main", "10.96.0.20",
                    {"port": 6379, "protocol": "TCP"}, {"name": "metrics", "port": 9121})
    env = dict(await environment({"name": "app"}, services=[redis]))
    assert env == {
        "REDIS_MAIN_SERVICE_HOST": "10.96.0.20",
        "REDIS_MAIN_SERVICE_PORT": "6379",
        "REDIS_MAIN_SERVICE_PORT_METRICS": "9121",
        "REDIS_MAIN_PORT": "tcp://10.96.0.20:6379",
        "REDIS_MAIN_PORT_6379_TCP": "tcp://10.96.0.20:6379",
        "REDIS_MAIN_PORT_6379_TCP_PROTO": "tcp",
        "REDIS_MAIN_PORT_6379_TCP_PORT": "6379",
        "REDIS_MAIN_PORT_6379_TCP_ADDR": "10.96.0.20",
        "REDIS_MAIN_PORT_9121_TCP": "tcp://10.96.0.20:9121",
        "REDIS_MAIN_PORT_9121_TCP_PROTO": "tcp",
        "REDIS_MAIN_PORT_9121_TCP_PORT": "9121",
        "REDIS_MAIN_PORT_9121_TCP_ADDR": "10.96.0.20",
    }


@pytest.mark.parametrize(("services", "enable_links", "expected_hosts"), [
    ([service("ns", "db", "10.96.0.9", {"port": 5432})], True, {"DB_SERVICE_HOST"}),
    ([service("ns", "db", "10.96.0.9", {"port": 5432})], False, set()),
    ([service("ns", "db", "None", {"port": 5432})], True, set()),
    ([service("ns", "db", "", {"port": 5432})], True, set()),
    ([service("other", "db", "10.96.0.9", {"port": 5432})], True, set()),
    ([KUBERNETES], True, {"KUBERNETES_SERVICE_HOST"}),
    ([KUBERNETES], False, {"KUBERNETES_SERVICE_HOST"}),
    ([service("default", "db", "10.96.0.9", {"port": 5432})], True, set()),
    ([service("ns", "2fast.svc", "10.96.0.9", {"port": 80})], True, {"_2FAST_SVC_SERVICE_HOST"}),
])
async def test_service_links_cover_own_namespace_and_always_the_master_service(
        services: list[Obj], enable_links: bool, expected_hosts: set[str]) -> None:
    env = dict(await environment({"name": "app"}, services=services,
                                 enableServiceLinks=enable_links))
    assert {name for name in env if name.endswith("_SERVICE_HOST")} == expected_hosts


@pytest.mark.parametrize(("enable_links", "expected_host"), [(True, "10.96.7.7"),
                                                               (False, "10.96.0.1")])
async def test_own_kubernetes_service_replaces_the_master_one_only_with_links(
        enable_links: bool, expected_host: str) -> None:
    own = service("ns", "kubernetes", "10.96.7.7", {"port": 80})
    for services in ([own, KUBERNETES], [KUBERNETES, own]):
        env = dict(await environment({"name": "app"}, services=services,
                                     enableServiceLinks=enable_links))
        assert env["KUBERNETES_SERVICE_HOST"] == expected_host


async def test_ipv6_cluster_ip_is_bracketed_in_link_urls() -> None:
    env = dict(await environment({"name": "app"},
                                 services=[service("ns", "v6", "fd00::10", {"port": 80})]))
    assert env["V6_PORT"] == "tcp://[fd00::10]:80"
    assert env["V6_SERVICE_HOST"] == "fd00::10"


async def test_container_variables_come_first_and_override_service_variables() -> None:
    container = {"name": "app", "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "mine"},
                                        {"name": "URL", "value": "$(KUBERNETES_PORT)/x"}]}
    env = await environment(container, services=[KUBERNETES])
    assert env[:2] == [("KUBERNETES_SERVICE_HOST", "mine"), ("URL", "tcp://10.96.0.1:443/x")]
    assert [name for name, _ in env].count("KUBERNETES_SERVICE_HOST") == 1


# -- envFrom and env ----------------------------------------------------------------------------

async def test_env_from_reads_every_key_with_prefix_and_skips_invalid_names() -> None:
    container = {"name": "app", "envFrom": [{"configMapRef": {"name": "app-config"},
                                             "prefix": "CFG_"},
                                            {"secretRef": {"name": "creds"}}]}
    assert dict(await environment(container)) == {
        "CFG_MODE": "fast", "CFG_LEVEL": "3", "USER": "admin", "PASSWORD": "s3cr3t"}


async def test_later_env_from_wins_and_env_overrides_env_from() -> None:
    container = {"name": "app",
                 "envFrom": [{"configMapRef": {"name": "app-config"}},
                             {"configMapRef": {"name": "more"}}],
                 "env": [{"name": "LEVEL", "value": "9"}]}
    env = dict(await environment(container))
    assert env["MODE"] == "slow" and env["LEVEL"] == "9"


async def test_value_expands_earlier_variables_only() -> None:
    container = {"name": "app", "env": [
        {"name": "A", "value": "$(B)-a"},
        {"name": "B", "value": "b"},
        {"name": "C", "value": "$(B)-$(A)-$$(B)"},
        {"name": "EMPTY"},
    ]}
    assert dict(await environment(container)) == {
        "A": "$(B)-a", "B": "b", "C": "b-$(B)-a-$(B)", "EMPTY": ""}


async def test_each_config_map_and_secret_is_fetched_once() -> None:
    store = Store()
    container = {"name": "app", "envFrom": [{"configMapRef": {"name": "app-config"}}],
                 "env": [{"name": "M", "valueFrom": {"configMapKeyRef": {
                             "name": "app-config", "key": "MODE"}}},
                         {"name": "U", "valueFrom": {"secretKeyRef": {
                             "name": "creds", "key": "USER"}}},
                         {"name": "P", "valueFrom": {"secretKeyRef": {
                             "name": "creds", "key": "PASSWORD"}}}]}
    env = dict(await environment(container, store=store))
    assert (env["M"], env["U"], env["P"]) == ("fast", "admin", "s3cr3t")
    assert sorted(store.fetches) == [("configmap", "ns", "app-config"), ("secret", "ns", "creds")]


@pytest.mark.parametrize(("value_from", "expected"), [
    ({"configMapKeyRef": {"name": "app-config", "key": "LEVEL"}}, "3"),
    ({"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}, "s3cr3t"),
    ({"configMapKeyRef": {"name": "absent", "key": "K", "optional": True}}, None),
    ({"configMapKeyRef": {"name": "app-config", "key": "NOPE", "optional": True}}, None),
    ({"secretKeyRef": {"name": "absent", "key": "K", "optional": True}}, None),
    ({"secretKeyRef": {"name": "creds", "key": "NOPE", "optional": True}}, None),
])
async def test_value_from_config_map_and_secret_keys(value_from: Obj,
                                                     expected: str | None) -> None:
    env = dict(await environment({"name": "app", "env": [{"name": "V",
                                                          "valueFrom": value_from}]}))
    assert env.get("V") == expected


@pytest.mark.parametrize(("container", "message"), [
    ({"envFrom": [{"configMapRef": {"name": "absent"}}]}, 'configmap "absent" not found'),
    ({"envFrom": [{"secretRef": {"name": "absent"}}]}, 'secret "absent" not found'),
    ({"env": [{"name": "V", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "K"}}}]},
     'configmap "absent" not found'),
    ({"env": [{"name": "V", "valueFrom": {"configMapKeyRef": {"name": "app-config",
                                                              "key": "NOPE"}}}]},
     "couldn't find key NOPE in ConfigMap ns/app-config"),
    ({"env": [{"name": "V", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "NOPE"}}}]},
     "couldn't find key NOPE in Secret ns/creds"),
    ({"env": [{"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "spec.foo"}}}]},
     "field label not supported: spec.foo"),
    ({"env": [{"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}]},
     "unsupported fieldPath: status.phase"),
    ({"env": [{"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "spec.labels['x']"}}}]},
     "field label does not support subscript: spec.labels['x']"),
    ({"env": [{"name": "V", "valueFrom": {"fieldRef": {"apiVersion": "v2",
                                                       "fieldPath": "metadata.name"}}}]},
     "unsupported pod version: v2"),
    ({"env": [{"name": "V", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}]},
     "unsupported container resource : limits.gpu"),
    ({"env": [{"name": "V", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu",
                                                               "containerName": "nope"}}}]},
     "container nope not found"),
])
async def test_unresolvable_sources_are_container_config_errors(container: Obj,
                                                                message: str) -> None:
    with pytest.raises(ContainerConfigError) as raised:
        await environment({"name": "app", **container})
    assert str(raised.value) == message


# -- downward API -------------------------------------------------------------------------------

@pytest.mark.parametrize(("field_path", "expected"), [
    ("metadata.name", "web-1"),
    ("metadata.namespace", "ns"),
    ("metadata.uid", "uid-1"),
    ("metadata.labels['app']", "web"),
    ("metadata.labels['missing']", ""),
    ("metadata.annotations['team']", "blue"),
    ("spec.nodeName", "node-a"),
    ("spec.serviceAccountName", "builder"),
    ("status.podIP", "10.244.1.5"),
    ("status.podIPs", "10.244.1.5,fd00::5"),
    ("status.hostIP", "192.168.1.10"),
    ("status.hostIPs", "192.168.1.10"),
])
async def test_field_ref_values(field_path: str, expected: str) -> None:
    container = {"name": "app", "env": [{"name": "V", "valueFrom": {
        "fieldRef": {"apiVersion": "v1", "fieldPath": field_path}}}]}
    assert dict(await environment(container))["V"] == expected


@pytest.mark.parametrize(("selector", "expected"), [
    ({"resource": "limits.cpu"}, "2"),
    ({"resource": "limits.cpu", "divisor": "1m"}, "1500"),
    ({"resource": "requests.cpu"}, "1"),
    ({"resource": "requests.cpu", "divisor": "100m"}, "3"),
    ({"resource": "limits.memory", "divisor": "1Mi"}, "128"),
    ({"resource": "requests.memory"}, "0"),
    ({"resource": "limits.ephemeral-storage", "divisor": "1Gi"}, "10"),
    ({"resource": "limits.memory", "divisor": "1Mi", "containerName": "side"}, "64"),
    ({"resource": "limits.cpu", "divisor": "0"}, "2"),
])
async def test_resource_field_ref_rounds_up_and_falls_back_to_allocatable(
        selector: Obj, expected: str) -> None:
    container = {"name": "app", "resources": {"requests": {"cpu": "250m"},
                                              "limits": {"cpu": "1500m", "memory": "128Mi"}},
                 "env": [{"name": "V", "valueFrom": {"resourceFieldRef": selector}}]}
    env = dict(await environment(container, allocatable={
        "cpu": "4", "memory": "8Gi", "ephemeral-storage": "10Gi"}))
    assert env["V"] == expected


async def test_missing_limit_reads_as_node_allocatable() -> None:
    container = {"name": "app", "env": [
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory",
                                                           "divisor": "1Gi"}}}]}
    env = dict(await environment(container, allocatable={"cpu": "3500m", "memory": "8Gi"}))
    assert (env["CPU"], env["MEM"]) == ("4", "8")
