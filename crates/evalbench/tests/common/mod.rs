//! Shared helpers: bundles made by the real sample pipeline.

#![allow(dead_code)]

pub mod browser;
pub mod repo;
pub mod shared;
pub mod synthetic;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The nixes the evaluator's tests run under: the one on PATH (None),
/// Debian 13's nix 2.26 and Debian unstable's (2.34), which scripts/test
/// unpacks into target/nix-2.26 and target/nix-unstable. scripts/test
/// names what it fetched in `EVALBENCH_TEST_NIXES` (paths, `:` between):
/// each must be there and answer `--version`, or the test fails here; a
/// bare `cargo test` uses those in target/ that are there.
pub fn nixes() -> Vec<Option<std::path::PathBuf>> {
    let mut v = vec![None];
    match std::env::var_os("EVALBENCH_TEST_NIXES") {
        Some(list) => {
            for p in std::env::split_paths(&list) {
                let ran = Command::new(&p).arg("--version").output();
                match ran {
                    Ok(o) if o.status.success() => v.push(Some(p)),
                    Ok(o) => panic!(
                        "{}: scripts/test fetched this nix, but `--version` failed: {}",
                        p.display(),
                        String::from_utf8_lossy(&o.stderr)
                    ),
                    Err(e) => panic!("{}: scripts/test fetched this nix, but it does not run: {e}", p.display()),
                }
            }
        }
        None => {
            for dir in ["nix-2.26", "nix-unstable"] {
                let other = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target").join(dir).join("bin/nix");
                if other.is_file() {
                    v.push(Some(other));
                }
            }
        }
    }
    v
}

/// What the tests' own nix commands run with (`NIX_CONFIG`): flakes, no
/// substituters (there is no network), no build users (root, local store).
pub const NIX_CONFIG: &str = "experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\n";

/// A nix's version as `--version` gives it (`2.34.8`).
pub fn nix_version(nix: &Option<std::path::PathBuf>) -> (u32, u32) {
    let out = nix_command(nix).arg("--version").output().expect("nix runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.split_whitespace().last().unwrap_or("");
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The nix with an evaluation profiler of its own (Nix >= 2.30): the one
/// scripts/test fetches into target/nix-unstable. Its tests fail, never
/// pass empty, without it.
pub fn profiling_nix() -> std::path::PathBuf {
    nixes().into_iter().flatten().find(|n| nix_version(&Some(n.clone())) >= (2, 30)).unwrap_or_else(|| {
        panic!(
            "no nix >= 2.30 among {:?}: scripts/test fetches Debian unstable's into target/nix-unstable \
                (scripts/lib.sh, need_unstable_nix)",
            nixes()
        )
    })
}

/// `cmd` running the lab with this nix (`EVALBENCH_NIX`), or the one on PATH.
pub fn with_nix<'a>(cmd: &'a mut Command, nix: &Option<std::path::PathBuf>) -> &'a mut Command {
    match nix {
        Some(n) => cmd.env("EVALBENCH_NIX", n),
        None => cmd.env_remove("EVALBENCH_NIX"),
    }
}

/// The nix to run directly: the given one, or nix on PATH.
pub fn nix_command(nix: &Option<std::path::PathBuf>) -> Command {
    match nix {
        Some(n) => Command::new(n),
        None => Command::new("nix"),
    }
}

/// `text` with every run of white space one space: a sentence as printed,
/// wherever its lines wrapped (output is wrapped at 160 characters).
pub fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn evalbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_evalbench"))
}

pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("evalbench runs");
    assert!(
        out.status.success(),
        "{:?} failed: {}\nstdout: {}\nstderr: {}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the sample pipeline into `dir` with the given extra arguments.
pub fn sample(dir: &Path, extra: &[&str]) -> PathBuf {
    run_ok(evalbench().arg("sample").arg("--out").arg(dir).args(extra));
    dir.to_path_buf()
}

/// A temporary directory under /tmp that PostgreSQL's unprivileged user can
/// enter (mode 0755), for tests that start a server or a lab in it.
pub fn reachable_tmp(prefix: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    tmp
}

pub fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every span line of a pass's trace directory.
pub fn span_lines(pass_dir: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(pass_dir.join("trace")).unwrap() {
        let p = e.unwrap().path();
        for l in std::fs::read_to_string(&p).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v.get("name").is_some() {
                out.push(v);
            }
        }
    }
    out
}

