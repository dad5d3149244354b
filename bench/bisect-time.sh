#!/usr/bin/env bash
# evalbench bisect --measure evaluated on a time nix's counters cannot see:
# 8 commits of a generated flake, commit 5 adding a 30 MB random file (the
# lab copies it with the flake and nix hashes it; no counter moves). Then
# an A/A range (commits 5 to 7, all holding the file): nothing to find.
# Each bisect's text (every session's verdict) and its seconds.
#
#   bash bench/bisect-time.sh
#   REPEAT=16 bash bench/bisect-time.sh
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
REPEAT="${REPEAT:-6}"
cd "$ROOT"
build_release
WORK="$(mktemp -d /var/tmp/evalbench-bisect-time.XXXXXX)"
remove_on_exit "$WORK"
chmod 755 "$WORK"
repo="$WORK/repo"
"$BIN" lab gen-flake --out "$repo" --packages 10 --work 300 2>/dev/null
git -C "$repo" init -q && git -C "$repo" config user.email b@example.org && git -C "$repo" config user.name b
git -C "$repo" add -A && git -C "$repo" commit -qm "commit 0"
for k in 1 2 3 4 5 6 7; do
    if [ "$k" = 5 ]; then head -c 30000000 /dev/urandom > "$repo/blob.bin"; git -C "$repo" add blob.bin; else echo "# commit $k" >> "$repo/flake.nix"; fi
    git -C "$repo" commit -qam "commit $k"
done
git -C "$repo" log --reverse --format='%h %s' | cat
for range in "HEAD~7 HEAD" "HEAD~2 HEAD"; do
    echo "== bisect $range --measure evaluated --repeat $REPEAT"
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    "$BIN" bisect --flake "$repo" $range --measure evaluated --repeat "$REPEAT" -q --out "$WORK/out"
    echo "($(( ($(date +%s%N) - start) / 1000000 )) ms)"
done
