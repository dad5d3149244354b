#!/usr/bin/env bash
# Do the clean passes stay clean? The hello flake's evaluated seconds with
# the clean captures (tcpdump x2, pg_stat_statements, wait samples) and with
# none (--bare: spans only), alternated, RUNS of each, cold and warm.
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
need_pkg tcpdump tcpdump
RUNS="${RUNS:-5}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-overhead.XXXXXX)"
chmod 755 "$WORK"
remove_on_exit "$WORK"
for i in $(seq "$RUNS"); do
    for mode in captures bare; do
        flag=(); [ "$mode" = bare ] && flag=(--bare)
        "$BIN" run --out "$WORK/$mode$i" --lab-dir "$WORK/lab" --passes cold-clean,warm-clean --repeat 1 --no-report "${flag[@]}" >/dev/null 2>&1
    done
    say "round $i of $RUNS"
done
python3 - "$WORK" "$RUNS" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
print(f"run overhead: hello flake on the lab, evaluated seconds, median of {runs} each, alternated")
for p in ("cold-clean", "warm-clean"):
    got = {m: [json.load(open(f"{work}/{m}{i}/{p}/run.json"))["evaluated_s"] for i in range(1, runs + 1)] for m in ("captures", "bare")}
    c, b = statistics.median(got["captures"]), statistics.median(got["bare"])
    print(f"  {p:11} with clean captures {c:6.3f} s (min {min(got['captures']):.3f}, max {max(got['captures']):.3f})   "
          f"spans only {b:6.3f} s (min {min(got['bare']):.3f}, max {max(got['bare']):.3f})   ratio {c / b:.3f}")
PY
