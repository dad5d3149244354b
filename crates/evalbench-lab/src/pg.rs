//! A real PostgreSQL for the lab: initdb into the lab's directory, started
//! from the machine's binaries as an unprivileged user (the server refuses
//! root), with pg_stat_statements and auto_explain preloaded, and a CI role
//! `gradient` distinct from the superuser so statistics filter by role.
//!
//! Every local user can reach the lab's addresses, so a password is what
//! keeps them out: each role has one, generated for the lab (scram-sha-256,
//! never `trust`), and the socket's directory is the server's user's alone.
//! Passwords reach psql and the server in their environment, never on a
//! command line (which /proc shows every user).

use crate::error::LabError;
use std::path::{Path, PathBuf};

use evalbench_host::{is_root, run, HostExec};

/// The system user PostgreSQL runs as when the lab runs as root.
pub const PG_USER: &str = "evalbench-pg";
pub const CI_ROLE: &str = "gradient";

#[derive(Debug, Clone)]
pub struct Pg {
    pub dir: PathBuf,
    pub port: u16,
    pub host: HostExec,
    pub user: Option<String>,
    pub bin: PathBuf,
    /// Extra address to listen on, for the runner's statistics connection.
    pub admin_addr: Option<String>,
    /// `--pg-setting NAME=VALUE`: given to the server on its command line.
    pub settings: Vec<PgSetting>,
    /// The superuser's password and the CI role's, generated for the lab.
    pub password: String,
    pub ci_password: String,
}

/// A password or token for one lab: 128 random bits, as 32 hex digits
/// (nothing a shell, a URL or an SQL literal must quote).
pub fn secret() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())[..32].to_string()
}

/// A connection string with its password hidden, for anything a person
/// reads (an error, a log line): `password=...` and `user:pass@` alike.
pub fn redacted(url: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for word in url.split(' ') {
        match word.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => out.push(format!("{k}=***")),
            _ => out.push(word.to_string()),
        }
    }
    let s = out.join(" ");
    match (s.find("://"), s.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let auth = &s[scheme + 3..at];
            match auth.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &s[..scheme + 3], &s[at..]),
                None => s,
            }
        }
        _ => s,
    }
}

/// Settings the lab and the runner manage themselves: where the server
/// listens and logs, what it preloads, and auto_explain's switch.
const MANAGED: &[&str] = &[
    "listen_addresses",
    "port",
    "unix_socket_directories",
    "shared_preload_libraries",
    "data_directory",
    "config_file",
    "hba_file",
    "ident_file",
    "log_line_prefix",
    "logging_collector",
    "log_destination",
    "log_directory",
    "log_filename",
    "auto_explain.log_min_duration",
    "auto_explain.log_analyze",
    "pg_stat_statements.track",
];

const PRELOAD: &str = "shared_preload_libraries=pg_stat_statements,auto_explain";

/// A `--pg-setting NAME=VALUE`, validated once: the name as PostgreSQL
/// spells its settings (letters, digits, `_`, `.`), not one the lab
/// manages, and a value without a NUL byte. Only this type reaches the
/// server's command line and the SQL that reads the setting back, and
/// lab.json is checked again when read, since a person may edit it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "(String, String)", into = "(String, String)")]
pub struct PgSetting {
    name: String,
    value: String,
}

/// A `--pg-setting` the lab refuses before PostgreSQL sees it: the
/// setting as given, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PgSettingError {
    #[error("{0:?}: expected NAME=VALUE, e.g. enable_seqscan=off")]
    NotNameValue(String),
    #[error("{0:?}: a setting's name is letters, digits, '_' and '.', e.g. enable_seqscan=off")]
    BadName(String),
    #[error("{0:?}: the value holds a NUL byte")]
    NulInValue(String),
    /// The name, lower-cased.
    #[error(
        "{0}: the lab sets this itself (the server's addresses, its log, what it preloads and auto_explain's switch), \
            so it cannot be changed here"
    )]
    Managed(String),
}

impl PgSetting {
    pub fn new(name: &str, value: &str) -> Result<PgSetting, PgSettingError> {
        let shown = format!("{name}={value}");
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err(PgSettingError::BadName(shown));
        }
        if value.contains('\0') {
            return Err(PgSettingError::NulInValue(shown));
        }
        if MANAGED.contains(&name.as_str()) {
            return Err(PgSettingError::Managed(name));
        }
        Ok(PgSetting { name, value: value.to_string() })
    }

    /// Reads `NAME=VALUE` (the command line's form).
    pub fn parse(s: &str) -> Result<PgSetting, PgSettingError> {
        let (name, value) = s.split_once('=').ok_or_else(|| PgSettingError::NotNameValue(s.to_string()))?;
        PgSetting::new(name, value)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn value(&self) -> &str {
        &self.value
    }
}

