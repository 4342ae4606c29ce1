#!/usr/bin/env bash
# The base image the Dockerfile starts FROM, debian:12, made without a registry: a Debian 12
# root from Debian's own packages (debootstrap, minbase, as Debian's official image is),
# the apt sources of that image, then `docker import`. For machines that cannot pull from
# Docker Hub; with Docker Hub, `docker pull debian:12` does the same.
#
#   compose/debian-base.sh                    # apt-get install debootstrap docker.io first
#   MIRROR=http://my.mirror/debian compose/debian-base.sh
#
# The image carries this recipe's hash (this script's, and the mirror's) as a label: run
# again, it keeps an image of the same recipe and says so, which takes a second.
set -euo pipefail

MIRROR="${MIRROR:-http://deb.debian.org/debian}"
TAG="${TAG:-debian:12}"
DOCKER="${DOCKER:-docker}"
recipe="$( (cat "$0"; echo "$MIRROR") | sha256sum | cut -c1-16)"

have="$("$DOCKER" image inspect -f '{{index .Config.Labels "org.minikube-py.recipe"}}' "$TAG" \
  2>/dev/null || true)"
if [[ "$have" == "$recipe" ]]; then
  echo "$TAG: made by this recipe already ($recipe)"
  exit 0
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$MIRROR"
# as in Debian's official image: bookworm, its updates and its security updates, in the
# deb822 file; no package lists or downloaded packages kept
rm -f "$root/etc/apt/sources.list"
security="${MIRROR%/debian}/debian-security"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
tar --numeric-owner -C "$root" -c . | "$DOCKER" import \
  --change 'CMD ["bash"]' --change "LABEL org.minikube-py.recipe=$recipe" - "$TAG"
echo "$TAG: made from $MIRROR (recipe $recipe)"
