"""`describe secret` (describe.go: describeSecret): the metadata, the type, and the size
of each key; the values stay hidden, except a service account token's."""

from __future__ import annotations

import base64

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import print_annotations_multiline, print_labels_multiline
from minikube_py.mkctl.describers.writer import LEVEL_0, PrefixWriter

SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"


def secret_describer(secret: Obj, lookups: Lookups, settings: Settings) -> str:
    meta = secret.get("metadata") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    kind = secret.get("type", "")
    w.write(LEVEL_0, f"\nType:\t{kind}\n")
    w.write(LEVEL_0, "\nData\n====\n")
    data = secret.get("data") or {}
    for key in sorted(data):
        value = base64.b64decode(data[key])
        if key == "token" and kind == SERVICE_ACCOUNT_TOKEN:
            w.write(LEVEL_0, f"{key}:\t{value.decode('utf-8', 'replace')}\n")
        else:
            w.write(LEVEL_0, f"{key}:\t{len(value)} bytes\n")
    return w.tabbed()
