#!/usr/bin/env bash
# Installs the POSIX shells the coordinator's shell-step tests run a deterministic step
# under, each as `sh`: bash, dash, zsh and busybox (Debian packages). Idempotent: does
# nothing when all four are already present.
set -euo pipefail

missing=()
for shell in bash dash zsh busybox; do
  command -v "$shell" >/dev/null 2>&1 || missing+=("$shell")
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "installing the test shells: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "error: need root (or sudo) to install ${missing[*]} with apt-get;" \
      "install them another way (the coordinator's shell-step tests need all four)" >&2
    exit 1
  fi
else
  SUDO=
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found; install ${missing[*]} with this system's package manager" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
