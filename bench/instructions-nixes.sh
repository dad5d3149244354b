#!/usr/bin/env bash
# nix 2.8 against Debian 13's 2.26 and Debian unstable's 2.34 on the
# bundled hello flake, in instructions: per nix one run of cold-clean (which
# writes the derivations) and RUNS of cold-counted, then `compare` of 2.8
# against each, whose text gives the verdict, the phases and the functions
# whose counts moved most.
#
#   bash bench/instructions-nixes.sh        # RUNS=3
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
need_pkg valgrind valgrind
need_second_nix
need_unstable_nix
RUNS="${RUNS:-3}"
cd "$ROOT"
build_release
scratch_dir instructions-nixes
lab_down_on_exit "$OUT/lab"
for n in 2.8:nix 2.26:"$ROOT/target/nix-2.26/bin/nix" 2.34:"$ROOT/target/nix-unstable/bin/nix"; do
    name="${n%%:*}" nix="${n#*:}"
    say "nix $name: cold-clean once, cold-counted $RUNS times"
    "$BIN" run --nix "$nix" --passes cold-clean,cold-counted --repeat 1 --repeat-counted "$RUNS" --warmup 0 --no-report --no-pcap \
        --lab-dir "$OUT/lab" --out "$OUT/nix-$name" > "$OUT/nix-$name.log" 2>&1 || { tail -20 "$OUT/nix-$name.log"; exit 1; }
done
for other in 2.26 2.34; do
    echo "== nix 2.8 (A) against nix $other (B): cold-counted"
    "$BIN" compare "$OUT/nix-2.8" "$OUT/nix-$other" > "$OUT/compare-$other.txt" 2>/dev/null || true
    sed -n '/^== cold-counted/,/^$/p' "$OUT/compare-$other.txt" | head -20
done
say "bundles in $OUT"
