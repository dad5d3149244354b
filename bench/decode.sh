#!/usr/bin/env bash
# pg.pcap decoding: throughput against tshark extracting the same statements
# from the same real capture (pgbench against a real PostgreSQL), medians of
# RUNS side by side; then peak memory on a ~1 GB capture (the same traffic
# concatenated until it is that large).
source "$(dirname "$0")/../scripts/lib.sh"
need_rust
need_lab
need_pkg tcpdump tcpdump
need_pkg tshark tshark
need_pkg /usr/bin/time time
RUNS="${RUNS:-3}"
SECONDS_OF_LOAD="${LOAD_S:-20}"
TARGET_GB="${TARGET_GB:-1}"   # whole GiB
cd "$ROOT"
build_release
WORK="$(mktemp -d /tmp/evalbench-decodebench.XXXXXX)"
chmod 755 "$WORK"
lab_down_on_exit "$WORK/lab"
remove_on_exit "$WORK"
"$BIN" lab up --lab-dir "$WORK/lab" --net off >/dev/null 2>&1
PORT=$(python3 -c "import json; print(json.load(open('$WORK/lab/lab.json'))['pg_port'])")
PGB=$(ls /usr/lib/postgresql/*/bin/pgbench | tail -1)
# The lab's superuser password (lab.json is root's alone), in the environment only.
PGPASSWORD=$(python3 -c "import json; print(json.load(open('$WORK/lab/lab.json'))['pg_password'])")
export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGPASSWORD
"$PGB" -i -s 2 -q gradient >/dev/null 2>&1
tcpdump -i lo --immediate-mode -B 65536 -U -s 0 -w "$WORK/pg.pcap" "tcp port $PORT" 2>"$WORK/tcpdump.log" &
TD=$!
until grep -q listening "$WORK/tcpdump.log"; do sleep 0.1; done
"$PGB" -c 4 -T "$SECONDS_OF_LOAD" -M extended gradient >/dev/null 2>&1
sleep 0.5; kill -INT $TD; wait $TD 2>/dev/null || true
PACKETS=$(tcpdump -r "$WORK/pg.pcap" 2>/dev/null | wc -l)
SIZE=$(stat -c %s "$WORK/pg.pcap")
say "captured $PACKETS packets, $((SIZE / 1048576)) MiB"
t() { /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >/dev/null 2>&1; cat "$WORK/t"; }
E=(); T=()
for i in $(seq "$RUNS"); do
    E+=("$(t "$BIN" decode pg --json --port "$PORT" "$WORK/pg.pcap")")
    T+=("$(t tshark -r "$WORK/pg.pcap" -d "tcp.port==$PORT,pgsql" -Y 'pgsql.type == "Simple query" || pgsql.type == "Parse"' -T fields -e pgsql.query)")
done
# Same answer first: every statement the clients sent (tshark's Simple query
# and Parse messages, each occurrence in a frame) is one we decoded or one
# still unanswered when the capture stopped (pgbench -M extended parses each
# execution).
theirs() { # tshark's Simple query and Parse messages, each occurrence in a frame
    tshark -r "$WORK/pg.pcap" "$@" -d "tcp.port==$PORT,pgsql" -Y 'pgsql.type == "Simple query" || pgsql.type == "Parse"' \
        -T fields -E occurrence=a -E aggregator=, -e pgsql.type | tr ',' '\n' | grep -c -E '^(Simple query|Parse)$'
}
THEIRS=$(theirs)
read -r OURS UNANSWERED < <("$BIN" decode pg --json --port "$PORT" "$WORK/pg.pcap" | tail -1 | python3 -c "import json,sys; s=json.load(sys.stdin)['summary']; print(s['statements'], s['unanswered'])")
# tshark's default does not reassemble segments that arrive out of order, as
# decode pg does, and loses a stream's message boundaries after two swapped
# segments (tests/decode_pg.rs), which a busy machine's tcpdump can write.
# Where the two disagree, tshark counts again reassembling them: minutes on
# this capture (the times above are tshark's default, what a user runs).
if [ "$((OURS + UNANSWERED))" != "$THEIRS" ]; then
    say "tshark's default counts $THEIRS; counting again with tcp.reassemble_out_of_order (slow)"
    THEIRS=$(theirs -o tcp.reassemble_out_of_order:TRUE)
fi
if [ "$((OURS + UNANSWERED))" != "$THEIRS" ]; then
    say "decode pg and tshark disagree: $OURS statements + $UNANSWERED unanswered, tshark $THEIRS Parse/Simple query messages"; exit 1
fi
# ~1 GB of the same traffic, concatenated.
N=$(( TARGET_GB * 1073741824 / SIZE + 1 ))
FILES=(); for i in $(seq "$N"); do FILES+=("$WORK/pg.pcap"); done
mergecap -a -w "$WORK/big.pcap" "${FILES[@]}"
BIG=$(stat -c %s "$WORK/big.pcap")
B=$(t "$BIN" decode pg --port "$PORT" "$WORK/big.pcap")
python3 - "$PACKETS" "$OURS" "$BIG" "$B" "$UNANSWERED" "$THEIRS" "${E[@]}" -- "${T[@]}" <<'PY'
import statistics, sys
a = sys.argv[1:]
packets, statements, big, b, unanswered, theirs = int(a[0]), int(a[1]), int(a[2]), a[3], int(a[4]), int(a[5])
rest = a[6:]
sep = rest.index("--")
ours = [float(x.split()[0]) for x in rest[:sep]]
ts = [float(x.split()[0]) for x in rest[sep + 1:]]
o, t = statistics.median(ours), statistics.median(ts)
print(f"decode bench: {packets} packets of pgbench traffic, {statements} statements, median of {len(ours)} runs each")
print(f"  evalbench decode pg --json   {o:7.2f} s  {packets / o:10.0f} packets/s")
print(f"  tshark -Y pgsql -T fields     {t:7.2f} s  {packets / t:10.0f} packets/s")
print(f"  ratio tshark / evalbench      {t / o:7.1f}x   (goal >= 80x; same statements checked: {statements} + {unanswered} unanswered = tshark's {theirs})")
secs, kib = b.split()
print(f"  {big / 2**30:.2f} GiB capture: {float(secs):.1f} s, peak RSS {int(kib) / 1024:.0f} MiB (goal <= 256 MiB)")
PY
