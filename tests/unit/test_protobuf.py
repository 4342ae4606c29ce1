"""Decoding Kubernetes protobuf bodies (k8s\\x00 + runtime.Unknown) into JSON dicts."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from google.protobuf.message import Message

from minikube_py.api import errors, protobuf
from minikube_py.apiserver.endpoints import negotiation
from minikube_py.gen.k8s import (
    admissionregistration_v1_pb2,
    apps_v1_pb2,
    certificates_v1_pb2,
    core_v1_pb2,
    intstr_pb2,
    meta_v1_pb2,
    networking_v1_pb2,
    policy_v1_pb2,
    rbac_v1_pb2,
    resource_pb2,
    runtime_pb2,
    scheduling_v1_pb2,
)

# 2026-11-22T10:00:00Z
NOV_22_10AM = 1795341600

# The body kubectl 1.37 sent for `kubectl create configmap cm2 --from-literal=a=b -n t1`
# (from its -v=9 log). Like every gogo-protobuf encoder it writes the zero values of
# non-pointer fields: generateName "", selfLink "", uid "", generation 0, an empty
# creationTimestamp.
KUBECTL_CONFIGMAP_BODY = bytes.fromhex(
    "6b 38 73 00 0a 0f 0a 02  76 31 12 09 43 6f 6e 66"
    "69 67 4d 61 70 12 1f 0a  15 0a 03 63 6d 32 12 00"
    "1a 02 74 31 22 00 2a 00  32 00 38 00 42 00 12 06"
    "0a 01 61 12 01 62 1a 00  22 00"
)


def envelope(api_version: str, kind: str, message: Message) -> bytes:
    """What client-go's protobuf serializer writes: the magic, then runtime.Unknown."""
    unknown = runtime_pb2.Unknown(
        typeMeta=runtime_pb2.TypeMeta(apiVersion=api_version, kind=kind),
        raw=message.SerializeToString(),
    )
    return protobuf.MAGIC + unknown.SerializeToString()


def object_meta(**fields: Any) -> meta_v1_pb2.ObjectMeta:
    return meta_v1_pb2.ObjectMeta(**fields)


def int_or_string(value: int | str) -> intstr_pb2.IntOrString:
    if isinstance(value, str):
        return intstr_pb2.IntOrString(type=1, strVal=value)
    return intstr_pb2.IntOrString(type=0, intVal=value)


def quantity(text: str) -> resource_pb2.Quantity:
    return resource_pb2.Quantity(string=text)


def test_kubectl_configmap_body_decodes_to_what_kubectl_would_send_as_json() -> None:
    assert protobuf.decode(KUBECTL_CONFIGMAP_BODY) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm2", "namespace": "t1"},
        "data": {"a": "b"},
    }


def test_namespace_round_trips_with_labels_and_annotations_maps() -> None:
    namespace = core_v1_pb2.Namespace(
        metadata=object_meta(name="team-a", labels={"env": "dev", "team": "a"},
                             annotations={"owner": "me"}),
        spec=core_v1_pb2.NamespaceSpec(),
    )
    assert protobuf.decode(envelope("v1", "Namespace", namespace)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"env": "dev", "team": "a"},
                     "annotations": {"owner": "me"}},
        "spec": {},
    }


def test_secret_bytes_become_base64_and_string_data_stays_text() -> None:
    secret = core_v1_pb2.Secret(
        metadata=object_meta(name="db"),
        data={"password": b"s3cret", "blob": b"\x00\xff"},
        stringData={"user": "admin"},
        type="Opaque",
        immutable=False,
    )
    decoded = protobuf.decode(envelope("v1", "Secret", secret))
    assert decoded["data"] == {"password": "czNjcmV0", "blob": "AP8="}
    assert base64.b64decode(decoded["data"]["password"]) == b"s3cret"
    assert decoded["stringData"] == {"user": "admin"}
    assert decoded["type"] == "Opaque"
    assert decoded["immutable"] is False  # *bool set to false stays false


def test_configmap_binary_data_is_base64() -> None:
    configmap = core_v1_pb2.ConfigMap(
        metadata=object_meta(name="bin"), data={"text": "hi"}, binaryData={"raw": b"\x01\x02"})
    decoded = protobuf.decode(envelope("v1", "ConfigMap", configmap))
    assert decoded["data"] == {"text": "hi"}
    assert decoded["binaryData"] == {"raw": "AQI="}


