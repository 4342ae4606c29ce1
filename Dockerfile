# The image of every service in docker-compose.yml (see README.md, "With Docker"): the
# Debian packages `make apt` installs and the project in a venv, as `make deps` sets up a
# machine, plus the shipped images as OCI archives.
FROM debian:12

# The packages of the Makefile's `apt` target (docker-compose aside: it runs on the host);
# policy-rc.d keeps their services (etcd, containerd, docker-registry) from starting here.
RUN printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
 && apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      etcd-server etcd-client python3-venv containerd runc containernetworking-plugins \
      busybox-static iproute2 iptables nftables docker-registry conntrack

# Certificate authorities to trust beyond Debian's, for a network whose HTTPS goes through
# a TLS-inspecting proxy (pip reaches PyPI over HTTPS): compose/ca-certificates/*.crt,
# none unless you put them there (README.md, "With Docker").
COPY compose/ca-certificates/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt

WORKDIR /opt/minikube-py

# The dependencies pyproject.toml pins, in a layer of their own: a rebuild after a change
# to the code alone keeps it.
COPY pyproject.toml .
RUN python3 -m venv .venv \
 && .venv/bin/pip install -q $(.venv/bin/python -c 'import tomllib; print(" ".join(\
      tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')

# Then minikube_py/gen from proto/ (the Makefile's `proto` target: tools/genproto.py,
# which needs grpcio-tools, one of the dependencies) and the package itself.
COPY . .
RUN .venv/bin/python tools/genproto.py \
 && .venv/bin/pip install -q --no-deps .
ENV PATH=/opt/minikube-py/.venv/bin:$PATH

# pause, busybox, echo, nginx and python as OCI archives; the `images` service pushes
# them to the registry (nginx's packages are downloaded here, with apt-get download).
RUN minikube-py image build --output /var/lib/minikube-py/images
# The component images (etcd, kube-apiserver, ..., kube-proxy, coredns: `up`'s, built from
# this image's packages and venv) as an OCI layout, with their references, which the
# static pods and the add-ons name; the `images` service pushes them too.
RUN python -m minikube_py.cluster.compose component-images \
      --output /var/lib/minikube-py/component-images
