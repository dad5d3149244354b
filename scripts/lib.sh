# Shared by scripts/main and scripts/test: install what is missing, once.
# Debian 12, as root. Idempotent: a second run installs nothing.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT_UPDATED=0

say() { printf 'evalbench: %s\n' "$*" >&2; }

# need_pkg COMMAND PACKAGE: install PACKAGE when COMMAND is not on PATH.
need_pkg() {
    local cmd="$1" pkg="$2"
    if command -v "$cmd" >/dev/null 2>&1; then return 0; fi
    if [ "$(id -u)" != 0 ]; then
        say "missing $cmd: install the Debian package $pkg (needs root)"; exit 1
    fi
    if [ "$APT_UPDATED" = 0 ]; then
        say "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        APT_UPDATED=1
    fi
    say "installing $pkg (for $cmd)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
}

# scratch_dir NAME: a world-traversable directory for a bench's lab and
# bundles, $OUT or /tmp/evalbench-NAME, emptied first and kept afterwards
# (PostgreSQL runs as another user and must reach it). Sets OUT.
scratch_dir() {
    OUT="${OUT:-/tmp/evalbench-$1}"
    rm -rf "$OUT" && mkdir -p "$OUT" && chmod 755 "$OUT"
}

# What a script leaves to its end, however it ends: one EXIT trap, run in
# this order. Bench scripts say what they made; none writes a trap of its own.
ON_EXIT_RUN=()
ON_EXIT_LABS=()
ON_EXIT_REMOVE=()
_on_exit() {
    local c p l
    for c in "${ON_EXIT_RUN[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
    for p in "${ON_EXIT_LABS[@]}"; do
        # A pattern is expanded now, so labs made after it was given count too.
        for l in $p; do
            [ -e "$l" ] || continue
            "$BIN" lab down --lab-dir "$l" >/dev/null 2>&1 || true
            rm -rf "$l"
        done
    done
    for p in "${ON_EXIT_REMOVE[@]}"; do rm -rf "$p"; done
}
# lab_down_on_exit DIR_OR_PATTERN...: stop each lab and remove it (the
# bundles beside it stay). Needs BIN.
lab_down_on_exit() { ON_EXIT_LABS+=("$@"); trap _on_exit EXIT; }
# remove_on_exit DIR...: remove a scratch directory, after its labs are down.
remove_on_exit() { ON_EXIT_REMOVE+=("$@"); trap _on_exit EXIT; }
# run_on_exit 'COMMAND': run a command first (a server the script started).
run_on_exit() { ON_EXIT_RUN+=("$1"); trap _on_exit EXIT; }

# Builds the release binary (quietly unless it fails) and sets BIN.
build_release() {
    cargo build --release --locked -p evalbench >/dev/null 2>&1 || cargo build --release --locked -p evalbench
    BIN="$ROOT/target/release/evalbench"
}

need_rust() {
    if [ -d "$HOME/.cargo/bin" ]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
    need_pkg cc gcc
    need_pkg cargo cargo
    local v
    v="$(rustc --version | sed -E 's/^rustc ([0-9]+)\.([0-9]+).*/\1 \2/')"
    set -- $v
    if [ "$1" -lt 1 ] || { [ "$1" -eq 1 ] && [ "$2" -lt 80 ]; }; then
        say "rustc $1.$2 is too old: evalbench needs Rust 1.80 or newer (rustup toolchain)"; exit 1
    fi
}

# cargo-nextest, the test runner scripts/test uses (on this kind of machine
# already; elsewhere built once from crates.io).
need_nextest() {
    need_rust
    if ! cargo nextest --version >/dev/null 2>&1; then
        say "installing cargo-nextest (cargo install --locked)"
        cargo install --locked cargo-nextest
    fi
}

# rustfmt and clippy, for the habits CI keeps (rustup's components, or
# Debian's packages when cargo came from apt).
need_lint() {
    need_rust
    if ! cargo fmt --version >/dev/null 2>&1; then
        if command -v rustup >/dev/null; then rustup component add rustfmt; else need_pkg rustfmt rustfmt; fi
    fi
    if ! cargo clippy --version >/dev/null 2>&1; then
        if command -v rustup >/dev/null; then rustup component add clippy; else need_pkg cargo-clippy rust-clippy; fi
    fi
}

