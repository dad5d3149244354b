#!/usr/bin/env bash
# evalbench bisect on generated repositories of COMMITS commits (default
# 64): one commit, chosen by each of SEEDS seeds (default 10), adds 3% of
# nix's work; every other commit adds a comment. Per seed: the commit the
# step was put at, the one found, the probes it took and the seconds;
# then one `run --passes cold-clean --repeat 1` of the flake, timed, for
# the probe's cost beside it. With MINOR=1, every other commit also
# changes nix's counters exactly by a few calls, under the threshold (as 14
# of 31 weekly steps of nixpkgs' lib do): the search judges probes by the
# threshold on the counters that moved past it from GOOD to BAD, so these
# cost no probe: the ends plus ⌈log2 (COMMITS-1)⌉ (the column "bound").
#
#   bash bench/bisect.sh
#   COMMITS=32 SEEDS=3 bash bench/bisect.sh
#   MINOR=1 SEEDS=3 bash bench/bisect.sh
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
COMMITS="${COMMITS:-64}"
SEEDS="${SEEDS:-10}"
MINOR="${MINOR:-0}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /var/tmp/evalbench-bisect.XXXXXX)"
remove_on_exit "$WORK"
chmod 755 "$WORK"
BOUND=$(python3 -c "import math; print(2 + math.ceil(math.log2($COMMITS - 1)))")
printf '%-5s %-8s %-8s %-7s %-6s %s\n' seed "step at" found probes bound seconds
for seed in $(seq 1 "$SEEDS"); do
    # Spread over the range (a multiplicative hash, its high bits).
    at=$(( ( (seed * 2654435761) >> 11 ) % (COMMITS - 1) + 1 ))
    repo="$WORK/repo$seed"
    "$BIN" lab gen-flake --out "$repo" --packages 10 --work 300 2>/dev/null
    if [ "$MINOR" = 1 ]; then
        # A second, tiny piece of work whose size the other commits toggle: exact changes of a few calls.
        sed -i 's/(builtins.genList (i: i) 300);/(builtins.genList (i: i) 300) + builtins.length (builtins.genList (x: x) 0);/' "$repo/flake.nix"
        grep -q 'genList (x: x) 0' "$repo/flake.nix" || { echo "bench/bisect.sh: the generated flake changed shape" >&2; exit 1; }
    fi
    git -C "$repo" init -q && git -C "$repo" config user.email b@example.org && git -C "$repo" config user.name b
    git -C "$repo" add -A && git -C "$repo" commit -qm "commit 0"
    for k in $(seq 1 $((COMMITS - 1))); do
        if [ "$k" = "$at" ]; then sed -i 's/(i: i) 300)/(i: i) 309)/' "$repo/flake.nix";
        elif [ "$MINOR" = 1 ]; then sed -i -E "s/genList \(x: x\) [0-9]+/genList (x: x) $((k % 2))/" "$repo/flake.nix"; echo "# commit $k" >> "$repo/flake.nix";
        else echo "# commit $k" >> "$repo/flake.nix"; fi
        git -C "$repo" commit -qam "commit $k"
    done
    start=$(date +%s%N)
    "$BIN" bisect --flake "$repo" "$(git -C "$repo" rev-list --max-parents=0 HEAD)" HEAD --json -q --out "$WORK/out$seed" > "$WORK/b$seed.json"
    secs=$(( ($(date +%s%N) - start) / 1000000 ))
    python3 - "$WORK/b$seed.json" "$repo" "$at" "$seed" "$secs" "$BOUND" <<'PY'
import json, subprocess, sys
doc, repo, at, seed, secs, bound = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]) / 1000, int(sys.argv[6])
commits = subprocess.run(["git", "-C", repo, "rev-list", "--reverse", "HEAD"], capture_output=True, text=True).stdout.split()
found = [commits.index(f["commit"]["commit"]) for f in doc["found"]]
print(f"{seed:<5} {at:<8} {','.join(map(str, found)) or '-':<8} {len(doc['probes']):<7} {bound:<6} {secs:.1f}" + ("" if found == [at] else "  WRONG") + ("" if len(doc['probes']) <= bound else "  OVER"))
PY
done
start=$(date +%s%N)
"$BIN" run --flake "$WORK/repo1" --passes cold-clean --repeat 1 --warmup 0 --no-report --no-pcap --out "$WORK/one" >/dev/null 2>&1
echo "one run --passes cold-clean --repeat 1 --warmup 0: $(( ($(date +%s%N) - start) / 1000000 )) ms"
echo "seed 1's bisect.txt, its probes in the order made:"
cat "$WORK/out1/bisect.txt"
