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
      busybox-static iproute2 iptables nftables docker-registry conntrack binutils

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
 && .venv/bin/pip install -q $(.venv/bin/python -c 'import tomllib; project = tomllib.load(\
      open("pyproject.toml", "rb"))["project"]; print(" ".join(\
      project["dependencies"] + project["optional-dependencies"]["proto"]))')

# The steps that need only part of the project come before the rest of it is copied, so
# that a change elsewhere (the usual one) keeps their layers and builds only what follows.
# minikube_py/gen from proto/ (the Makefile's `proto` target: tools/genproto.py, which
# needs grpcio-tools, the `proto` extra, installed above).
COPY proto/ proto/
COPY tools/genproto.py tools/
RUN .venv/bin/python tools/genproto.py

# pause, busybox, echo, nginx and python as OCI archives, what `minikube-py image build`
# writes, from minikube_py/images alone; the `images` service pushes them to the registry
# (nginx's packages are downloaded here, with apt-get download).
COPY minikube_py/__init__.py minikube_py/
COPY minikube_py/images/ minikube_py/images/
RUN .venv/bin/python -c "from pathlib import Path; \
from minikube_py.images.catalog import CATALOG, build_image; \
[build_image(spec, Path('/var/lib/minikube-py/images')) for spec in CATALOG]"

# Then the package itself.
COPY . .
RUN .venv/bin/pip install -q --no-deps .
ENV PATH=/opt/minikube-py/.venv/bin:$PATH
# The component images (etcd, kube-apiserver, ..., kube-proxy, coredns: `up`'s, built from
# this image's packages and venv) as an OCI layout, with their references, which the
# static pods and the add-ons name; the `images` service pushes them too.
RUN python -m minikube_py.cluster.compose component-images \
      --output /var/lib/minikube-py/component-images