# PostgreSQL server binaries (the lab starts its own cluster from them).
need_postgres() {
    if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ls /usr/share/postgresql/*/extension/pg_stat_statements.control >/dev/null 2>&1; then
        return 0
    fi
    need_pkg /nonexistent/postgresql postgresql
    need_pkg /nonexistent/postgresql-contrib postgresql-contrib
}

# What the lab needs: PostgreSQL, nix, git, namespaces, a user switch.
need_lab() {
    need_postgres
    need_pkg nix nix-bin
    need_pkg git git
    need_pkg ip iproute2
    need_pkg runuser util-linux
    need_pkg pgrep procps
}

# The other nixes the evaluator's tests run under, each unpacked from
# Debian's own packages into target/ (nothing installed system-wide) and
# started through its release's own loader by target/<dir>/bin/nix:
# - Debian 13's nix 2.26 (target/nix-2.26);
# - Debian unstable's nix, 2.34 when this was written (target/nix-unstable):
#   the Nix with an evaluation profiler of its own (Nix >= 2.30).
# Idempotent: a nix that answers --version with the version asked is kept.
NIX_SECOND_PACKAGES="nix-bin libc6 libstdc++6 libgcc-s1 libarchive13t64 libboost-context1.83.0 libcpuid17
 libcurl3t64-gnutls libgit2-1.9 liblowdown2 libssl3t64 libnghttp3-9 libngtcp2-16 libngtcp2-crypto-gnutls8
 libldap2 libmbedtls21 libmbedx509-7 libmbedcrypto16 libhttp-parser2.9 libssh2-1t64"
need_second_nix() {
    fetch_debian_nix nix-2.26 trixie '2\.26' "$NIX_SECOND_PACKAGES"
}
need_unstable_nix() {
    # Unstable's library packages change names as they move, so they are
    # found from nix-bin's dependencies: every library, without the perl,
    # PAM and installer ones nix's own binary does not load.
    fetch_debian_nix nix-unstable sid '2\.(3[0-9]|[4-9][0-9])\.' closure
}
fetch_debian_nix() { # DIR SUITE VERSION-RE PACKAGES|closure
    local d="$ROOT/target/$1" suite="$2" want="$3" packages="$4"
    if [ -x "$d/bin/nix" ] && "$d/bin/nix" --version 2>/dev/null | grep -Eq "$want"; then return 0; fi
    say "fetching Debian $suite's nix into $d (Debian's packages, unpacked; nothing installed)"
    rm -rf "$d" && mkdir -p "$d/apt/lists/partial" "$d/apt/cache/archives/partial" "$d/debs" "$d/root" "$d/bin"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" > "$d/apt/sources.list"
    local apt=(-o Dir::Etc::SourceList="$d/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
               -o Dir::State::Lists="$d/apt/lists" -o Dir::Cache="$d/apt/cache" -o Debug::NoLocking=1
               -o APT::Sandbox::User=root -o Dir::State::status=/dev/null)
    apt-get "${apt[@]}" -qq update
    if [ "$packages" = closure ]; then
        packages=$(apt-cache "${apt[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
                       --no-breaks --no-replaces --no-enhances --no-pre-depends nix-bin \
                   | grep -E '^(nix-bin|lib)' \
                   | grep -vE 'perl|libpam|libsemanage|libdebian-installer|libdebconfclient|libnewt|libslang|libtextwrap|libaudit|libgdbm|libdb5' \
                   | sort -u | tr '\n' ' ')
    fi
    # shellcheck disable=SC2086
    (cd "$d/debs" && apt-get "${apt[@]}" -qq download $packages)
    for p in "$d"/debs/*.deb; do dpkg-deb -x "$p" "$d/root"; done
    cat > "$d/bin/nix" <<'WRAP'
#!/bin/sh
# Debian's nix of another release, unpacked beside the project, started through its own loader.
R="$(dirname "$(dirname "$(readlink -f "$0")")")/root"
L="$R/usr/lib/x86_64-linux-gnu"
exec "$L/ld-linux-x86-64.so.2" --library-path "$L:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" "$R/usr/bin/nix" "$@"
WRAP
    chmod +x "$d/bin/nix"
    rm -rf "$d/apt" "$d/debs"
    "$d/bin/nix" --version | grep -E "$want" || { echo "target/$1: not the nix asked for ($want)" >&2; return 1; }
}

# A real browser for the report's tests.
need_browser() {
    need_pkg chromium chromium
}
