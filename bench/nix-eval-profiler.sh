#!/usr/bin/env bash
# What nix's own evaluation profiler (Nix >= 2.30, --eval-profiler
# flamegraph) costs an evaluation, measured side by side in one run: the
# same `nix eval` of a flake's packages' drvPaths (as the lab's evaluator
# asks), without the profiler, at nix's default 99 Hz and at the lab's
# 999 Hz, interleaved round by round so that a noisy neighbour hits each
# alike. Per variant: the median wall time and nix's own time (time.cpu
# from NIX_SHOW_STATS), and each one's ratio to "off" with a bootstrap 95%
# interval. An A/A line compares the "off" runs of even rounds with those
# of odd rounds: the noise a ratio must clear.
#
#   bash bench/nix-eval-profiler.sh          # ROUNDS=15, the hello flake and a 2,000-package nixpkgs shape
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_unstable_nix
ROUNDS="${ROUNDS:-15}"
PACKAGES="${PACKAGES:-2000}"
NIX="$ROOT/target/nix-unstable/bin/nix"
cd "$ROOT"
build_release
scratch_dir nix-eval-profiler
export NIX_CONFIG=$'experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\n'
mkdir -p "$OUT/hello" && cp examples/hello-flake/flake.nix "$OUT/hello/"
"$BIN" lab gen-flake --shape nixpkgs --packages "$PACKAGES" --out "$OUT/nixpkgs" >/dev/null
say "$("$NIX" --version); $ROUNDS rounds"
for flake in hello nixpkgs; do
    for round in $(seq "$ROUNDS"); do
        for variant in off 99 999; do
            opts=()
            [ "$variant" = off ] || opts=(--option eval-profiler flamegraph --option eval-profile-file "$OUT/prof.$variant" --option eval-profiler-frequency "$variant")
            start=$(date +%s%N)
            NIX_SHOW_STATS=1 NIX_SHOW_STATS_PATH="$OUT/stats.json" "$NIX" eval --json --option eval-cache false "${opts[@]}" \
                "path:$OUT/$flake#packages.x86_64-linux" --apply 'ps: builtins.mapAttrs (n: p: p.drvPath) ps' >/dev/null 2>"$OUT/err" \
                || { cat "$OUT/err"; exit 1; }
            end=$(date +%s%N)
            cpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["time"]["cpu"])' "$OUT/stats.json")
            samples=0
            [ "$variant" = off ] || samples=$(awk '{n += $NF} END {print n + 0}' "$OUT/prof.$variant")
            echo "$flake $round $variant $(( (end - start) / 1000 )) $cpu $samples" >> "$OUT/runs.txt"
        done
    done
done
python3 - "$OUT/runs.txt" <<'PY'
import random, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
random.seed(7)
def ci(a, b):
    """Median ratio b/a with a bootstrap 95% interval."""
    rs = []
    for _ in range(2000):
        x = [random.choice(a) for _ in a]; y = [random.choice(b) for _ in b]
        rs.append(statistics.median(y) / statistics.median(x))
    rs.sort()
    return statistics.median(b) / statistics.median(a), rs[50], rs[1949]
for flake in ("hello", "nixpkgs"):
    get = lambda v, i: [float(r[i]) for r in rows if r[0] == flake and r[2] == v]
    print(f"\n{flake}: median of {len(get('off', 3))} interleaved rounds")
    print(f"  {'variant':8} {'wall ms':>9} {'ratio (95% CI)':>24} {'time.cpu s':>11} {'ratio (95% CI)':>24} {'samples':>8}")
    for v in ("off", "99", "999"):
        w, c = get(v, 3), get(v, 4)
        wr = ci(get("off", 3), w); cr = ci(get("off", 4), c)
        s = statistics.median(get(v, 5))
        print(f"  {v:8} {statistics.median(w)/1000:9.1f} {wr[0]:8.3f} [{wr[1]:.3f}, {wr[2]:.3f}] {statistics.median(c):11.3f} {cr[0]:8.3f} [{cr[1]:.3f}, {cr[2]:.3f}] {s:8.0f}")
    off = [r for r in rows if r[0] == flake and r[2] == "off"]
    even = [float(r[4]) for r in off if int(r[1]) % 2 == 0]; odd = [float(r[4]) for r in off if int(r[1]) % 2 == 1]
    aa = ci(even, odd)
    print(f"  A/A (off, odd rounds against even, time.cpu): {aa[0]:.3f} [{aa[1]:.3f}, {aa[2]:.3f}]")
PY
