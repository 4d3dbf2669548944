#!/usr/bin/env bash
# Installs the peer that `cargo xtask tasks --peer` compares the local provider with:
# llama-cpp-python's OpenAI-compatible server (PyPI `llama-cpp-python[server]`), in a
# virtualenv of its own at target/peer-venv (or $OXYDRA_PEER_VENV), never in the
# system's Python. It builds llama.cpp from source: ~10+ minutes on 2 cores.
#
# Built with GGML_NATIVE=OFF: with the host's native flags the server died of a
# general protection fault in libggml-cpu on the 2-core machine the benchmark runs
# on. Not part of `cargo xtask ci`. Idempotent: does nothing when the server imports.
set -euo pipefail

VERSION="${OXYDRA_PEER_VERSION:-0.3.36}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${OXYDRA_PEER_VENV:-$ROOT/target/peer-venv}"

if ! command -v python3 >/dev/null 2>&1; then
  echo "python3 not found: install it (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
fi
for tool in cmake c++; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "$tool not found: the peer server builds llama.cpp from source (Debian: apt-get install cmake g++)" >&2
    exit 1
  fi
done
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import llama_cpp.server' >/dev/null 2>&1; then
  echo "the peer server is installed in $VENV"
  exit 0
fi
python3 -m venv "$VENV"
echo "building llama-cpp-python[server]==$VERSION into $VENV (GGML_NATIVE=OFF; this takes a while)"
# Text only: the multimodal (llava/mtmd) library is not built; every core compiles.
CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" nice -n "${OXYDRA_PEER_NICE:-10}" "$VENV/bin/pip" install --no-cache-dir \
  "llama-cpp-python[server]==$VERSION"
"$VENV/bin/python" -c 'import llama_cpp.server'
echo "installed: cargo xtask tasks --peer runs it"
