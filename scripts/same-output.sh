#!/usr/bin/env bash
# Are two evalbench binaries' outputs byte-identical on one bundle? For a
# refactor that must not change what users read: summarize (summary.txt,
# summary.json), inspect (the page, its charts, each pass's trace.json),
# whatif, and compare (text, JSON) of the bundle with itself; given a
# second bundle, compare of the two as well
# (verbose text with every verdict's sentence, Markdown, JSON, the page,
# and the gate), and a history of the two (show as text, JSON and
# Markdown, and its page). Each on its own copy of the bundle; paths
# replaced. Given BISECT=DIR (a bisect's --out, made once with OLD from
# a repository: BISECT_FLAKE, BISECT_GOOD, BISECT_BAD), each binary reruns
# that bisect on a copy of DIR, which reuses every probe and evaluates
# nothing: its bisect.txt, .json and .md, a probe's seconds masked.
#
#   cp target/release/evalbench /tmp/evalbench-before   # before the change
#   cargo build --release -p evalbench                  # after it
#   bash scripts/same-output.sh /tmp/evalbench-before target/release/evalbench out [out2]
set -u
OLD="$1" NEW="$2" B="$3" B2="${4:-}" BISECT="${BISECT:-}"
W=$(mktemp -d /tmp/same-output.XXXX)
trap 'rm -rf "$W"' EXIT
status=0
for v in old new; do
    bin=$OLD; [ "$v" = new ] && bin=$NEW
    cp -r "$B" "$W/$v"
    "$bin" summarize "$W/$v" -q > /dev/null 2>&1
    "$bin" inspect "$B" --out "$W/$v.inspect" > /dev/null 2>&1
    "$bin" whatif "$B" > "$W/$v.whatif" 2>/dev/null
    "$bin" compare "$B" "$B" > "$W/$v.compare" 2>/dev/null
    "$bin" compare "$B" "$B" --json > "$W/$v.compare.json" 2>/dev/null
    if [ -n "$B2" ]; then
        "$bin" compare "$B" "$B2" -v > "$W/$v.ab.txt" 2>/dev/null
        "$bin" compare "$B" "$B2" --format markdown > "$W/$v.ab.md" 2>/dev/null
        "$bin" compare "$B" "$B2" --json > "$W/$v.ab.json" 2>/dev/null
        "$bin" compare "$B" "$B2" --html "$W/$v.ab.page" > /dev/null 2>&1
        "$bin" compare "$B" "$B2" --fail-on-regression 1 > "$W/$v.ab.gate" 2>&1
        db="$W/$v.history.sqlite"
        "$bin" history add --db "$db" --commit c1 --commit-time 2026-12-01T00:00:00Z "$B" > /dev/null 2>&1
        "$bin" history add --db "$db" --commit c2 --commit-time 2026-12-02T00:00:00Z "$B2" > /dev/null 2>&1
        "$bin" history show --db "$db" > "$W/$v.history.txt" 2>&1
        "$bin" history show --db "$db" --json > "$W/$v.history.json" 2>&1
        "$bin" history show --db "$db" --format markdown > "$W/$v.history.md" 2>&1
        "$bin" history report --db "$db" --out "$W/$v.history.page" > /dev/null 2>&1
    fi
    if [ -n "$BISECT" ]; then
        cp -r "$BISECT" "$W/$v.bisect"
        rm -f "$W/$v.bisect"/bisect.{txt,json,md}   # made again by the rerun, not copied
        "$bin" bisect --flake "$BISECT_FLAKE" "$BISECT_GOOD" "$BISECT_BAD" -q --out "$W/$v.bisect" > /dev/null 2>&1
    fi
done
# A bisect probe's seconds are the time its reuse took: masked.
mask() { sed -e "s|$W/old|B|g" -e "s|$W/new|B|g" -e 's/"seconds": *[0-9.e+-]*/"seconds":S/g' -e 's/[0-9.]* s a probe/S a probe/g'; }
same() {
    if [ ! -s "$1" ] && [ ! -s "$2" ]; then echo "absent     $3 (neither wrote it)"; return; fi
    if [ ! -s "$1" ] || [ ! -s "$2" ]; then echo "EMPTY      $3 (missing or empty on one side)"; status=1; return; fi
    if cmp -s <(mask < "$1") <(mask < "$2"); then echo "identical  $3"; else echo "DIFFERS    $3"; status=1; fi
}
for f in summary.txt summary.json report/index.html; do same "$W/old/$f" "$W/new/$f" "$f"; done
for f in whatif compare compare.json; do same "$W/old.$f" "$W/new.$f" "$f"; done
# inspect's page and every file beside it (charts, each pass's trace.json).
if [ -d "$W/old.inspect" ]; then
    for f in $(cd "$W/old.inspect" && find . -type f | sort); do same "$W/old.inspect/$f" "$W/new.inspect/$f" "inspect $f"; done
fi
if [ -n "$B2" ]; then
    for f in ab.txt ab.md ab.json ab.gate; do same "$W/old.$f" "$W/new.$f" "compare A B ($f)"; done
    same "$W/old.ab.page/index.html" "$W/new.ab.page/index.html" "compare A B (--html page)"
    for f in history.txt history.json history.md; do same "$W/old.$f" "$W/new.$f" "$f"; done
    same "$W/old.history.page/index.html" "$W/new.history.page/index.html" "history report page"
fi
if [ -n "$BISECT" ]; then
    for f in bisect.txt bisect.json bisect.md; do same "$W/old.bisect/$f" "$W/new.bisect/$f" "$f"; done
fi
exit $status
