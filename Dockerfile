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

WORKDIR /opt/minikube-py
COPY . .

# The package and its dependencies; then minikube_py/gen from proto/ (the Makefile's
# `proto` target: tools/genproto.py, which needs grpcio-tools, one of the dependencies);
# then the package again, now with its generated code.
RUN python3 -m venv .venv \
 && .venv/bin/pip install -q . \
 && .venv/bin/python tools/genproto.py \
 && .venv/bin/pip install -q --no-deps --force-reinstall .
ENV PATH=/opt/minikube-py/.venv/bin:$PATH

# pause, busybox, echo, nginx and python as OCI archives; the `images` service pushes
# them to the registry (nginx's packages are downloaded here, with apt-get download).
RUN minikube-py image build --output /var/lib/minikube-py/images
