#!/usr/bin/env bash
# Install the container engine icefloe's container path uses, from Debian's packages:
# podman (with runc), debootstrap (the base image is made locally, no registry is needed) and
# docker-compose (the compose client, talking to podman's Docker API socket). Idempotent: it
# installs only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail
packages=(podman runc debootstrap docker-compose)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "container engine: ${packages[*]} installed already"
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "container engine: installing ${missing[*]} with apt-get"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" \
  containernetworking-plugins golang-github-containernetworking-plugin-dnsname iptables catatonit
