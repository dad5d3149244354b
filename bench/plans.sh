#!/usr/bin/env bash
# Plan fingerprinting at scale: a generated flake of PACKAGES packages
# (default 2000) through one cold-instrumented pass, then the pass's
# auto_explain log read by `evalbench decode auto-explain` (every plan
# parsed and fingerprinted, grouped per statement) and by `compare` of the
# bundle against itself (both sides' plans), 5 runs each through
# `evalbench bench`: medians of wall time and of the peak RSS. Run with
# PACKAGES=200 and 2000 to see how the cost grows with the log.
#
#   bash bench/plans.sh                      # PACKAGES=2000
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
PACKAGES="${PACKAGES:-2000}"
cd "$ROOT"
build_release
scratch_dir plans
lab_down_on_exit "$OUT/lab"
"$BIN" lab gen-flake --out "$OUT/flake" --packages "$PACKAGES"
say "one cold-instrumented pass over $PACKAGES packages (no perf, no strace: the plans are what is measured here)"
"$BIN" run --flake "$OUT/flake" --passes cold-instrumented --no-perf --no-strace --no-report \
    --out "$OUT/bundle" --lab-dir "$OUT/lab" > "$OUT/run.log" 2>&1 || { tail -20 "$OUT/run.log"; exit 1; }
LOG="$OUT/bundle/cold-instrumented/pg/auto_explain.log"
PLANS=$(grep -c ' plan:$' "$LOG" || true)
say "the log: $(du -h "$LOG" | cut -f1) ($(stat -c %s "$LOG") bytes), $PLANS plans"
"$BIN" decode auto-explain "$LOG" | head -3
"$BIN" bench --runs 5 --warmup 1 \
    -- "$BIN decode auto-explain $LOG" \
    -- "$BIN compare $OUT/bundle $OUT/bundle --pass-a cold-instrumented --pass-b cold-instrumented"
# Peak RSS as the kernel counts it (cgroup v1's figure above leaves out
# pages another cgroup already paid for, such as the binary's), and the
# log ten times over: memory follows the distinct plans, not the log.
for i in $(seq 10); do cat "$LOG"; done > "$OUT/ten.log"
for f in "$LOG" "$OUT/ten.log"; do
    /usr/bin/time -f "%e s wall, %M KiB peak RSS: $(stat -c %s "$f") bytes" "$BIN" decode auto-explain "$f" > /dev/null
done
