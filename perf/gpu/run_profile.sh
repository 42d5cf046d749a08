#!/bin/bash
# Run THERE after remote_setup.sh: `qgate run PROFILE` (signed with /tmp/signing.pem when present), then
# `qgate verify` of each report with the committed public key (and the profile as subject). Copies the
# run folder to $OUT/<run>.tgz and prints the summary (qgate's own terminal lines + verify's).
# Usage: perf/gpu/run_profile.sh PROFILE [qgate run options...]; PUBKEY overrides the public key;
# RUN_TIMEOUT=S stops qgate (SIGINT) after S seconds, so that its logs still come back inside the
# device call's limit. A run that wrote no report leaves its folder (server logs) as $OUT/<name>-failed.tgz.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); source "$HERE/env.sh"
PROFILE=$1; shift
PUBKEY=${PUBKEY:-/tmp/qgate-src/examples/h200/signing-key.pub.pem}
KEY=(); [ -f /tmp/signing.pem ] && KEY=(--key /tmp/signing.pem)
name=$(basename "$PROFILE" .yaml); S0=$SECONDS
rm -rf /tmp/qruns/$name; mkdir -p /tmp/qruns/$name
TO=(); [ -n "${RUN_TIMEOUT:-}" ] && TO=(timeout --signal=INT --kill-after=30 "$RUN_TIMEOUT")
"${TO[@]}" qgate run "$PROFILE" --out /tmp/qruns/$name --no-progress "${KEY[@]}" "$@" > "$OUT/$name.log" 2>&1
rc=$?; echo "=== qgate run $name: exit $rc after $((SECONDS - S0)) s"; grep -v "^\s*$" "$OUT/$name.log" | tail -30 | cut -c1-400
for run in /tmp/qruns/$name/*/; do
  [ -f "$run/report.intoto.jsonl" ] || continue
  qgate verify "$run/report.intoto.jsonl" --pubkey "$PUBKEY" --profile "$PROFILE" 2>&1 | tail -4
  tar -czf "$OUT/$name.tgz" -C "$(dirname "$run")" "$(basename "$run")"
done
if ! ls /tmp/qruns/$name/*/report.intoto.jsonl >/dev/null 2>&1; then
  tar -czf "$OUT/$name-failed.tgz" -C /tmp/qruns "$name"
  for log in /tmp/qruns/$name/*/logs/*.log; do [ -f "$log" ] && echo "--- $log" && tail -25 "$log" | cut -c1-300; done
fi
exit $rc
