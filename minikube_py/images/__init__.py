"""Container images built on this machine from Debian's packages and the project's venv, and
pushed to the cluster's own registry, from which every node pulls them.

    oci.py         layers, image config, manifest, the OCI image layout tar (image-spec)
    debian.py      Debian packages: `apt-get download`, unpacked, never installed; ldd
    programs.py    the files of real programs: nginx, python3.11, etcd, iptables/nft
    catalog.py     the images tutorials name (pause, busybox, echo, nginx, python)
    resource_consumer.py
                   the program of the resource-consumer image: CPU and memory load on
                   request (upstream's test/images/resource-consumer)
    registry.py    pushing to a registry (distribution API: blobs, mounts, manifests)
    wheels.py      the project's runtime dependencies: the closure of its requirements
    bytecode.py    .pyc files compiled once, by the image's python3.11
    layers.py      layers kept and built again only when a file they hold changed
    components.py  the control plane's images: localhost/minikube-py/kube-apiserver, ...
"""
