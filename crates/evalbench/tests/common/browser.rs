//! A page opened in a real browser (Debian's chromium, headless): its DOM
//! after load, the browser's log and its network log.

use std::path::Path;
use std::process::Command;

pub fn chromium() -> &'static str {
    for c in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(c).exists() {
            return c;
        }
    }
    panic!("chromium is not installed (scripts/test installs it: apt-get install chromium)");
}

pub struct Browsed {
    pub dom: String,
    pub stderr: String,
    pub netlog: String,
}

/// Loads the page headless; returns the DOM after load, the browser's log and its network log.
pub fn browse(page: &Path, work: &Path, screenshot: Option<&Path>) -> Browsed {
    let netlog = work.join("netlog.json");
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1400,2000",
    ])
    .arg(format!("--user-data-dir={}", work.join("profile").display()))
    .arg(format!("--log-net-log={}", netlog.display()));
    match screenshot {
        Some(s) => c.arg(format!("--screenshot={}", s.display())),
        None => c.arg("--dump-dom"),
    };
    let out = c.arg(format!("file://{}", page.display())).output().expect("chromium runs");
    Browsed {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        netlog: std::fs::read_to_string(&netlog).unwrap_or_default(),
    }
}