impl TryFrom<(String, String)> for PgSetting {
    type Error = PgSettingError;
    fn try_from((n, v): (String, String)) -> Result<PgSetting, PgSettingError> {
        PgSetting::new(&n, &v)
    }
}

impl From<PgSetting> for (String, String) {
    fn from(s: PgSetting) -> (String, String) {
        (s.name, s.value)
    }
}

/// A value for pg_ctl's `-o`, which a shell reads: single-quoted.
fn shell_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A file only its owner reads (0600), written whole.
pub fn write_private(path: &Path, text: &str) -> Result<(), LabError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(crate::LabError::io(path))?;
    f.write_all(text.as_bytes()).map_err(crate::LabError::io(path))
}

/// The newest PostgreSQL installed under /usr/lib/postgresql.
pub fn bin_dir() -> Result<PathBuf, LabError> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| LabError::Needs("PostgreSQL is not installed: apt-get install postgresql postgresql-contrib"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
        .filter(|(_, p)| p.join("initdb").is_file())
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, p)| p)
        .ok_or(LabError::Needs("no initdb under /usr/lib/postgresql: apt-get install postgresql"))
}

/// Creates the unprivileged user when running as root; returns who runs PostgreSQL.
pub fn ensure_user() -> Result<Option<String>, LabError> {
    if !is_root() {
        return Ok(None);
    }
    if run(std::process::Command::new("id").args(["-u", PG_USER])).is_err() {
        run(std::process::Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            PG_USER,
        ]))?;
    }
    Ok(Some(PG_USER.to_string()))
}

/// Every directory above `dir` must let PostgreSQL's user through.
pub fn check_reachable(dir: &Path) -> Result<(), LabError> {
    use std::os::unix::fs::PermissionsExt;
    for a in dir.ancestors().skip(1) {
        if let Ok(m) = std::fs::metadata(a) {
            if m.permissions().mode() & 0o001 == 0 {
                return Err(LabError::Unreachable {
                    dir: a.to_path_buf(),
                    user: PG_USER,
                    mode: m.permissions().mode() & 0o7777,
                });
            }
        }
    }
    Ok(())
}