/// A capture on `iface` with a port filter, armed before it returns: the
/// runner's own tcpdump collector, run on this host.
pub struct Capture {
    tcpdump: evalbench_harness::capture::tcpdump::Tcpdump,
    pub file: PathBuf,
}

impl Capture {
    pub fn start(iface: &str, port: u16, file: &Path) -> Capture {
        let host = evalbench_host::HostExec::local();
        let tcpdump = evalbench_harness::capture::tcpdump::Tcpdump::start(&host, iface, port, file)
            .expect("tcpdump (apt-get install tcpdump)");
        Capture { tcpdump, file: file.to_path_buf() }
    }

    pub fn stop(self) -> PathBuf {
        // Let the last replies reach the wire before the capture ends.
        std::thread::sleep(std::time::Duration::from_millis(300));
        // The window: everything until now (the runner's own stop cuts the same way).
        let stopped = self.tcpdump.stop(0, evalbench_host::now_us(), None).expect("tcpdump stops");
        // Said, for a test whose figures then disagree: packets the kernel dropped.
        if let Some(lost) = stopped.lost {
            eprintln!("{lost}");
        }
        self.file
    }
}

/// A real PostgreSQL for a test, stopped when dropped.
pub struct TestPg(pub evalbench_lab::pg::Pg);

impl TestPg {
    /// `dir` must be traversable by the PostgreSQL user (see `pg::check_reachable`).
    pub fn start(dir: &Path) -> TestPg {
        let pg = evalbench_lab::pg::Pg {
            dir: dir.join("pg"),
            port: evalbench_host::free_port().unwrap(),
            host: Default::default(),
            user: evalbench_lab::pg::ensure_user().unwrap(),
            bin: evalbench_lab::pg::bin_dir().unwrap(),
            admin_addr: None,
            settings: Vec::new(),
            password: evalbench_lab::pg::secret(),
            ci_password: evalbench_lab::pg::secret(),
        };
        pg.init().unwrap();
        pg.start().unwrap();
        pg.create_ci().unwrap();
        TestPg(pg)
    }
}

impl Drop for TestPg {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// A Markdown table: its header cells, and its rows' cells.
pub type Table = (Vec<String>, Vec<Vec<String>>);

/// The tables of a Markdown text as GitHub reads it (pulldown-cmark with
/// tables on): per table its header cells and its body rows' cells; and
/// whether the text holds any link.
pub fn markdown_tables(md: &str) -> (Vec<Table>, bool) {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut tables = Vec::new();
    let (mut head, mut rows, mut row, mut cell): (Vec<String>, Vec<Vec<String>>, Vec<String>, String) =
        Default::default();
    let (mut in_table, mut links) = (false, false);
    for ev in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match ev {
            Event::Start(Tag::Table(_)) => {
                head.clear();
                rows.clear();
                cell.clear();
                in_table = true;
            }
            Event::End(TagEnd::TableHead) => head = std::mem::take(&mut row),
            Event::End(TagEnd::TableRow) => rows.push(std::mem::take(&mut row)),
            Event::End(TagEnd::TableCell) => row.push(std::mem::take(&mut cell)),
            Event::End(TagEnd::Table) => {
                in_table = false;
                tables.push((head.clone(), std::mem::take(&mut rows)));
            }
            Event::Text(t) | Event::Code(t) if in_table => cell.push_str(&t),
            Event::Start(Tag::Link { .. }) | Event::Start(Tag::Image { .. }) => links = true,
            _ => {}
        }
    }
    (tables, links)
}

/// `evalbench PATH... --help`, which must succeed.
pub fn help_of<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(path: &[S]) -> String {
    let out = evalbench().args(path).arg("--help").output().unwrap();
    assert!(out.status.success(), "{path:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// `Commands:` of a help text: the subcommands, without `help`.
pub fn subcommands(help: &str) -> Vec<String> {
    let Some(at) = help.find("\nCommands:\n") else { return Vec::new() };
    help[at + 11..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect()
}

/// The hand-written Gradient diagnostic report (tests/data/gradient-report,
/// schema 19) made into `dir/name` with SQLite, then `then` run on it.
pub fn gradient_report(dir: &Path, name: &str, then: &str) -> PathBuf {
    let sql = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gradient-report/anonymised.sql"),
    )
    .unwrap();
    let path = dir.join(name);
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(&sql).unwrap();
    c.execute_batch(then).unwrap();
    path
}
