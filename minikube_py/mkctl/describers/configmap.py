"""`describe configmap` (describe.go: ConfigMapDescriber): the metadata, then each key
of Data with its value under a rule, and the size of each key of BinaryData."""

from __future__ import annotations

import base64

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_labels_multiline,
    search_events,
)
from minikube_py.mkctl.describers.writer import LEVEL_0, PrefixWriter


def config_map_describer(config_map: Obj, lookups: Lookups, settings: Settings) -> str:
    meta = config_map.get("metadata") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, "\nData\n====\n")
    data = config_map.get("data") or {}
    for key in sorted(data):
        w.write(LEVEL_0, f"{key}:\n----\n")
        w.write(LEVEL_0, f"{data[key]}\n")
        w.write(LEVEL_0, "\n")
    w.write(LEVEL_0, "\nBinaryData\n====\n")
    binary = config_map.get("binaryData") or {}
    for key in sorted(binary):
        w.write(LEVEL_0, f"{key}: {len(base64.b64decode(binary[key]))} bytes\n")
    w.write(LEVEL_0, "\n")
    describe_events(search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                                  "ConfigMap", meta.get("uid", ""), settings), w)
    return w.tabbed()