impl Pg {
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }
    pub fn sock(&self) -> PathBuf {
        self.dir.join("sock")
    }
    fn tool(&self, name: &str) -> std::process::Command {
        self.host.command_as(self.bin.join(name), self.user.as_deref())
    }
    fn chown(&self, p: &Path) -> Result<(), LabError> {
        if let Some(u) = &self.user {
            run(std::process::Command::new("chown").args(["-R", &format!("{u}:")]).arg(p))?;
        }
        Ok(())
    }

    /// initdb once; later calls find the cluster and do nothing.
    pub fn init(&self) -> Result<(), LabError> {
        if self.data().join("PG_VERSION").is_file() {
            return Ok(());
        }
        for d in [self.dir.clone(), self.data(), self.sock()] {
            std::fs::create_dir_all(&d).map_err(crate::LabError::io(&d))?;
        }
        // The socket's directory is the server's user's alone.
        {
            use std::os::unix::fs::PermissionsExt;
            let sock = self.sock();
            std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o700))
                .map_err(crate::LabError::io(&sock))?;
        }
        // The superuser's password from a file only its user reads, removed once read.
        let pwfile = self.dir.join(".pwfile");
        write_private(&pwfile, &self.password)?;
        self.chown(&self.dir)?;
        let made = run(self
            .tool("initdb")
            .arg("-D")
            .arg(self.data())
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["-U", "postgres", "--auth=scram-sha-256", "-E", "UTF8", "--no-instructions"]));
        let _ = std::fs::remove_file(&pwfile);
        made?;
        Ok(())
    }

    /// Who may connect, and how: every role with its password
    /// (scram-sha-256), over the socket, from loopback, and from the
    /// runner's address in the root namespace (statistics as the
    /// superuser); nothing else, and never `trust`. Written whole at every
    /// start, so an older lab's `trust` lines do not survive.
    fn write_hba(&self) -> Result<(), LabError> {
        let mut text = String::from(
            "# evalbench lab: every connection by password (scram-sha-256)\n\
             local all all scram-sha-256\n\
             host all all 127.0.0.1/32 scram-sha-256\n",
        );
        if let Some((net, _)) = self.admin_addr.as_deref().and_then(|a| a.rsplit_once('.')) {
            text.push_str(&format!(
                "# the runner, from the root namespace\nhost all postgres {net}.1/32 scram-sha-256\n"
            ));
        }
        let hba = self.data().join("pg_hba.conf");
        std::fs::write(&hba, text).map_err(crate::LabError::io(&hba))?;
        self.chown(&hba)
    }

    pub fn running(&self) -> bool {
        run(self.tool("pg_ctl").arg("-D").arg(self.data()).arg("status")).is_ok()
    }

    /// The port of the running cluster, from postmaster.pid (its 4th line).
    pub fn running_port(&self) -> Option<u16> {
        let text = std::fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        text.lines().nth(3)?.trim().parse().ok()
    }

    pub fn start(&self) -> Result<(), LabError> {
        if self.running() {
            if self.running_port() == Some(self.port) {
                return Ok(());
            }
            // Running, but not where this lab expects it (an earlier `up` failed half way).
            self.stop();
        }
        let listen = match &self.admin_addr {
            Some(a) => format!("127.0.0.1,{a}"),
            None => "127.0.0.1".to_string(),
        };
        self.write_hba()?;
        // A cold reset makes every table anew, so an evaluation starts on
        // tables without statistics; with autovacuum's default minute, one of
        // 10,000 packages wrote its whole graph on plans made for empty tables
        // (`promote` 5.1 s, against 0.47 s once analyze keeps up). A server
        // that has run for a while has its statistics: a second's nap keeps
        // up with the lab's. A `--pg-setting` given after overrides it.
        let mut opts = format!(
            "-p {} -k {} -c listen_addresses={listen} -c {PRELOAD} -c pg_stat_statements.track=all -c \
                pg_stat_statements.track_planning=on -c fsync=off -c autovacuum_naptime=1s",
            self.port,
            self.sock().display()
        );
        for setting in &self.settings {
            opts.push_str(&format!(" -c {}", shell_quoted(&format!("{}={}", setting.name(), setting.value()))));
        }
        run(self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("postgres.log"))
            .args(["-w", "-t", "60", "-o", &opts, "start"]))?;
        Ok(())
    }

    /// Asks PostgreSQL itself whether it knows each setting and takes its
    /// value (`postgres -C`, which runs beside a running server): an unknown
    /// name or a bad value is refused with PostgreSQL's own words.
    pub fn check_settings(&self) -> Result<(), LabError> {
        for setting in &self.settings {
            let (name, value) = (setting.name(), setting.value());
            let out = self
                .tool("postgres")
                .arg("-D")
                .arg(self.data())
                .args(["-c", PRELOAD, "-c", &format!("{name}={value}"), "-C", name])
                .output()
                .map_err(|source| LabError::Spawn { command: format!("postgres -C {name}"), source })?;
            if !out.status.success() {
                let said = String::from_utf8_lossy(&out.stderr);
                let said = said
                    .lines()
                    .map(|l| l.split_once("FATAL:").map_or(l, |(_, m)| m).trim())
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(LabError::PgSetting {
                    setting: format!("{name}={value}"),
                    said: format!("PostgreSQL refuses it: {said}"),
                });
            }
        }
        Ok(())
    }

    /// The settings as the running server has them, each checked to come
    /// from the command line: a library's setting with a bad value is only
    /// warned about by the server, which keeps its default.
    pub fn applied_settings(&self) -> Result<Vec<(String, String)>, LabError> {
        let mut out = Vec::new();
        for setting in &self.settings {
            let (name, value) = (setting.name(), setting.value());
            let row = self.psql(
                "postgres",
                &format!("SELECT current_setting(name), source FROM pg_settings WHERE name = '{name}'"),
            )?;
            let (shown, source) = row.trim().split_once('|').unwrap_or(("", ""));
            if source != "command line" {
                let log = std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default();
                let said: Vec<&str> =
                    log.lines().rev().filter(|l| l.contains(&format!("\"{name}\""))).take(1).collect();
                return Err(LabError::PgSetting {
                    setting: format!("{name}={value}"),
                    said: format!(
                        "the server did not take it (source: {}){}",
                        if source.is_empty() { "no such setting" } else { source },
                        said.first().map(|l| format!("; its log says: {}", l.trim())).unwrap_or_default()
                    ),
                });
            }
            out.push((name.to_string(), shown.to_string()));
        }
        Ok(out)
    }

    pub fn stop(&self) {
        if self.data().join("postmaster.pid").exists() {
            let _ = run(self.tool("pg_ctl").arg("-D").arg(self.data()).args(["-m", "fast", "-w", "stop"]));
        }
    }

    /// Runs SQL as the superuser over the Unix socket (its password in
    /// psql's environment).
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, LabError> {
        self.psql_each(db, &[sql])
    }

    /// Runs each command in `commands` in one psql session, each in a
    /// transaction of its own (psql's `-c`, once per command; a backslash
    /// command such as `\c DB` alone in its own), stopping at the first
    /// error; the output is every command's, in order. A cold reset is two
    /// such sessions, where it was ten psql processes: 0.5 s of every cold
    /// run, a third of a release build's whole cold run of the hello flake.
    pub fn psql_each(&self, db: &str, commands: &[&str]) -> Result<String, LabError> {
        let mut c = self.tool("psql");
        c.env("PGPASSWORD", &self.password).arg("-h").arg(self.sock());
        c.args(["-p", &self.port.to_string(), "-U", "postgres", "-d", db, "-X", "-q", "-A", "-t"]);
        c.args(["-v", "ON_ERROR_STOP=1"]);
        for sql in commands {
            c.arg("-c").arg(sql);
        }
        Ok(run(&mut c)?)
    }

    /// The CI role and its database, with pg_stat_statements; idempotent.
    pub fn create_ci(&self) -> Result<(), LabError> {
        self.make_ci(false)
    }

    /// The cold reset: the CI database dropped and made again, empty.
    pub fn recreate_ci_db(&self) -> Result<(), LabError> {
        self.make_ci(true)
    }

    /// The role (made or its password set), the server's settings, and
    /// whether the database is there, in one session; the database and its
    /// extension in a second. `drop` drops the database first.
    fn make_ci(&self, drop: bool) -> Result<(), LabError> {
        let dropped = format!("DROP DATABASE IF EXISTS {CI_ROLE} WITH (FORCE)");
        // The password is 32 hex digits: nothing in it to quote.
        let role = format!(
            "DO $$BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{CI_ROLE}') \
             THEN ALTER ROLE {CI_ROLE} LOGIN PASSWORD '{pw}'; \
             ELSE CREATE ROLE {CI_ROLE} LOGIN PASSWORD '{pw}'; END IF; END$$",
            pw = self.ci_password
        );
        let has_db = format!("SELECT count(*) FROM pg_database WHERE datname = '{CI_ROLE}'");
        let mut first: Vec<&str> = Vec::new();
        if drop {
            first.push(&dropped);
        }
        first.push(&role);
        // Timestamps on every log line, so auto_explain's output can be cut to a window.
        // Set here, not on the command line: the runner switches auto_explain
        // with ALTER SYSTEM, which a command-line setting would override.
        first.extend([
            "ALTER SYSTEM SET log_line_prefix = '%m [%p] %u@%d '",
            "ALTER SYSTEM SET auto_explain.log_analyze = on",
            "ALTER SYSTEM SET auto_explain.log_timing = off",
            "ALTER SYSTEM SET auto_explain.log_min_duration = -1",
            "SELECT pg_reload_conf()",
        ]);
        first.push(&has_db);
        let out = self.psql_each("postgres", &first)?;
        // The count is the session's last line of output.
        let exists = out.lines().last().map(str::trim) != Some("0");
        let create = format!("CREATE DATABASE {CI_ROLE} OWNER {CI_ROLE}");
        let connect = format!("\\c {CI_ROLE}");
        let mut second: Vec<&str> = Vec::new();
        if !exists {
            second.push(&create);
        }
        second.extend([connect.as_str(), "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"]);
        self.psql_each("postgres", &second)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::PgSetting;

    #[test]
    fn a_setting_is_checked_on_the_command_line_and_again_in_lab_json() {
        let s = PgSetting::parse("Work_Mem=64MB").unwrap();
        assert_eq!((s.name(), s.value()), ("work_mem", "64MB"));
        assert!(PgSetting::parse("work_mem").unwrap_err().to_string().contains("expected NAME=VALUE"));
        assert!(PgSetting::parse("port=1").unwrap_err().to_string().contains("the lab sets this itself"));
        // lab.json keeps a pair, as before; read back, it is checked again,
        // so an edited file cannot put SQL where a name goes.
        assert_eq!(serde_json::to_string(&s).unwrap(), r#"["work_mem","64MB"]"#);
        assert_eq!(serde_json::from_str::<PgSetting>(r#"["work_mem","64MB"]"#).unwrap(), s);
        let bad = serde_json::from_str::<Vec<PgSetting>>(r#"[["x' OR '1'='1", "on"]]"#).unwrap_err().to_string();
        assert!(bad.contains("a setting's name is letters"), "{bad}");
        let dir = tempfile::tempdir().unwrap();
        let mut st = crate::state::LabState { dir: dir.path().to_path_buf(), ..Default::default() };
        st.pg_settings = vec![s];
        st.save().unwrap();
        assert_eq!(crate::state::LabState::load(dir.path()).unwrap().pg_settings[0].name(), "work_mem");
        let path = crate::state::LabState::path(dir.path());
        let text = std::fs::read_to_string(&path).unwrap().replace("work_mem", "work_mem'; DROP TABLE evals; --");
        std::fs::write(&path, text).unwrap();
        let e = crate::state::LabState::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("lab.json") && e.contains("a setting's name"), "{e}");
    }
}
