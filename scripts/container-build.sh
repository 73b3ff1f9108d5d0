#!/bin/sh
# Builds the stashd image with Debian's podman where no image registry is reachable: the base
# image is made locally with debootstrap from the Debian mirror apt already uses, imported into
# podman, and handed to the Dockerfile as --build-arg BASE. Run as root (debootstrap needs it).
#
#   sh scripts/container-build.sh [build]     base (once) + image localhost/stashd:latest
#   sh scripts/container-build.sh check       can podman build and run here? (changes nothing)
#   sh scripts/container-build.sh podman ARGS podman with this machine's settings (below)
#
# Exit status 77 (the usual "skipped" status) with the reason on stderr when podman or
# debootstrap is missing or podman cannot run here, so CI may skip it:
#   sh scripts/container-build.sh || [ $? -eq 77 ]
#
# Sandboxes often refuse podman's defaults: raising the open-files limit above the caller's own
# (no CAP_SYS_RESOURCE), or crun on hybrid cgroups. The first of these settings with which a
# container starts is kept in $CONF (a containers.conf, given to podman as CONTAINERS_CONF; delete
# it to choose again): podman's defaults; the caller's limits; those limits with runc, not crun.
#
# Settings (environment):
#   STASHD_IMAGE          tag to build (default localhost/stashd:latest)
#   STASHD_BASE_SUITE     Debian suite of the base (default trixie: the first with Node.js 20)
#   STASHD_DEBIAN_MIRROR  mirror for debootstrap (default: the first one in apt's sources)
#   STASHD_REBUILD_BASE=1 make the base again (e.g. for Debian's security updates)
set -eu
cd "$(dirname "$0")/.."

IMAGE=${STASHD_IMAGE:-localhost/stashd:latest}
SUITE=${STASHD_BASE_SUITE:-trixie}
BASE=localhost/stashd-base:$SUITE
CONF=/var/tmp/stashd-containers.conf

skip() {
  echo "container-build: skipped: $*" >&2
  exit 77
}

# podman with the settings in file $1 (an empty file: podman's own defaults).
pm_with() {
  conf=$1
  shift
  if [ -s "$conf" ]; then CONTAINERS_CONF=$conf podman "$@"; else podman "$@"; fi
}

pm() { pm_with "$CONF" "$@"; }

# Exits 77 unless podman, debootstrap (when the base is still to be made) and root are here.
check_tools() {
  command -v podman >/dev/null 2>&1 || skip "podman is not installed (apt-get install podman)"
  out=$(podman info 2>&1) || skip "podman cannot run here: $(echo "$out" | tail -n 1)"
  if [ "${STASHD_REBUILD_BASE:-}" = 1 ] || ! podman image exists "$BASE"; then
    command -v debootstrap >/dev/null 2>&1 ||
      skip "debootstrap is not installed (apt-get install debootstrap)"
    [ "$(id -u)" = 0 ] || skip "making $BASE with debootstrap needs root"
  fi
}

# The first Debian mirror in apt's configuration (deb822 .sources or one-line .list format).
apt_mirror() {
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    url=$(sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*debian\/*\)$/\1/p' \
      -e 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*debian\/*\)[[:space:]].*/\2/p' "$f" | head -n 1)
    if [ -n "$url" ]; then
      echo "$url"
      return
    fi
  done
  echo http://deb.debian.org/debian
}

# debootstrap's minbase, with the suite's updates and security sources like the official
# debian:<suite>-slim images, without the downloaded .debs; imported as $BASE.
make_base() {
  mirror=${STASHD_DEBIAN_MIRROR:-$(apt_mirror)}
  root=$(mktemp -d /var/tmp/stashd-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "container-build: debootstrap --variant=minbase $SUITE $mirror (a few minutes)"
  if ! debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$root.log" 2>&1; then
    tail -n 20 "$root.log" >&2
    echo "container-build: debootstrap failed (whole log: $root.log)" >&2
    exit 1
  fi
  rm -f "$root.log"
  security=$(echo "$mirror" | sed 's|/debian/*$|/debian-security|')
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" --numeric-owner -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
  rm -rf "$root"
  trap - EXIT
}

# Writes $CONF with the first settings under which a container from $BASE starts (see the top).
# Tried in a file of this process's own, then moved into place: builds may run side by side.
choose_settings() {
  files=$(ulimit -Hn)
  procs=$(awk '/^Max processes/ { print $4 }' /proc/self/limits)
  if [ "$procs" = unlimited ] || [ "$procs" -gt 32768 ]; then procs=32768; fi
  limits="[containers]
default_ulimits = [\"nofile=$files:$files\", \"nproc=$procs:$procs\"]"
  trial="$CONF.$$"
  for settings in "" "$limits" "$limits
[engine]
runtime = \"runc\""; do
    if [ -n "$settings" ]; then printf '%s\n' "$settings" >"$trial"; else : >"$trial"; fi
    if err=$(pm_with "$trial" run --rm --network none "$BASE" true 2>&1); then
      mv "$trial" "$CONF"
      return
    fi
  done
  rm -f "$trial"
  skip "podman cannot start a container here: $(echo "$err" | tail -n 1)"
}

# The host's extra CA file (a TLS-intercepting proxy's) is mounted into the build for npm.
build_image() {
  set -- --format docker --network host --build-arg "BASE=$BASE" -t "$IMAGE"
  ca=${NODE_EXTRA_CA_CERTS:-}
  if [ -n "$ca" ] && [ -f "$ca" ]; then
    set -- "$@" -v "$ca:/run/stashd-build-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/stashd-build-ca.crt
  fi
  # --format docker keeps HEALTHCHECK (the OCI format has no field for it); --network host: the
  # build needs only apt's mirror and the npm registry, no bridge.
  pm build "$@" .
  echo "container-build: built $IMAGE from $BASE (podman settings: ${CONF})"
}

case "${1:-build}" in
build)
  check_tools
  if [ "${STASHD_REBUILD_BASE:-}" = 1 ] || ! podman image exists "$BASE"; then make_base; fi
  [ -f "$CONF" ] || choose_settings
  build_image
  ;;
check)
  check_tools
  if podman image exists "$BASE" && [ ! -f "$CONF" ]; then choose_settings; fi
  echo "container-build: podman can build here"
  ;;
podman)
  shift
  pm "$@"
  ;;
*)
  echo "usage: sh scripts/container-build.sh [build | check | podman ARGS...]" >&2
  exit 2
  ;;
esac
