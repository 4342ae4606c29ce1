"""`describe serviceaccount` (describe.go: describeServiceAccount): the metadata, the
image pull secrets, and the events."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_labels_multiline,
    search_events,
)
from minikube_py.mkctl.describers.writer import LEVEL_0, PrefixWriter

PULL_HEADER = "Image pull secrets:"


def service_account_describer(account: Obj, lookups: Lookups, settings: Settings) -> str:
    meta = account.get("metadata") or {}
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           "ServiceAccount", meta.get("uid", ""), settings)
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    names = [secret.get("name", "") for secret in account.get("imagePullSecrets") or []]
    if not names:
        w.write(LEVEL_0, f"{PULL_HEADER}\t<none>\n")
    for index, name in enumerate(names):
        w.write(LEVEL_0, f"{PULL_HEADER if index == 0 else ' ' * len(PULL_HEADER)}\t{name}\n")
    describe_events(events, w)
    return w.tabbed()
