#!/usr/bin/env bash
# What nix's profile costs, measured side by side in one run:
#   - the fold (`evalbench decode nix-trace`, one core): trace lines per second,
#     and its peak RSS on a trace and on the same trace four times over (it
#     keeps stacks, not lines: its memory does not grow with the trace);
#   - an instrumented pass of a nixpkgs-shaped flake of PACKAGES packages,
#     with the trace (the default) and without (`run --no-nix-trace`), both
#     without strace (see below):
#     evaluated seconds and the eval subprocess's time.
#
#   bash bench/nix-profile.sh                 # PACKAGES=2000
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
PACKAGES="${PACKAGES:-2000}"
cd "$ROOT"
build_release
scratch_dir nix-profile
lab_down_on_exit "$OUT/lab"
export NIX_CONFIG=$'experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\n'
"$BIN" lab gen-flake --shape nixpkgs --packages "$PACKAGES" --out "$OUT/flake"
say "a trace of one evaluation of $PACKAGES packages"
nix eval --json --option eval-cache false --trace-function-calls "path:$OUT/flake#packages.x86_64-linux" \
    --apply 'ps: builtins.mapAttrs (n: p: p.drvPath) ps' >/dev/null 2>"$OUT/trace.txt"
cat "$OUT/trace.txt" "$OUT/trace.txt" "$OUT/trace.txt" "$OUT/trace.txt" > "$OUT/trace4.txt"
for t in trace trace4; do
    /usr/bin/time -f "%e %M" -o "$OUT/$t.time" "$BIN" decode nix-trace "$OUT/$t.txt" > "$OUT/$t.folded"
done
for mode in trace no-trace; do
    flag=""; [ "$mode" = no-trace ] && flag="--no-nix-trace"
    say "cold-instrumented pass, $mode"
    # --no-strace: under strace every syscall of an untraced-for-profile nix
    # is free and every one of a plain nix is not; without it both run alike.
    "$BIN" run --flake "$OUT/flake" --passes cold-instrumented --no-report --no-strace $flag --out "$OUT/$mode" --lab-dir "$OUT/lab" > "$OUT/$mode.log" 2>&1 \
        || { tail -20 "$OUT/$mode.log"; exit 1; }
done
PYTHONPATH="$ROOT/bench" python3 - "$OUT" "$PACKAGES" <<'PY'
from spans import eval_total
import glob, json, sys
out, packages = sys.argv[1], int(sys.argv[2])
lines = sum(1 for l in open(f"{out}/trace.txt") if l.startswith("function-trace "))
for t, n in (("trace", lines), ("trace4", 4 * lines)):
    secs, kb = open(f"{out}/{t}.time").read().split()
    print(f"fold of {n:,} trace lines: {float(secs):.2f} s, {n / float(secs):,.0f} lines/s on one core, peak RSS {int(kb) / 1024:.1f} MiB")
for mode in ("trace", "no-trace"):
    d = f"{out}/{mode}/cold-instrumented"
    run = json.load(open(f"{d}/run.json"))
    prof = f"{d}/eval/nix-profile.json"
    extra = ""
    try:
        p = json.load(open(prof))
        extra = f"; profile: {p['lines']:,} lines, {p['traced_us'] / 1e6:.3f} s traced"
    except FileNotFoundError:
        pass
    print(f"{packages} packages (nixpkgs shape), cold-instrumented, {mode}: evaluated {run['evaluated_s']:.3f} s, eval subprocess open {eval_total(d, 'open'):.3f} s, resolve spans {eval_total(d, 'resolve'):.3f} s{extra}")
PY
