#!/bin/bash
# Run HERE: writes the qgate source to run on the device machine, `git archive` of REF (default HEAD of the
# checkout this script sits in), plus the signing key folder if KEYDIR is set, into DEST/qgate-src.tar.
# Usage: perf/gpu/pack_source.sh [REF]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(git -C "$HERE" rev-parse --show-toplevel)}
DEST=${DEST:-$ROOT/.gpu}; REF=${1:-HEAD}
mkdir -p "$DEST"
git -C "$ROOT" archive --format=tar -o "$DEST/qgate-src.tar" "$REF"
git -C "$ROOT" describe --always --tags "$REF" > "$DEST/qgate-src.describe"
echo "qgate source $(cat "$DEST/qgate-src.describe") -> $DEST/qgate-src.tar ($(du -h "$DEST/qgate-src.tar" | cut -f1))"
