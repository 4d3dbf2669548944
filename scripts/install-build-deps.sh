#!/usr/bin/env bash
# Installs what the C++ build of the embedded local model (llama.cpp, built by the
# `llama-cpp-sys-2` crate) needs: cmake, a C/C++ compiler, and libclang for bindgen.
# With `--ci` (as `cargo xtask ci` runs it), also valgrind, which CI's cost guard runs
# the scenario under (`cargo xtask cost-guard`, docs/performance.md).
# Idempotent: does nothing when everything is already present.
set -euo pipefail

ci=false
for arg in "$@"; do
  case "$arg" in
    --ci) ci=true ;;
    *) echo "error: install-build-deps.sh: unknown option $arg (known: --ci)" >&2; exit 2 ;;
  esac
done

missing=()
if $ci; then
  command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
fi
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
command -v clang >/dev/null 2>&1 || missing+=(clang)
if ! ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so'; then
  missing+=(libclang-dev)
fi

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: the local model's build (llama.cpp) needs ${missing[*]} (cmake, a C++ compiler," >&2
  echo "error: clang and libclang; with --ci, valgrind for the cost guard); install them with" >&2
  echo "error: your system's package manager" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "error: the local model's build (llama.cpp; with --ci, the cost guard) needs Debian packages that are missing: ${missing[*]}" >&2
    echo "error: install them as root, then run this again:" >&2
    echo "    sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "installing the build dependencies (Debian packages): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
