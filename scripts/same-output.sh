#!/usr/bin/env bash
# Are two evalbench binaries' outputs byte-identical on one bundle? For a
# refactor that must not change what users read: summarize (summary.txt,
# summary.json, the report page), whatif, and compare (text, JSON) of the
# bundle with itself; given a second bundle, compare of the two as well
# (verbose text with every verdict's sentence, Markdown, JSON, the page,
# and the gate). Each on its own copy of the bundle; paths replaced.
#
#   cp target/release/evalbench /tmp/evalbench-before   # before the change
#   cargo build --release -p evalbench                  # after it
#   bash scripts/same-output.sh /tmp/evalbench-before target/release/evalbench out [out2]
set -u
OLD="$1" NEW="$2" B="$3" B2="${4:-}"
W=$(mktemp -d /tmp/same-output.XXXX)
trap 'rm -rf "$W"' EXIT
status=0
for v in old new; do
    bin=$OLD; [ "$v" = new ] && bin=$NEW
    cp -r "$B" "$W/$v"
    "$bin" summarize "$W/$v" -q > /dev/null 2>&1
    "$bin" whatif "$B" > "$W/$v.whatif" 2>/dev/null
    "$bin" compare "$B" "$B" > "$W/$v.compare" 2>/dev/null
    "$bin" compare "$B" "$B" --json > "$W/$v.compare.json" 2>/dev/null
    if [ -n "$B2" ]; then
        "$bin" compare "$B" "$B2" -v > "$W/$v.ab.txt" 2>/dev/null
        "$bin" compare "$B" "$B2" --format markdown > "$W/$v.ab.md" 2>/dev/null
        "$bin" compare "$B" "$B2" --json > "$W/$v.ab.json" 2>/dev/null
        "$bin" compare "$B" "$B2" --html "$W/$v.ab.page" > /dev/null 2>&1
        "$bin" compare "$B" "$B2" --fail-on-regression 1 > "$W/$v.ab.gate" 2>&1
    fi
done
same() { if cmp -s <(sed "s|$W/old|B|g" "$1") <(sed "s|$W/new|B|g" "$2"); then echo "identical  $3"; else echo "DIFFERS    $3"; status=1; fi; }
for f in summary.txt summary.json report/index.html; do same "$W/old/$f" "$W/new/$f" "$f"; done
for f in whatif compare compare.json; do same "$W/old.$f" "$W/new.$f" "$f"; done
if [ -n "$B2" ]; then
    for f in ab.txt ab.md ab.json ab.gate; do same "$W/old.$f" "$W/new.$f" "compare A B ($f)"; done
    same "$W/old.ab.page/index.html" "$W/new.ab.page/index.html" "compare A B (--html page)"
fi
exit $status
