#!/bin/sh
# Builds the stashd image with podman from a Debian base made locally with debootstrap (no image
# registry needed). Exits 0 with a message when podman or debootstrap cannot run here, so CI may
# call it unconditionally. Run as root: sh scripts/container-build.sh
set -eu
cd "$(dirname "$0")/.."
if ! command -v podman >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  echo "container-build: podman and debootstrap are needed (apt-get install podman debootstrap); skipped"
  exit 0
fi
if ! podman info >/dev/null 2>&1; then
  echo "container-build: podman cannot run here; skipped"
  exit 0
fi
if ! podman image exists localhost/debian:trixie-slim; then
  root=$(mktemp -d)
  debootstrap --variant=minbase trixie "$root"
  tar -C "$root" -c . | podman import - localhost/debian:trixie-slim
  rm -rf "$root"
fi
sed 's|^FROM debian:trixie-slim|FROM localhost/debian:trixie-slim|' Dockerfile >Dockerfile.local
podman build -f Dockerfile.local -t stashd .
rm -f Dockerfile.local
echo "container-build: built image stashd"
