//! docs/gradient-reports.md names every table of schema 19 and every column
//! of each, in that table's section: the document and the reader's contract
//! cannot drift apart silently.

use evalbench_diagnostic::schema::TABLES;

#[test]
fn the_document_names_every_table_and_column() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/gradient-reports.md")).unwrap();
    for t in TABLES {
        let heading = format!("### `{}`", t.name);
        let start = doc.find(&heading).unwrap_or_else(|| panic!("no section {heading}"));
        let section = doc[start + heading.len()..].split("\n### ").next().unwrap();
        for c in t.names() {
            assert!(section.contains(&format!("`{c}`")), "{}'s section does not name `{c}`", t.name);
        }
    }
}
