#!/usr/bin/env bash
# Installs the pinned real OpenCode CLI into a git-ignored cache folder of the project, for the
# end-to-end tests. Idempotent: does nothing when it is there. The native binary is the *optional*
# dependency opencode-linux-x64 of opencode-ai: never pass --omit=optional. Prints the binary.
set -euo pipefail
OPENCODE_VERSION="1.18.33"
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$root/.cache/opencode-$OPENCODE_VERSION"
bin="$prefix/node_modules/opencode-linux-x64/bin/opencode"
if [ ! -x "$bin" ]; then
  command -v npm >/dev/null || { echo "setup-opencode: npm is required (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "opencode-ai@$OPENCODE_VERSION" >&2
fi
[ -x "$bin" ] || { echo "setup-opencode: $bin missing after install" >&2; exit 1; }
echo "$bin"