def test_time_is_rfc3339_to_the_second_and_the_zero_time_is_left_out() -> None:
    meta = object_meta(
        name="web",
        creationTimestamp=meta_v1_pb2.Time(),
        deletionTimestamp=meta_v1_pb2.Time(seconds=NOV_22_10AM, nanos=123_000_000),
        deletionGracePeriodSeconds=0,
    )
    decoded = protobuf.decode(envelope("v1", "Pod", core_v1_pb2.Pod(metadata=meta)))
    assert decoded["metadata"] == {
        "name": "web",
        "deletionTimestamp": "2026-11-22T10:00:00Z",
        "deletionGracePeriodSeconds": 0,
    }


def test_time_in_a_map_and_in_conditions() -> None:
    status = policy_v1_pb2.PodDisruptionBudgetStatus(
        disruptedPods={"web-1": meta_v1_pb2.Time(seconds=NOV_22_10AM)},
        conditions=[meta_v1_pb2.Condition(
            type="DisruptionAllowed", status="True", reason="SufficientPods",
            lastTransitionTime=meta_v1_pb2.Time(seconds=0))],
    )
    pdb = policy_v1_pb2.PodDisruptionBudget(metadata=object_meta(name="p"), status=status)
    decoded = protobuf.decode(envelope("policy/v1", "PodDisruptionBudget", pdb))
    assert decoded["status"] == {
        "disruptedPods": {"web-1": "2026-11-22T10:00:00Z"},
        "conditions": [{"type": "DisruptionAllowed", "status": "True",
                        "reason": "SufficientPods",
                        "lastTransitionTime": "1970-01-01T00:00:00Z"}],
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [(8080, 8080), ("http", "http"), (0, 0), ("25%", "25%")],
)
def test_int_or_string_is_a_bare_number_or_string(value: int | str, expected: int | str) -> None:
    port = core_v1_pb2.ServicePort(port=80, protocol="TCP", targetPort=int_or_string(value))
    service = core_v1_pb2.Service(
        metadata=object_meta(name="web"), spec=core_v1_pb2.ServiceSpec(ports=[port]))
    decoded = protobuf.decode(envelope("v1", "Service", service))
    assert decoded["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": expected}]


def test_pdb_min_available_percent_and_selector() -> None:
    spec = policy_v1_pb2.PodDisruptionBudgetSpec(
        minAvailable=int_or_string("50%"),
        selector=meta_v1_pb2.LabelSelector(
            matchLabels={"app": "web"},
            matchExpressions=[meta_v1_pb2.LabelSelectorRequirement(
                key="tier", operator="In", values=["a", "b"])]),
    )
    pdb = policy_v1_pb2.PodDisruptionBudget(metadata=object_meta(name="p"), spec=spec)
    assert protobuf.decode(envelope("policy/v1", "PodDisruptionBudget", pdb))["spec"] == {
        "minAvailable": "50%",
        "selector": {"matchLabels": {"app": "web"},
                     "matchExpressions": [{"key": "tier", "operator": "In",
                                           "values": ["a", "b"]}]},
    }


