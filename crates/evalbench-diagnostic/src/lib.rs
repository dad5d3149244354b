//! `evalbench-diagnostic`: Gradient's diagnostic report, the one file a
//! Gradient user has of a production evaluation (`GET /api/v1/evals/{id}/report`,
//! a SQLite file, `gradient-report-<uuid group>-<date>.db`), read safely into
//! typed rows, beside the bundle reader: evalbench answers for evaluations it
//! did not run.
//!
//! The report comes from another machine and may be hostile: [`read`] opens
//! it read-only and immutable, trusts nothing in its schema, bounds its size,
//! its values and every query, and refuses a schema version it does not know
//! (naming it), a missing table or column (naming it), and a value of the
//! wrong kind (naming table, row and column). [`schema`] is the format's
//! contract (schema 19's tables, the phase codes per version), which the
//! lab's report writer uses too.

mod error;
pub mod model;
mod open;
mod read;
pub mod schema;
pub mod time;

pub use error::{DiagnosticError, ErrorKind};
pub use model::{Commit, Counts, Diagnostic, Evaluation, Job, ManifestRow, Message, Meta, Phase, WorkerSample};
pub use open::{is_sqlite, Limits, MAGIC};
pub use read::read;
