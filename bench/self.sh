#!/usr/bin/env bash
# evalbench's own instructions: summarize, inspect, compare and decode pg
# (release build) on fixed generated inputs, each counted by Valgrind
# (cachegrind --cache-sim=no, the exact measure the counted passes use for
# nix) twice, then held against bench/self-baseline.json.
#
#   bash bench/self.sh            # count, compare with the baseline of this rustc
#   UPDATE=1 bash bench/self.sh   # record this rustc's baseline (commit it, saying why it moved)
#   KEEP_WORK=1 bash bench/self.sh  # keep /tmp/evalbench-self (the inputs, cachegrind files, outputs)
#
# Exit 0: every command within 3% of its baseline (or no baseline yet for
# this rustc: recorded, said). Exit 1: a command more than 3% above its
# baseline, named with the functions that grew. Exit 2: the measure could
# not be trusted (two counts of one command more than 0.1% apart), the
# inputs are not those the baseline was counted on, or a command failed.
# Instructions, not seconds: the same on a busy machine, so a 3% step is
# a step of evalbench's own work (docs/benchmarks.md, "evalbench's own
# instructions").
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_pkg valgrind valgrind
need_pkg python3 python3
cd "$ROOT"
say "building the release binary"
build_release
# A fixed path: the commands print and write paths, and their length is
# part of what they do.
WORK=/tmp/evalbench-self
rm -rf "$WORK" && mkdir -p "$WORK"
[ -n "${KEEP_WORK:-}" ] || remove_on_exit "$WORK"
say "generating the inputs (bench/self_inputs.py)"
python3 bench/self_inputs.py "$WORK/in" >&2
# Two things would make one command's count differ from run to run, and
# are taken out: the keys std's HashMap draws from getrandom (another
# iteration order each run, so other sorts and allocations) are fixed by a
# preloaded getrandom that returns the same bytes; and threads, whose
# interleaving decides which buffer is reused or grown, are one: the
# commands run on one CPU, where every parallel part of evalbench runs in
# the calling thread. The same work is counted on every machine, whatever
# its cores.
cat > "$WORK/fixed_random.c" <<'C'
#include <stddef.h>
#include <sys/types.h>
ssize_t getrandom(void *buf, size_t len, unsigned int flags) {
    unsigned char *b = buf;
    (void)flags;
    for (size_t i = 0; i < len; i++) b[i] = (unsigned char)(i * 131 + 7);
    return (ssize_t)len;
}
C
gcc -shared -fPIC -O2 -o "$WORK/fixed_random.so" "$WORK/fixed_random.c"
CPU=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
START=$(date +%s)

# count LABEL K COMMAND...: the command under cachegrind; its output file is $WORK/LABEL.K.cg.
count() {
    local label="$1" k="$2"; shift 2
    rm -rf "$WORK/out"
    if ! LD_PRELOAD="$WORK/fixed_random.so" taskset -c "$CPU" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$WORK/$label.$k.cg" \
            --log-file="$WORK/$label.$k.vg.log" "$@" >"$WORK/$label.$k.stdout" 2>"$WORK/$label.$k.stderr"; then
        say "$label failed under valgrind (exit $?): $*"
        sed 's/^/  /' "$WORK/$label.$k.stderr" >&2
        exit 2
    fi
}
IN="$WORK/in"
for k in 1 2; do
    say "counting, round $k of 2"
    count summarize "$k" "$BIN" summarize -q "$IN/a" -o "$WORK/out"
    count inspect "$k" "$BIN" inspect "$IN/a" -o "$WORK/out"
    count compare "$k" "$BIN" compare "$IN/a" "$IN/b"
    count decode-pg "$k" "$BIN" decode pg --json "$IN/pg.pcap"
done
say "counted in $(( $(date +%s) - START )) s"

status=0
python3 - "$WORK" "$ROOT/bench/self-baseline.json" "$(rustc --version)" "$(valgrind --version)" "${UPDATE:-0}" <<'PY' || status=$?
import hashlib, json, os, sys
work, baseline_path, rustc, valgrind, update = sys.argv[1:6]
update = update == "1"
COMMANDS = ["summarize", "inspect", "compare", "decode-pg"]
UNSTABLE_PCT, STEP_PCT, KEEP = 0.1, 3.0, 60