def test_ingress_rule_value_is_inlined_and_zero_port_fields_are_left_out() -> None:
    pb = networking_v1_pb2
    backend = pb.IngressBackend(service=pb.IngressServiceBackend(
        name="svc", port=pb.ServiceBackendPort(name="", number=80)))
    rule = pb.IngressRule(host="foo.com", ingressRuleValue=pb.IngressRuleValue(
        http=pb.HTTPIngressRuleValue(paths=[pb.HTTPIngressPath(
            path="/", pathType="Exact", backend=backend)])))
    ingress = pb.Ingress(metadata=object_meta(name="web"),
                         spec=pb.IngressSpec(rules=[rule]), status=pb.IngressStatus())

    decoded = protobuf.decode(envelope("networking.k8s.io/v1", "Ingress", ingress))

    assert decoded["spec"] == {"rules": [{"host": "foo.com", "http": {"paths": [{
        "path": "/", "pathType": "Exact",
        "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}
    assert decoded["status"] == {}


def test_network_policy_peers_ports_and_pointer_zeros() -> None:
    pb = networking_v1_pb2
    rule = pb.NetworkPolicyIngressRule(
        ports=[pb.NetworkPolicyPort(protocol="UDP", port=int_or_string(53), endPort=0)],
        **{"from": [pb.NetworkPolicyPeer(ipBlock=pb.IPBlock(
            cidr="10.0.0.0/8", **{"except": ["10.1.0.0/16"]}))]})
    policy = pb.NetworkPolicy(metadata=object_meta(name="p"), spec=pb.NetworkPolicySpec(
        podSelector=meta_v1_pb2.LabelSelector(), ingress=[rule], policyTypes=["Ingress"]))

    decoded = protobuf.decode(envelope("networking.k8s.io/v1", "NetworkPolicy", policy))

    assert decoded["spec"] == {
        "podSelector": {}, "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"protocol": "UDP", "port": 53, "endPort": 0}],
                     "from": [{"ipBlock": {"cidr": "10.0.0.0/8",
                                           "except": ["10.1.0.0/16"]}}]}]}


def test_quantities_are_strings_and_an_empty_quantity_is_zero() -> None:
    quota = core_v1_pb2.ResourceQuota(
        metadata=object_meta(name="q"),
        spec=core_v1_pb2.ResourceQuotaSpec(
            hard={"cpu": quantity("500m"), "memory": quantity("1Gi"), "pods": quantity("10")},
            scopes=["BestEffort"]),
    )
    decoded = protobuf.decode(envelope("v1", "ResourceQuota", quota))
    assert decoded["spec"] == {"hard": {"cpu": "500m", "memory": "1Gi", "pods": "10"},
                               "scopes": ["BestEffort"]}
    selector = core_v1_pb2.ResourceFieldSelector(resource="limits.cpu", divisor=quantity(""))
    assert protobuf.message_to_json(selector) == {"resource": "limits.cpu", "divisor": "0"}


def deployment(**spec: Any) -> apps_v1_pb2.Deployment:
    container = core_v1_pb2.Container(
        name="nginx", image="nginx:1.25", resources=core_v1_pb2.ResourceRequirements(),
        terminationMessagePath="", stdin=False)
    template = core_v1_pb2.PodTemplateSpec(
        metadata=object_meta(labels={"app": "web"}, creationTimestamp=meta_v1_pb2.Time()),
        spec=core_v1_pb2.PodSpec(containers=[container]))
    return apps_v1_pb2.Deployment(
        metadata=object_meta(name="web", namespace="", generateName="", generation=0),
        spec=apps_v1_pb2.DeploymentSpec(
            selector=meta_v1_pb2.LabelSelector(matchLabels={"app": "web"}),
            template=template, strategy=apps_v1_pb2.DeploymentStrategy(), **spec),
        status=apps_v1_pb2.DeploymentStatus(),
    )


def test_deployment_drops_zero_values_go_omits_and_keeps_empty_structs() -> None:
    decoded = protobuf.decode(envelope("apps/v1", "Deployment", deployment(
        replicas=2, minReadySeconds=0, paused=False)))
    assert decoded == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                         "resources": {}}]},
            },
            "strategy": {},
        },
        "status": {},
    }


def test_deployment_keeps_zero_replicas_because_go_uses_a_pointer() -> None:
    decoded = protobuf.decode(envelope("apps/v1", "Deployment", deployment(
        replicas=0, revisionHistoryLimit=0)))
    assert decoded["spec"]["replicas"] == 0
    assert decoded["spec"]["revisionHistoryLimit"] == 0


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (core_v1_pb2.ServiceAccount(automountServiceAccountToken=False),
         {"automountServiceAccountToken": False}),
        (core_v1_pb2.PodSpec(terminationGracePeriodSeconds=0, hostNetwork=False),
         {"terminationGracePeriodSeconds": 0}),
        (scheduling_v1_pb2.PriorityClass(value=0, globalDefault=False, description=""),
         {"value": 0}),
        (core_v1_pb2.ContainerPort(containerPort=80, hostPort=0, protocol="TCP"),
         {"containerPort": 80, "protocol": "TCP"}),
    ],
)
def test_zero_scalars_are_kept_only_for_pointer_fields(
        message: Message, expected: dict[str, Any]) -> None:
    assert protobuf.message_to_json(message) == expected


