#!/usr/bin/env bash
# Installs the pinned ccusage, the Claude Code usage tool peers run, into a git-ignored cache folder
# of the project, for the ingest benchmark's side-by-side comparison. Idempotent. Prints the path of
# its native build: the npm package ships a Node launcher plus one prebuilt static binary per
# platform as an *optional* dependency (@ccusage/ccusage-linux-x64), which the bench runs directly so
# that Node's start-up is not counted against the peer. npm unpacks it without the execute bit.
set -euo pipefail
CCUSAGE_VERSION="20.0.24"
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$root/.cache/ccusage-$CCUSAGE_VERSION"
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64) platform=linux-arm64 ;;
  *) echo "setup-ccusage: no native ccusage build for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
bin="$prefix/node_modules/@ccusage/ccusage-$platform/bin/ccusage"
if [ ! -f "$bin" ]; then
  command -v npm >/dev/null || { echo "setup-ccusage: npm is required (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "ccusage@$CCUSAGE_VERSION" >&2
fi
[ -f "$bin" ] || { echo "setup-ccusage: $bin missing after install" >&2; exit 1; }
[ -x "$bin" ] || chmod +x "$bin"
echo "$bin"
