#!/usr/bin/env bash
# Issue 55's bad inputs, one after another: each command, its exit code and the
# first line it prints (stderr, else stdout). Reads a main-job bundle B (copies are
# made; B is not changed) with the evalbench E.
#
#   bash scripts/main out && B=out bash scripts/bad-inputs.sh
set -u
E="${E:-$(cd "$(dirname "$0")/.." && pwd)/target/release/evalbench}"
: "${B:?B=a bundle the main job wrote}"
W=$(mktemp -d /tmp/bad.XXXX)
t() { # label, command...
  local label="$1"; shift
  "$@" > "$W/o" 2> "$W/e"; local rc=$?
  local first; first=$(head -1 "$W/e"); [ -z "$first" ] && first=$(head -1 "$W/o")
  printf '%s\n  $ %s\n  exit %s: %s\n' "$label" "$*" "$rc" "${first:0:220}"
}
cp -r "$B" "$W/runjson"; printf '{not json' > "$W/runjson/cold-clean/run.json"
cp -r "$B" "$W/spans"; f=$(ls "$W/spans/cold-clean/trace/"*.jsonl | head -1); sed -i '3s/.*/{"broken span/' "$f"
t "compare, run.json unreadable" $E compare "$W/runjson" "$B"
grep -m2 -n "fell back\|span wall\|spans' extent" "$W/o" | head -2
t "whatif, run.json unreadable" $E whatif "$W/runjson" --pass cold-clean.1
t "compare, a malformed span line" $E compare "$W/spans" "$B"
t "whatif, a malformed span line" $E whatif "$W/spans" --pass cold-clean.1
t "history add, a malformed span line" $E history add "$W/spans" --commit abc --db "$W/h.sqlite"
t "inspect --json, a malformed span line" $E inspect "$W/spans" --json -o "$W/report"
t "compare, runs that do not exist" $E compare "$B" "$B" --pass-a cold-clean.99 --pass-b cold-clean.77
t "compare, one run against the pass" $E compare "$B" "$B" --pass-a cold-clean --pass-b cold-clean.2
head -c 4096 /dev/urandom > "$W/random.bin"; : > "$W/empty"
t "decode auto-explain of a pcap" $E decode auto-explain "$B/cold-clean/pg.pcap"
t "decode auto-explain of run.json" $E decode auto-explain "$B/cold-clean/run.json"
t "decode auto-explain of random bytes" $E decode auto-explain "$W/random.bin"
perf=$(ls "$B"/*instrumented*/perf.data 2>/dev/null | head -1)
[ -n "$perf" ] && t "decode auto-explain of perf.data" $E decode auto-explain "$perf"
for k in strace perf nix-trace auto-explain; do t "decode $k of an empty file" $E decode $k "$W/empty"; done
prof=$(ls "$B"/*/eval/nix-profile.folded 2>/dev/null | head -1)
[ -n "$prof" ] && t "decode nix-profile of evalbench's own fold" $E decode nix-profile "$prof"
for v in -1 nan inf; do t "compare --min-abs-us=$v" $E compare "$B" "$B" --min-abs-us=$v; done
t "history add --commit ''" $E history add "$B" --commit "" --db "$W/h2.sqlite"
t "history add --commit-time=-5" $E history add "$B" --commit x --commit-time=-5 --db "$W/h2.sqlite"
t "compare A A (one bundle)" $E compare "$B" "$B" --json
python3 -c "import json,sys; d=json.load(open('$W/o')); print('  one_bundle', d.get('one_bundle'), 'same_session', d.get('same_session'), 'interleaved', d.get('interleaved'))" 2>/dev/null || head -c 300 "$W/o"
rm -rf "$W"
