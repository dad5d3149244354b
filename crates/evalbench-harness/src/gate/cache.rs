//! Whether nix's eval cache already holds a step's drvPath, read from its
//! SQLite files: the gate says which steps it answered.

use std::path::PathBuf;

/// Where nix keeps its eval caches for this user.
fn eval_cache_dbs() -> Vec<PathBuf> {
    evalbench_lab::eval::eval_cache_files(&evalbench_lab::eval::cache_home())
}

/// Whether an eval cache already holds `path`'s drvPath: the step will be answered from it.
pub fn cache_holds(path: &[String]) -> bool {
    eval_cache_dbs().iter().any(|db| {
        let Ok(c) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
            return false;
        };
        let ids = |parents: &[i64], name: &str| -> Vec<i64> {
            let q = if parents.is_empty() {
                "SELECT rowid FROM Attributes WHERE name = ?1".to_string()
            } else {
                format!(
                    "SELECT rowid FROM Attributes WHERE name = ?1 AND parent IN ({})",
                    parents.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
                )
            };
            c.prepare(&q)
                .and_then(|mut st| st.query_map([name], |r| r.get::<_, i64>(0)).map(|rows| rows.flatten().collect()))
                .unwrap_or_default()
        };
        let Some((first, rest)) = path.split_first() else { return false };
        let mut frontier = ids(&[], first);
        for name in rest {
            if frontier.is_empty() {
                return false;
            }
            frontier = ids(&frontier, name);
        }
        !frontier.is_empty() && !ids(&frontier, "drvPath").is_empty()
    })
}
