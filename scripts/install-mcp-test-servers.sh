#!/usr/bin/env bash
# Installs the MCP servers the oxydra-mcp integration tests run against
# (@modelcontextprotocol/server-everything and @modelcontextprotocol/server-filesystem)
# and the MCP Inspector, whose CLI mode drives `oxydra mcp serve` in
# crates/cli/tests/it/mcp_inspector.rs (@modelcontextprotocol/inspector), into a project-local directory (default: target/mcp-servers; override with
# OXYDRA_MCP_SERVERS_DIR). Idempotent: does nothing when they are already installed.
# Without node/npm it says so and exits 0; the tests then fail loudly unless
# OXYDRA_SKIP_MCP_TESTS=1 is set.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${OXYDRA_MCP_SERVERS_DIR:-$ROOT/target/mcp-servers}"

# Versions known to run on node 20 (neither package declares `engines`; their
# dependencies glob/minimatch need node 20 or >= 22).
EVERYTHING="@modelcontextprotocol/server-everything@2026.8.31"
FILESYSTEM="@modelcontextprotocol/server-filesystem@2026.8.31"
# The last Inspector without `engines: node >= 22` (0.16.0 and later need node >= 22.7.5).
INSPECTOR="@modelcontextprotocol/inspector@0.15.0"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "install-mcp-test-servers: node/npm not found; MCP test servers NOT installed." >&2
    echo "install-mcp-test-servers: the oxydra-mcp tests will fail unless OXYDRA_SKIP_MCP_TESTS=1." >&2
    exit 0
fi

EVERYTHING_JS="$DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM_JS="$DIR/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
INSPECTOR_JS="$DIR/node_modules/@modelcontextprotocol/inspector-cli/build/index.js"
if [ -f "$EVERYTHING_JS" ] && [ -f "$FILESYSTEM_JS" ] && [ -f "$INSPECTOR_JS" ]; then
    echo "install-mcp-test-servers: already installed in $DIR"
    exit 0
fi

mkdir -p "$DIR"
echo "install-mcp-test-servers: installing into $DIR (node $(node --version))"
npm install --no-audit --no-fund --no-save --prefix "$DIR" "$EVERYTHING" "$FILESYSTEM" "$INSPECTOR"

for js in "$EVERYTHING_JS" "$FILESYSTEM_JS" "$INSPECTOR_JS"; do
    if [ ! -f "$js" ]; then
        echo "install-mcp-test-servers: expected $js after install, it is missing" >&2
        exit 1
    fi
done
echo "install-mcp-test-servers: done"
