"""Write a compose node's containerd config and CNI network, as `minikube-py up` does:
`node_config.py NODE BASE_DIR POD_CIDR REGISTRY`."""

import sys
from pathlib import Path

from minikube_py.kubelet.runtime_setup import (
    NodeRuntimeConfig,
    write_cni_config,
    write_containerd_config,
)

node, base_dir, pod_cidr, registry = sys.argv[1:5]
config = NodeRuntimeConfig(node_name=node, base_dir=Path(base_dir), pod_cidr=pod_cidr,
                           registry=registry)
write_containerd_config(config)
write_cni_config(config)
print(config.endpoint)
