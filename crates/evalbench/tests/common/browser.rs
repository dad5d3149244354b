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

/// URLs the page itself asked for: the browser's own background requests
/// (update checks, network time) carry no origin and are left out.
pub fn page_requests(netlog: &str) -> Vec<String> {
    let log: serde_json::Value = serde_json::from_str(netlog)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", netlog.trim_end().trim_end_matches(','))))
        .expect("a readable network log");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].as_u64().expect("netlog constants");
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter(|e| e["params"]["initiator"] != "not an origin")
        .filter_map(|e| e["params"]["url"].as_str().map(String::from))
        .filter(|u| !u.starts_with("file://") && !u.starts_with("data:"))
        .collect()
}

pub fn no_network(b: &Browsed) {
    let remote = page_requests(&b.netlog);
    assert!(remote.is_empty(), "the page made network requests: {remote:?}");
}

/// Nothing said on the console: no script ran, none was refused.
pub fn no_console(b: &Browsed) {
    let console: Vec<&str> = b
        .stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Refused to"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:?}");
}
