#!/usr/bin/env bash
# End-to-end test of `mnemo mcp` with the official MCP TypeScript SDK client
# (e2e/mcp-ts): builds the binary, installs the pinned SDK, runs the script.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== mcp e2e (TypeScript SDK client)"
go build -o bin/mnemo ./cmd/mnemo
(cd e2e/mcp-ts && npm ci --silent --no-audit --no-fund >/dev/null)
node e2e/mcp-ts/e2e.mjs "$PWD/bin/mnemo"
