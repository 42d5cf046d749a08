#!/bin/bash
# Re-cuts the payload when the repository that travels with every device call leaves too little room
# for 61 MiB chunks (the limit is 64 MiB for the tree plus carried files; the tree was 5.9 MiB at
# 92f4d3a): base.tar (b00 b01) and moe.tar.xz become one stream cut into chunks of SIZE.
#   HERE:  perf/gpu/stream_chunks.sh split SRC DEST [SIZE]   (SRC holds b0* base.sha256 moe.tar.xz moe.sha256;
#          writes DEST/s00.. and DEST/stream.meta; SIZE default 57M)
#   THERE: perf/gpu/stream_chunks.sh join CH                 (CH: /tmp/ch, holding the s0* seen so far and
#          stream.meta; writes CH/b00 + base.sha256 once the base is whole, CH/moe.tar.xz + moe.sha256 once
#          the stream is; remote_setup.sh then installs them as usual)
set -euo pipefail
case "$1" in
split)
  SRC=$2 DEST=$3 SIZE=${4:-57M}; mkdir -p "$DEST"; rm -f "$DEST"/s0*
  base=$(cat "$SRC"/b0* | wc -c); moe=$(wc -c < "$SRC/moe.tar.xz")
  cat "$SRC"/b0* "$SRC/moe.tar.xz" | split -b "$SIZE" -d - "$DEST/s"
  echo "base_bytes=$base moe_bytes=$moe base_sha=$(cat "$SRC/base.sha256") moe_sha=$(cat "$SRC/moe.sha256")" > "$DEST/stream.meta"
  ls -l "$DEST"; cat "$DEST/stream.meta" ;;
join)
  CH=$2; eval "$(cat "$CH/stream.meta")"
  have=$(cat "$CH"/s0* | wc -c)
  if [ "$have" -ge "$base_bytes" ] && [ ! -f "$CH/b00" ]; then
    { cat "$CH"/s0* || true; } | head -c "$base_bytes" > "$CH/b00"  # cat ends on SIGPIPE
    echo "$base_sha" > "$CH/base.sha256"
  fi
  if [ "$have" -eq $((base_bytes + moe_bytes)) ] && [ ! -f "$CH/moe.tar.xz" ]; then
    cat "$CH"/s0* | tail -c "$moe_bytes" > "$CH/moe.tar.xz"; echo "$moe_sha" > "$CH/moe.sha256"
  fi
  echo "stream: $have of $((base_bytes + moe_bytes)) bytes; $(ls "$CH" | tr '\n' ' ')" ;;
*) echo "usage: $0 split SRC DEST [SIZE] | join CH" >&2; exit 2 ;;
esac
