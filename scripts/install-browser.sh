#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver (Debian packages `chromium` and
# `chromium-driver`), which the coordinator's web console test drives
# (crates/cli/tests/it/console_browser.rs). Idempotent: does nothing when both are
# already present.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi

echo "installing headless Chromium and chromedriver"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "error: need root (or sudo) to install chromium and chromium-driver with apt-get;" \
      "install them another way (the web console's browser test needs both)" >&2
    exit 1
  fi
else
  SUDO=
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found; install chromium and chromedriver with this system's" \
    "package manager" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
