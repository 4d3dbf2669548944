#!/usr/bin/env bash
# Installs the official MCP Python SDK (PyPI `mcp`), the MCP client no one here wrote
# that the `oxydra mcp serve` end-to-end tests (crates/cli/tests/it/mcp_serve.rs) drive
# the server with. Idempotent: does nothing when `import mcp` already works.
# Without python3 it says so and exits 0; the tests then fail under CI=true and are
# skipped elsewhere.
set -euo pipefail

# The version the tests were written against (its `MCPError` and client API).
MCP_VERSION="2.3.0"

if ! command -v python3 >/dev/null 2>&1; then
  echo "python3 not found: the oxydra mcp serve client tests cannot run" >&2
  exit 0
fi
if python3 -c 'import mcp' >/dev/null 2>&1; then
  exit 0
fi
echo "installing the MCP Python SDK (mcp==$MCP_VERSION)"
python3 -m pip install --quiet "mcp==$MCP_VERSION"
