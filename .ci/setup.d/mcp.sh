#!/usr/bin/env bash
# Installs what the MCP tests (tests/tools/mcp, marker `mcp`) talk to:
#   - the npm reference servers into a project-local prefix (.cache/npm), never globally;
#   - the SDK, jq and the PyPI reference servers into the venv if missing ($VENV from .ci/run, else
#     .venv; extras `mcp` and `dev` list them, so normally this only checks).
# Idempotent: a second run with everything present does nothing but check.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

py="${VENV:-$root/.venv}/bin/python"
if [ -x "$py" ]; then
    if ! "$py" -c 'import mcp, jq, mcp_server_time, mcp_server_git' 2>/dev/null; then
        "$py" -m pip install --quiet "mcp>=2.3,<3" "jq>=1.8" mcp-server-time mcp-server-git
    fi
fi

prefix="$root/.cache/npm"
bin="$prefix/node_modules/.bin"
if [ -x "$bin/mcp-server-filesystem" ] && [ -x "$bin/mcp-server-everything" ]; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "mcp.sh: npm not found; the npm MCP servers are not installed (their tests will skip)" >&2
    exit 0
fi
mkdir -p "$prefix"
# --no-audit/--no-fund: no extra registry traffic; the install itself is the only network use.
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-everything
