//! Opening a report safely. A report is evidence from another machine and
//! may be hostile: it is opened read-only and immutable (SQLite writes
//! nothing, not even a journal, and trusts nothing in the file's schema),
//! with no extensions, a cap on its size and on any value's length, and
//! every query bounded by a budget of SQLite's steps, so a view or a corrupt
//! page cannot hold the reader for long. Tables are checked against schema
//! 19 before a row is read: a missing one is named, never guessed.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::error::{DiagnosticError, ErrorKind};
use crate::schema::{self, Presence};

/// SQLite's file header: a report is a SQLite file.
pub const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How much of a report is read before it is refused.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The file's size.
    pub max_bytes: u64,
    /// Rows of any one table.
    pub max_rows: u64,
    /// SQLite's virtual-machine steps over the whole read.
    pub max_steps: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        // A report of 100,000 derivations is about 60 MB and reads in well under a billion steps.
        Limits { max_bytes: 4 << 30, max_rows: 20_000_000, max_steps: 20_000_000_000 }
    }
}

/// Whether the file starts as a SQLite file does (what `summarize` and the
/// others ask before taking a path for a report rather than a bundle).
pub fn is_sqlite(path: &Path) -> bool {
    let mut head = [0u8; 16];
    path.is_file() && std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == MAGIC
}

/// Steps are counted in blocks of this many (SQLite calls the handler once a block).
const STEP_BLOCK: u64 = 10_000;

/// An open report: its connection, the tables it has with their columns, its budget.
pub(crate) struct Report {
    pub conn: Connection,
    pub file: PathBuf,
    pub limits: Limits,
    pub tables: BTreeMap<String, Vec<String>>,
    blocks: Arc<AtomicU64>,
}

/// `file:` URI of a path, percent-encoded where a URI would read it otherwise.
fn uri(path: &Path) -> String {
    let mut out = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => out.push(*b as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out.push_str("?immutable=1");
    out
}

impl Report {
    pub fn open(path: &Path, limits: Limits) -> Result<Report, DiagnosticError> {
        let err = |kind| DiagnosticError::new(path, kind);
        let meta = std::fs::metadata(path).map_err(|e| err(ErrorKind::Io(e)))?;
        if !meta.is_file() {
            return Err(err(ErrorKind::Invalid("not a file".into())));
        }
        if meta.len() > limits.max_bytes {
            return Err(err(ErrorKind::TooLarge { size: meta.len(), limit: limits.max_bytes }));
        }
        if !is_sqlite(path) {
            return Err(err(ErrorKind::NotSqlite));
        }
        let absolute = std::path::absolute(path).map_err(|e| err(ErrorKind::Io(e)))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(uri(&absolute), flags).map_err(|e| err(sqlite(e)))?;
        let mut report =
            Report { conn, file: path.to_path_buf(), limits, tables: BTreeMap::new(), blocks: Arc::default() };
        report.harden().map_err(|e| err(sqlite(e)))?;
        report.tables = report.list_tables()?;
        Ok(report)
    }

    /// Nothing in the file is trusted: no function its schema names runs, no
    /// value longer than 64 MiB is made, and every step counts against the budget.
    fn harden(&mut self) -> rusqlite::Result<()> {
        self.conn.execute_batch("PRAGMA trusted_schema = OFF; PRAGMA query_only = ON; PRAGMA cell_size_check = ON;")?;
        self.conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
        self.conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, 64 << 20)?;
        let (blocks, budget) = (self.blocks.clone(), self.limits.max_steps / STEP_BLOCK);
        self.conn
            .progress_handler(STEP_BLOCK as i32, Some(move || blocks.fetch_add(1, Ordering::Relaxed) >= budget))?;
        Ok(())
    }

    /// Every table (or view) the file has that schema 19 or the report's
    /// own two tables name, with its columns.
    fn list_tables(&self) -> Result<BTreeMap<String, Vec<String>>, DiagnosticError> {
        let mut known: Vec<&str> = schema::TABLES.iter().map(|t| t.name).collect();
        known.extend(["report_meta", "report_manifest"]);
        let mut out = BTreeMap::new();
        for name in known {
            let columns = self
                .query("sqlite_master", "SELECT name FROM pragma_table_info(?1)", [name], |r| r.get::<_, String>(0))?;
            if !columns.is_empty() {
                out.insert(name.to_string(), columns);
            }
        }
        Ok(out)
    }

    pub fn error(&self, kind: ErrorKind) -> DiagnosticError {
        DiagnosticError::new(&self.file, kind)
    }

    /// Rows of a query, each mapped; `table` names it in errors.
    fn query<T, P: rusqlite::Params>(
        &self,
        table: &str,
        sql: &str,
        params: P,
        mut f: impl FnMut(&rusqlite::Row) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, DiagnosticError> {
        let map = |e: rusqlite::Error| self.sqlite_error(table, e);
        let mut stmt = self.conn.prepare(sql).map_err(map)?;
        let mut rows = stmt.query(params).map_err(map)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(map)? {
            out.push(f(row).map_err(map)?);
        }
        Ok(out)
    }

    fn sqlite_error(&self, table: &str, e: rusqlite::Error) -> DiagnosticError {
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
            return self.error(ErrorKind::Bounded { table: table.to_string(), steps: self.limits.max_steps });
        }
        self.error(ErrorKind::Sqlite(format!("{table}: {e}")))
    }

    /// Whether the report has the table; an error where schema 19 says it must.
    pub fn require(
        &self,
        name: &str,
        schema_version: i64,
        instance: bool,
        logs: bool,
    ) -> Result<bool, DiagnosticError> {
        let table = schema::table(name).expect("a table of schema 19");
        let needed = match table.presence {
            Presence::Always => (true, ""),
            Presence::Instance => (instance, " where include_instance is on"),
            Presence::Logs => (logs, " where include_logs is on"),
            Presence::Optional => (false, ""),
        };
        let Some(columns) = self.tables.get(name) else {
            return match needed {
                (true, why) => {
                    Err(self.error(ErrorKind::MissingTable { table: name.to_string(), schema: schema_version, why }))
                }
                (false, _) => Ok(false),
            };
        };
        if let Some(missing) = table.names().find(|c| !columns.iter().any(|h| h == c)) {
            return Err(self.error(ErrorKind::MissingColumn {
                table: name.to_string(),
                column: missing.to_string(),
                schema: schema_version,
            }));
        }
        Ok(true)
    }

    /// Every row of `table`'s `columns`, each given to `f` as [`Cells`]; at
    /// most `max_rows` of them.
    pub fn each(
        &self,
        table: &str,
        columns: &[&str],
        mut f: impl FnMut(&Cells) -> Result<(), ErrorKind>,
    ) -> Result<(), DiagnosticError> {
        let list = columns.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
        let sql = format!("SELECT {list} FROM \"{table}\" LIMIT {}", self.limits.max_rows.saturating_add(1));
        let map = |e: rusqlite::Error| self.sqlite_error(table, e);
        let mut stmt = self.conn.prepare(&sql).map_err(map)?;
        let mut rows = stmt.query([]).map_err(map)?;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(map)? {
            n += 1;
            if n > self.limits.max_rows {
                return Err(
                    self.error(ErrorKind::TooManyRows { table: table.to_string(), limit: self.limits.max_rows })
                );
            }
            f(&Cells { table, n, columns, row }).map_err(|k| self.error(k))?;
        }
        Ok(())
    }

    /// The rows a table holds (0 for a table the report does not have).
    pub fn count(&self, table: &str) -> Result<u64, DiagnosticError> {
        if !self.tables.contains_key(table) {
            return Ok(0);
        }
        let n = self.query(table, &format!("SELECT count(*) FROM \"{table}\""), [], |r| r.get::<_, i64>(0))?;
        Ok(n.first().copied().unwrap_or(0).max(0) as u64)
    }
}

