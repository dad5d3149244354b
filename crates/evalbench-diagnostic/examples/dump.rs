//! Prints a report as evalbench reads it (JSON), for a look by hand.
fn main() {
    let path = std::env::args().nth(1).expect("a report");
    match evalbench_diagnostic::read(std::path::Path::new(&path), Default::default()) {
        Ok(d) => println!("{}", serde_json::to_string_pretty(&d).unwrap()),
        Err(e) => eprintln!("{e}"),
    }
}
