#!/usr/bin/env bash
# Regenerates assets/demo.ndjson, the recording `swarmtop demo` plays: the end-to-end scenario run through
# the real `codex app-server` against the scripted mock model, at human pace (about two minutes).
# usage: demo/record.sh [--speed N] [--out FILE]     (see demo/README.md)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/assets/demo.ndjson"
speed=1
while [ $# -gt 0 ]; do
  case "$1" in
    --speed) speed="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: demo/record.sh [--speed N] [--out FILE]" >&2; exit 2 ;;
  esac
done
codex="$("$root/scripts/setup-codex.sh")"
cd "$root"
cargo build --quiet --example record_demo
# Written next to the target first, so an interrupted run never leaves a truncated demo behind.
tmp="$out.partial"
target/debug/examples/record_demo --codex "$codex" --out "$tmp" --speed "$speed"
mv "$tmp" "$out"
ls -l "$out"