fn sqlite(e: rusqlite::Error) -> ErrorKind {
    ErrorKind::Sqlite(e.to_string())
}

/// One row of a table being read, its values typed on demand; a value of
/// the wrong kind is an error naming the table, the row and the column.
pub(crate) struct Cells<'a> {
    table: &'a str,
    n: u64,
    columns: &'a [&'a str],
    row: &'a rusqlite::Row<'a>,
}

impl Cells<'_> {
    fn bad(&self, i: usize, expected: &'static str, found: String) -> ErrorKind {
        let found: String = found.chars().take(80).collect();
        ErrorKind::BadValue { table: self.table.into(), row: self.n, column: self.columns[i].into(), expected, found }
    }

    fn value(&self, i: usize) -> Result<ValueRef<'_>, ErrorKind> {
        self.row.get_ref(i).map_err(|e| ErrorKind::Sqlite(format!("{}: {e}", self.table)))
    }

    /// An integer, or a text or whole real that is one; None for NULL.
    pub fn int(&self, i: usize) -> Result<Option<i64>, ErrorKind> {
        match self.value(i)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(v) => Ok(Some(v)),
            ValueRef::Real(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
            ValueRef::Text(t) => {
                let s = String::from_utf8_lossy(t);
                s.trim().parse().map(Some).map_err(|_| self.bad(i, "an integer", format!("{s:?}")))
            }
            other => Err(self.bad(i, "an integer", format!("{other:?}"))),
        }
    }

    /// A number; None for NULL.
    pub fn real(&self, i: usize) -> Result<Option<f64>, ErrorKind> {
        match self.value(i)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(v) => Ok(Some(v as f64)),
            ValueRef::Real(f) if f.is_finite() => Ok(Some(f)),
            ValueRef::Text(t) => {
                let s = String::from_utf8_lossy(t);
                s.trim()
                    .parse()
                    .ok()
                    .filter(|f: &f64| f.is_finite())
                    .map(Some)
                    .ok_or_else(|| self.bad(i, "a number", format!("{s:?}")))
            }
            other => Err(self.bad(i, "a number", format!("{other:?}"))),
        }
    }

    /// A text (a number is given as its text); None for NULL.
    pub fn text(&self, i: usize) -> Result<Option<String>, ErrorKind> {
        match self.value(i)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(v) => Ok(Some(v.to_string())),
            ValueRef::Real(f) => Ok(Some(f.to_string())),
            ValueRef::Text(t) => std::str::from_utf8(t)
                .map(|s| Some(s.to_string()))
                .map_err(|_| self.bad(i, "UTF-8 text", "bytes".into())),
            ValueRef::Blob(_) => Err(self.bad(i, "text", "a blob".into())),
        }
    }

    /// A timestamp (PostgreSQL's text, UTC) as Unix µs; None for NULL.
    pub fn time(&self, i: usize) -> Result<Option<i64>, ErrorKind> {
        let Some(t) = self.text(i)? else { return Ok(None) };
        crate::time::parse_us(&t)
            .map(Some)
            .ok_or_else(|| self.bad(i, "a timestamp such as 2026-12-01 10:15:30.123456", format!("{t:?}")))
    }
}