def test_inline_structs_put_their_fields_in_the_parent() -> None:
    volume = core_v1_pb2.Volume(
        name="config",
        volumeSource=core_v1_pb2.VolumeSource(configMap=core_v1_pb2.ConfigMapVolumeSource(
            localObjectReference=core_v1_pb2.LocalObjectReference(name="settings"),
            defaultMode=420)),
    )
    probe = core_v1_pb2.Probe(
        handler=core_v1_pb2.ProbeHandler(httpGet=core_v1_pb2.HTTPGetAction(
            path="/healthz", port=int_or_string(8080))),
        periodSeconds=5)
    env = core_v1_pb2.EnvVar(name="PASSWORD", valueFrom=core_v1_pb2.EnvVarSource(
        secretKeyRef=core_v1_pb2.SecretKeySelector(
            localObjectReference=core_v1_pb2.LocalObjectReference(name="db"), key="pw")))
    spec = core_v1_pb2.PodSpec(
        volumes=[volume],
        containers=[core_v1_pb2.Container(name="app", readinessProbe=probe, env=[env])])
    assert protobuf.message_to_json(spec) == {
        "volumes": [{"name": "config", "configMap": {"name": "settings", "defaultMode": 420}}],
        "containers": [{
            "name": "app",
            "env": [{"name": "PASSWORD",
                     "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                               "periodSeconds": 5},
        }],
    }


def test_webhook_rule_is_inlined_ca_bundle_is_base64_and_pointer_zeros_stay() -> None:
    pb = admissionregistration_v1_pb2
    hook = pb.MutatingWebhook(
        name="inject.example.com",
        clientConfig=pb.WebhookClientConfig(url="https://hooks.example.com", caBundle=b"PEM"),
        rules=[pb.RuleWithOperations(operations=["CREATE"], rule=pb.Rule(
            apiGroups=[""], apiVersions=["v1"], resources=["pods"]))],
        sideEffects="None", timeoutSeconds=0, reinvocationPolicy="")
    configuration = pb.MutatingWebhookConfiguration(metadata=object_meta(name="m"),
                                                    webhooks=[hook])
    decoded = protobuf.decode(envelope("admissionregistration.k8s.io/v1",
                                       "MutatingWebhookConfiguration", configuration))
    assert decoded["webhooks"] == [{
        "name": "inject.example.com",
        "clientConfig": {"url": "https://hooks.example.com", "caBundle": "UEVN"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["pods"]}],
        "sideEffects": "None", "timeoutSeconds": 0, "reinvocationPolicy": "",
    }]


def test_csr_bytes_are_base64_extra_is_lists_and_conditions_keep_their_times() -> None:
    pb = certificates_v1_pb2
    approval = pb.CertificateSigningRequestCondition(
        type="Approved", status="True", reason="KubectlApprove",
        lastUpdateTime=meta_v1_pb2.Time(seconds=NOV_22_10AM))
    request = pb.CertificateSigningRequest(
        metadata=object_meta(name="alice"),
        spec=pb.CertificateSigningRequestSpec(
            request=b"PEM", signerName="example.com/signer", expirationSeconds=600,
            usages=["client auth"], username="alice", groups=["dev"],
            extra={"scopes": pb.ExtraValue(items=["a", "b"])}),
        status=pb.CertificateSigningRequestStatus(conditions=[approval]))
    decoded = protobuf.decode(envelope("certificates.k8s.io/v1", "CertificateSigningRequest",
                                       request))
    assert decoded == {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {"request": "UEVN", "signerName": "example.com/signer",
                 "expirationSeconds": 600, "usages": ["client auth"], "username": "alice",
                 "groups": ["dev"], "extra": {"scopes": ["a", "b"]}},
        "status": {"conditions": [{"type": "Approved", "status": "True",
                                   "reason": "KubectlApprove",
                                   "lastUpdateTime": "2026-11-22T10:00:00Z"}]},
    }


def test_csr_fields_go_always_writes_stay_when_empty() -> None:
    pb = certificates_v1_pb2
    request = pb.CertificateSigningRequest(
        metadata=object_meta(name="x"),
        spec=pb.CertificateSigningRequestSpec(signerName="", username=""),
        status=pb.CertificateSigningRequestStatus(
            conditions=[pb.CertificateSigningRequestCondition(type="", status="")]))
    decoded = protobuf.decode(envelope("certificates.k8s.io/v1", "CertificateSigningRequest",
                                       request))
    assert decoded["spec"] == {"signerName": ""}
    assert decoded["status"] == {"conditions": [{"type": "", "status": ""}]}


def test_empty_lists_are_left_out() -> None:
    role = rbac_v1_pb2.Role(
        metadata=object_meta(name="reader", finalizers=[]),
        rules=[rbac_v1_pb2.PolicyRule(verbs=["get"], apiGroups=[""], resources=["pods"])])
    assert protobuf.decode(envelope("rbac.authorization.k8s.io/v1", "Role", role)) == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader"},
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
    }


def test_managed_fields_carry_their_fields_document_as_json() -> None:
    entry = meta_v1_pb2.ManagedFieldsEntry(
        manager="kubectl-create", operation="Update", apiVersion="v1",
        time=meta_v1_pb2.Time(seconds=NOV_22_10AM), fieldsType="FieldsV1",
        fieldsV1=meta_v1_pb2.FieldsV1(Raw=b'{"f:data":{"f:a":{}}}'))
    configmap = core_v1_pb2.ConfigMap(metadata=object_meta(name="c", managedFields=[entry]))
    decoded = protobuf.decode(envelope("v1", "ConfigMap", configmap))
    assert decoded["metadata"]["managedFields"] == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
        "time": "2026-11-22T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}},
    }]


