"""The local-path provisioner: PersistentVolumes on the node a claim's pod was scheduled to.

    __main__.py     `python -m minikube_py.provisioner`: flags, informers, both loops
    localpath.py    provisioning and deleting volumes (external-provisioner + rancher's
                    local-path-provisioner)
    resizer.py      growing them when their claims ask for more (external-resizer)
"""
