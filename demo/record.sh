#!/usr/bin/env bash
# Regenerates assets/demo.ndjson, the recording `swarmtop demo` plays: the end-to-end scenario run through
# the real `codex app-server` against the scripted mock model, at human pace (about two minutes).
# usage: demo/record.sh [--speed N] [--out FILE] [--direct]      (see demo/README.md)
#   The server runs under `swarmtop tee --record`, and the tee's own recording is what ships.
#   --direct   record from the harness's client instead (the same envelopes, written by the client)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/assets/demo.ndjson"
speed=1
tee=(--tee "$root/target/debug/swarmtop")
while [ $# -gt 0 ]; do
  case "$1" in
    --speed) speed="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --direct) tee=(); shift ;;
    *) echo "usage: demo/record.sh [--speed N] [--out FILE] [--direct]" >&2; exit 2 ;;
  esac
done
codex="$("$root/scripts/setup-codex.sh")"
cd "$root"
cargo build --quiet --bin swarmtop --example record_demo
# Written next to the target first, so an interrupted run never leaves a truncated demo behind.
tmp="$out.partial"
target/debug/examples/record_demo --codex "$codex" --out "$tmp" --speed "$speed" "${tee[@]}"
mv "$tmp" "$out"
ls -l "$out"