def read_cg(path):
    """Total instructions and instructions per function, from a cachegrind file."""
    per_fn, total, fn = {}, None, None
    for line in open(path, errors="replace"):
        if line.startswith("fn="):
            fn = line[3:].rstrip("\n")
        elif line.startswith("summary:"):
            total = int(line.split()[1])
        elif line[:1].isdigit() and fn is not None:
            parts = line.split()
            if len(parts) >= 2:
                per_fn[fn] = per_fn.get(fn, 0) + int(parts[1])
    if total is None:
        sys.exit(f"evalbench: {path}: no summary line: cachegrind's file is cut short")
    return total, per_fn

def inputs_digest():
    h = hashlib.sha256()
    root = os.path.join(work, "in")
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            h.update(os.path.relpath(p, root).encode() + b"\0")
            h.update(open(p, "rb").read())
    return h.hexdigest()[:16]

counts, unstable = {}, []
for c in COMMANDS:
    (t1, f1), (t2, f2) = read_cg(f"{work}/{c}.1.cg"), read_cg(f"{work}/{c}.2.cg")
    spread = abs(t1 - t2) / min(t1, t2) * 100
    counts[c] = {"instructions": min(t1, t2), "spread_pct": spread, "functions": f1 if t1 <= t2 else f2}
    if spread > UNSTABLE_PCT:
        unstable.append(f"{c}: {t1:,} and {t2:,} ({spread:.3f}% apart)")
digest = inputs_digest()

try:
    base_all = json.load(open(baseline_path))
except FileNotFoundError:
    base_all = {"inputs": digest, "rustc": {}}
base = base_all["rustc"].get(rustc)

def record():
    base_all["inputs"] = digest
    base_all["rustc"][rustc] = {
        "valgrind": valgrind,
        "commands": {c: {"instructions": v["instructions"],
                         "functions": dict(sorted(v["functions"].items(), key=lambda kv: -kv[1])[:KEEP])}
                     for c, v in counts.items()},
    }
    tmp = baseline_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(base_all, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, baseline_path)

print(f"evalbench's own instructions ({rustc}; {valgrind}; inputs {digest}), two counts each")
print(f"  {'command':<10} {'instructions':>15} {'two counts apart':>17} {'baseline':>15} {'change':>9}")
failed = []
for c in COMMANDS:
    v = counts[c]
    b = (base or {}).get("commands", {}).get(c) if base_all.get("inputs") == digest else None
    if b:
        change = (v["instructions"] - b["instructions"]) / b["instructions"] * 100
        bl, ch = f"{b['instructions']:,}", f"{change:+.2f}%"
        if change > STEP_PCT:
            failed.append((c, change, b))
    else:
        bl, ch = "none", ""
    print(f"  {c:<10} {v['instructions']:>15,} {v['spread_pct']:>16.4f}% {bl:>15} {ch:>9}")

if unstable:
    print("the measure is unstable: two counts of one command differ by more than 0.1%:")
    for u in unstable:
        print(f"  {u}")
    sys.exit(2)
if update:
    record()
    print(f"recorded as the baseline for {rustc} in {baseline_path}: commit it, saying why it moved")
    sys.exit(0)
if base_all.get("inputs") != digest:
    print(f"the inputs ({digest}) are not those the baseline was counted on ({base_all.get('inputs')}): "
          "bench/self_inputs.py changed; record a new baseline with UPDATE=1 in the same commit")
    sys.exit(2)
if base is None:
    record()
    known = ", ".join(base_all["rustc"].keys() - {rustc}) or "none"
    print(f"no baseline for {rustc} (baselines for: {known}): these counts are recorded as its baseline, "
          f"not judged; commit {os.path.basename(baseline_path)} to keep them")
    sys.exit(0)
for c, change, b in failed:
    now = counts[c]["functions"]
    grew = sorted(((now.get(f, 0) - b["functions"].get(f, 0), f) for f in set(now) | set(b["functions"])), reverse=True)
    print(f"{c}: {change:+.2f}% instructions against the baseline (more than {STEP_PCT}%); the functions that grew most:")
    for delta, f in grew[:8]:
        if delta <= 0:
            break
        was = b["functions"].get(f)
        print(f"  {delta:>+15,}  {f}  ({'not among the baseline' + chr(39) + 's top ' + str(KEEP) if was is None else f'{was:,} before'})")
if failed:
    sys.exit(1)
print(f"every command within {STEP_PCT}% of its baseline")
PY
say "bench/self.sh took $(( $(date +%s) - START )) s of counting and judging"
exit $status
