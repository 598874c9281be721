#!/usr/bin/env bash
# Installs the pinned real Codex app-server into a git-ignored cache folder of the project,
# for the end-to-end tests and the demo recorder. Idempotent: does nothing when it is there.
# The linux binary is an *optional* dependency of @openai/codex: never pass --omit=optional.
set -euo pipefail
CODEX_VERSION="0.171.0"
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$root/.cache/codex-$CODEX_VERSION"
bin="$prefix/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
if [ ! -x "$bin" ]; then
  command -v npm >/dev/null || { echo "setup-codex: npm is required (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@openai/codex@$CODEX_VERSION" >&2
fi
[ -x "$bin" ] || { echo "setup-codex: $bin missing after install" >&2; exit 1; }
echo "$bin"
