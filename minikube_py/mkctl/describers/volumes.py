"""The volumes of a pod or a pod template, as describe writes them (describe.go:
describeVolumes and the print*VolumeSource functions): each volume's name, then its
source's type and fields."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers.common import MAX_ANNOTATION_LEN, go_bool
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, LEVEL_2, LEVEL_3, PrefixWriter


def describe_volumes(volumes: list[Obj] | None, w: PrefixWriter, space: str = "") -> None:
    """describeVolumes: each volume's name, then its source's fields."""
    if not volumes:
        w.write(LEVEL_0, f"{space}Volumes:\t<none>\n")
        return
    w.write(LEVEL_0, f"{space}Volumes:\n")
    for volume in volumes:
        w.write(LEVEL_1, f"{' ' if space else ''}{volume.get('name', '')}:\n")
        for field, printer in _VOLUME_PRINTERS.items():
            if volume.get(field) is not None:
                printer(volume[field], w)
                break
        else:
            w.write(LEVEL_1, "<unknown>\n")


def _host_path(source: Obj, w: PrefixWriter) -> None:
    kind = source["type"] if source.get("type") is not None else "<none>"
    w.write(LEVEL_2, "Type:\tHostPath (bare host directory volume)\n"
                     f"    Path:\t{source.get('path', '')}\n    HostPathType:\t{kind}\n")


def _empty_dir(source: Obj, w: PrefixWriter) -> None:
    from minikube_py.api.quantity import Quantity

    limit = source.get("sizeLimit")
    shown = limit if limit is not None and Quantity.parse(limit).amount > 0 else "<unset>"
    w.write(LEVEL_2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n"
                     f"    Medium:\t{source.get('medium', '')}\n    SizeLimit:\t{shown}\n")


def _secret(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tSecret (a volume populated by a Secret)\n"
                     f"    SecretName:\t{source.get('secretName', '')}\n"
                     f"    Optional:\t{go_bool(source.get('optional'))}\n")


def _config_map(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tConfigMap (a volume populated by a ConfigMap)\n"
                     f"    Name:\t{source.get('name', '')}\n"
                     f"    Optional:\t{go_bool(source.get('optional'))}\n")


def _persistent_volume_claim(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim "
                     "in the same namespace)\n"
                     f"    ClaimName:\t{source.get('claimName', '')}\n"
                     f"    ReadOnly:\t{go_bool(source.get('readOnly'))}\n")


def _downward_api(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tDownwardAPI (a volume populated by information about the pod)\n"
                     "    Items:\n")
    for item in source.get("items") or []:
        if item.get("fieldRef") is not None:
            w.write(LEVEL_3, f"{item['fieldRef'].get('fieldPath', '')} -> {item.get('path', '')}\n")
        if item.get("resourceFieldRef") is not None:
            w.write(LEVEL_3, f"{item['resourceFieldRef'].get('resource', '')} -> "
                             f"{item.get('path', '')}\n")


def _projected(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tProjected (a volume that contains injected data from multiple "
                     "sources)\n")
    for item in source.get("sources") or []:
        if item.get("secret") is not None:
            w.write(LEVEL_2, f"SecretName:\t{item['secret'].get('name', '')}\n"
                             f"    Optional:\t{go_bool(item['secret'].get('optional'))}\n")
        elif item.get("downwardAPI") is not None:
            w.write(LEVEL_2, "DownwardAPI:\ttrue\n")
        elif item.get("configMap") is not None:
            w.write(LEVEL_2, f"ConfigMapName:\t{item['configMap'].get('name', '')}\n"
                             f"    Optional:\t{go_bool(item['configMap'].get('optional'))}\n")
        elif item.get("serviceAccountToken") is not None:
            w.write(LEVEL_2, "TokenExpirationSeconds:\t"
                             f"{item['serviceAccountToken'].get('expirationSeconds', 0)}\n")


def _nfs(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tNFS (an NFS mount that lasts the lifetime of a pod)\n"
                     f"    Server:\t{source.get('server', '')}\n"
                     f"    Path:\t{source.get('path', '')}\n"
                     f"    ReadOnly:\t{go_bool(source.get('readOnly'))}\n")


def _csi(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tCSI (a Container Storage Interface (CSI) volume source)\n"
                     f"    Driver:\t{source.get('driver', '')}\n"
                     f"    FSType:\t{source.get('fsType', '')}\n"
                     f"    ReadOnly:\t{go_bool(source.get('readOnly'))}\n")
    attributes = source.get("volumeAttributes") or {}
    w.write(LEVEL_2, "VolumeAttributes:\t")
    if not attributes:
        w.write_line("<none>")
        return
    for index, key in enumerate(sorted(attributes)):
        if index:
            w.write(LEVEL_2, "\t")
        line = f"{key}={attributes[key]}"
        w.write(LEVEL_2, f"{line[:MAX_ANNOTATION_LEN]}...\n" if len(line) > MAX_ANNOTATION_LEN
                else line + "\n")


def _image(source: Obj, w: PrefixWriter) -> None:
    w.write(LEVEL_2, "Type:\tImage (a container image or OCI artifact)\n"
                     f"    Reference:\t{source.get('reference', '')}\n"
                     f"    PullPolicy:\t{source.get('pullPolicy', '')}\n")


_VOLUME_PRINTERS = {  # in describeVolumes' order of precedence
    "hostPath": _host_path, "emptyDir": _empty_dir, "secret": _secret,
    "configMap": _config_map, "nfs": _nfs,
    "persistentVolumeClaim": _persistent_volume_claim, "downwardAPI": _downward_api,
    "projected": _projected, "csi": _csi, "image": _image,
}