def test_invalid_utf8_in_a_string_becomes_the_replacement_character() -> None:
    raw = core_v1_pb2.ConfigMap(
        metadata=object_meta(name="cm"), data={"k": "v"}).SerializeToString()
    raw = raw.replace(b"cm", b"c\xff").replace(b"\x01v", b"\x01\xfe")
    body = protobuf.MAGIC + runtime_pb2.Unknown(
        typeMeta=runtime_pb2.TypeMeta(apiVersion="v1", kind="ConfigMap"),
        raw=raw).SerializeToString()
    decoded = protobuf.decode(body)
    assert decoded["metadata"] == {"name": "c\ufffd"}
    assert decoded["data"] == {"k": "\ufffd"}


@pytest.mark.parametrize(("api_version", "kind"), sorted(
    key for key, message in protobuf.KINDS.items()
    if "metadata" in message.DESCRIPTOR.fields_by_name))
def test_every_supported_kind_decodes_with_its_own_message(api_version: str, kind: str) -> None:
    message_class = protobuf.KINDS[(api_version, kind)]
    assert message_class.DESCRIPTOR.name == kind
    message = message_class(metadata=object_meta(name="x"))
    assert protobuf.decode(envelope(api_version, kind, message)) == {
        "apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}


def test_delete_options_decode_as_the_json_a_delete_takes() -> None:
    """client-go's typed clients send a DELETE's options in protobuf (kubectl drain
    --disable-eviction): int64 grace period as a number, as in JSON."""
    message = meta_v1_pb2.DeleteOptions(
        gracePeriodSeconds=0, propagationPolicy="Foreground", dryRun=["All"],
        preconditions=meta_v1_pb2.Preconditions(uid="u-1", resourceVersion="7"))
    assert protobuf.decode(envelope("v1", "DeleteOptions", message)) == {
        "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground", "dryRun": ["All"],
        "preconditions": {"uid": "u-1", "resourceVersion": "7"}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty data"),
        (b'{"kind": "Namespace"}', "provided data does not appear to be a protobuf message, "
                                   "expected prefix [107, 56, 115, 0]"),
        (protobuf.MAGIC, "empty body"),
        (protobuf.MAGIC + b"\x0a\xff", "unable to decode runtime.Unknown envelope"),
        (envelope("v1", "Widget", core_v1_pb2.Namespace()),
         'no kind "Widget" is registered for version "v1"'),
        (envelope("apps/v2", "Deployment", apps_v1_pb2.Deployment()),
         'no kind "Deployment" is registered for version "apps/v2"'),
        (protobuf.MAGIC + runtime_pb2.Unknown(
            typeMeta=runtime_pb2.TypeMeta(apiVersion="v1", kind="Pod"),
            raw=b"\x0a\x05\x0a").SerializeToString(),
         "unable to decode Pod"),
        (protobuf.MAGIC + runtime_pb2.Unknown(
            typeMeta=runtime_pb2.TypeMeta(apiVersion="v1", kind="Pod"),
            contentEncoding="gzip").SerializeToString(),
         "unsupported content encoding 'gzip'"),
        (envelope("v1", "Pod", core_v1_pb2.Pod(metadata=object_meta(
            deletionTimestamp=meta_v1_pb2.Time(seconds=10**18)))),
         "unable to decode Pod"),
    ],
)
def test_bad_bodies_raise_protobuf_error_saying_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match="^" + re.escape(message)):
        protobuf.decode(body)


def test_decode_body_reads_protobuf_content_type() -> None:
    decoded = negotiation.decode_body(protobuf.MEDIA_TYPE, KUBECTL_CONFIGMAP_BODY)
    assert decoded["kind"] == "ConfigMap"
    assert decoded["data"] == {"a": "b"}


def test_decode_body_answers_bad_protobuf_with_bad_request() -> None:
    with pytest.raises(errors.APIError) as caught:
        negotiation.decode_body(protobuf.MEDIA_TYPE, b"not protobuf")
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    assert "does not appear to be a protobuf message" in caught.value.message


def test_decode_body_still_refuses_unknown_media_types() -> None:
    with pytest.raises(errors.APIError) as caught:
        negotiation.decode_body("application/x-foo", b"x")
    assert caught.value.code == 415
    assert protobuf.MEDIA_TYPE in caught.value.message
