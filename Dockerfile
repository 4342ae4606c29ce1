# The image of every service in docker-compose.yml: Debian 12 with the packages `make
# apt` installs, and the project with its virtualenv (`make deps`).
FROM debian:12
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        etcd-server etcd-client python3-venv containerd runc containernetworking-plugins \
        busybox-static iproute2 iptables docker-registry conntrack make python3-dev gcc \
    && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN make deps
