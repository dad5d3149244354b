#!/usr/bin/env bash
# How much of nix's evaluation perf can attribute to nix itself, per nix
# and per unwinding: `perf record -g` (frame pointers) against
# `--call-graph dwarf,4096` (.eh_frame), on the same `nix eval` of the
# hello flake's drvPaths, alternated ROUNDS times. Per nix and unwinding:
# the samples of the nix process (any command but perf and the wrapper's sh), the share with at least one frame in
# nix's own code (its binary or a libnix* library), and perf.data's size.
#
#   bash bench/perf-unwind.sh            # ROUNDS=2; nix on PATH and target/nix-unstable
source "$(dirname "$0")/../scripts/lib.sh"
need_pkg perf linux-perf
need_unstable_nix
ROUNDS="${ROUNDS:-2}"
cd "$ROOT"
scratch_dir perf-unwind
export NIX_CONFIG=$'experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\n'
mkdir -p "$OUT/hello" && cp examples/hello-flake/flake.nix "$OUT/hello/"
for round in $(seq "$ROUNDS"); do
    for nix in "$(command -v nix)" "$ROOT/target/nix-unstable/bin/nix"; do
        v=$("$nix" --version | awk '{print $NF}')
        for unwind in fp dwarf; do
            opts=(-g); [ "$unwind" = dwarf ] && opts=(--call-graph dwarf,4096)
            data="$OUT/$v.$unwind.$round.data"
            perf record -q -e cpu-clock -F 4999 "${opts[@]}" -o "$data" -- \
                "$nix" eval --json --option eval-cache false "path:$OUT/hello#packages.x86_64-linux" \
                --apply 'ps: builtins.mapAttrs (n: p: p.drvPath) ps' >/dev/null 2>"$OUT/err" || { cat "$OUT/err"; exit 1; }
            perf script --no-inline -F comm,ip,sym,dso -i "$data" 2>/dev/null | python3 -c '
import re, sys
total = own = 0; cur = None; has = False
def close():
    global total, own
    if cur is not None and cur not in ("perf", "sh"):
        total += 1; own += has
for line in sys.stdin:
    if not line.strip():
        close(); cur = None; has = False; continue
    if not line.startswith((" ", "\t")):
        close(); cur = line.split()[0]; has = False
        # A sample without a call graph keeps its one frame on this line.
        if re.search(r"\((/[^)]*/(nix|libnix[^/)]*))\)", line): has = True
        continue
    if re.search(r"\((/[^)]*/(nix|libnix[^/)]*))\)", line): has = True
close()
print(total, own)' > "$OUT/count"
            read -r total own < "$OUT/count"
            echo "$v $unwind $round $total $own $(stat -c %s "$data")" >> "$OUT/rows.txt"
        done
    done
done
python3 - "$OUT/rows.txt" <<'PY'
import sys, collections
by = collections.defaultdict(list)
for l in open(sys.argv[1]):
    v, u, r, t, o, size = l.split()
    by[(v, u)].append((int(t), int(o), int(size)))
print(f"{'nix':8} {'unwind':6} {'samples':>8} {'with a frame of nix own':>24} {'perf.data':>10}")
for (v, u), rows in sorted(by.items()):
    shares = ", ".join(f"{100 * o / t:.1f}%" if t else "-" for t, o, _ in rows)
    print(f"{v:8} {u:6} {sum(t for t, _, _ in rows) // len(rows):8} {shares:>24} {sum(s for *_, s in rows) // len(rows) / 1e6:8.1f} MB")
PY
