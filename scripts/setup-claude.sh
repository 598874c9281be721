#!/usr/bin/env bash
# Installs the pinned real Claude Code CLI into a git-ignored cache folder of the project, for the
# end-to-end tests. Idempotent: does nothing when it is there. The native linux binary is the *optional*
# dependency @anthropic-ai/claude-code-linux-x64: never pass --omit=optional.
set -euo pipefail
# An older version for a comparison run: scripts/setup-claude.sh 2.1.63 (pinned by the caller).
CLAUDE_VERSION="${1:-2.1.332}"
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$root/.cache/claude-code-$CLAUDE_VERSION"
pkg="$prefix/node_modules/@anthropic-ai/claude-code"
find_bin() {
  # The native build, when the package ships one; else the package's own launcher.
  local b
  for b in "$prefix/node_modules/@anthropic-ai/claude-code-linux-x64/claude" \
           "$prefix/node_modules/@anthropic-ai/claude-code-linux-x64/bin/claude" \
           "$prefix/node_modules/.bin/claude"; do
    if [ -x "$b" ]; then echo "$b"; return 0; fi
  done
  return 1
}
installed_version() {
  [ -f "$pkg/package.json" ] && node -p "require('$pkg/package.json').version" 2>/dev/null
}
if [ "$(installed_version || true)" != "$CLAUDE_VERSION" ] || ! find_bin >/dev/null; then
  command -v npm >/dev/null || { echo "setup-claude: npm is required (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_VERSION" >&2
fi
bin="$(find_bin)" || { echo "setup-claude: no claude binary under $prefix after install" >&2; exit 1; }
echo "$bin"
