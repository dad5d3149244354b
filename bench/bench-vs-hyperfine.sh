#!/usr/bin/env bash
# evalbench bench's own timing overhead against hyperfine on trivial
# commands, side by side, interleaved ROUNDS times: medians of each tool's
# reported median.
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_pkg hyperfine hyperfine
ROUNDS="${ROUNDS:-5}"
RUNS="${RUNS:-50}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-hf.XXXXXX)"
remove_on_exit "$WORK"
for cmd in "true" "sleep 0.01"; do
    for i in $(seq "$ROUNDS"); do
        # Both run the command directly, without a shell in between.
        hyperfine -N --runs "$RUNS" --warmup 3 --export-json "$WORK/hf.json" "$cmd" >/dev/null 2>&1
        python3 -c "import json; print(json.load(open('$WORK/hf.json'))['results'][0]['median'])" >> "$WORK/hf.$i"
        # shellcheck disable=SC2086
        "$BIN" bench --json --runs "$RUNS" --warmup 3 -- $cmd > "$WORK/eb.json"
        python3 -c "import json; print(json.load(open('$WORK/eb.json'))['commands'][0]['wall_s']['median'])" >> "$WORK/eb.$i"
        # shellcheck disable=SC2086
        "$BIN" bench --json --no-memory --runs "$RUNS" --warmup 3 -- $cmd > "$WORK/nm.json"
        python3 -c "import json; print(json.load(open('$WORK/nm.json'))['commands'][0]['wall_s']['median'])" >> "$WORK/nm.$i"
    done
    python3 - "$cmd" "$WORK" "$ROUNDS" <<'PY'
import statistics, sys
cmd, work, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
hf = [float(open(f"{work}/hf.{i}").read().split()[-1]) for i in range(1, rounds + 1)]
eb = [float(open(f"{work}/eb.{i}").read().split()[-1]) for i in range(1, rounds + 1)]
nm = [float(open(f"{work}/nm.{i}").read().split()[-1]) for i in range(1, rounds + 1)]
h, e, n = statistics.median(hf), statistics.median(eb), statistics.median(nm)
print(f"{cmd!r:14} hyperfine {h * 1000:8.3f} ms   evalbench bench {e * 1000:8.3f} ms (ratio {e / h:.3f}), --no-memory {n * 1000:8.3f} ms (ratio {n / h:.3f}); goal within 5%")
PY
    rm -f "$WORK"/hf.* "$WORK"/eb.* "$WORK"/nm.*
done
