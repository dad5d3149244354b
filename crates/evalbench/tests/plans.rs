//! Plan comparison against the truth: the hello flake run twice
//! cold-instrumented, the second with `--pg-setting enable_seqscan=off`;
//! `compare` must call "plan changed" exactly the statements whose plans
//! EXPLAIN says the setting changes, asked of a real server with the same
//! statements and parameters under both settings. Same settings on both
//! sides: no plan changed, also when one side logged auto_explain's JSON
//! format. And the page, in a real browser.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::browser::{browse, no_console, no_network};
use common::*;
use serde_json::Value;

/// One cold-instrumented pass of the hello flake on its own lab.
fn run(tmp: &Path, name: &str, settings: &[&str]) -> PathBuf {
    let out = tmp.join(name);
    let mut cmd = evalbench();
    // The captures PostgreSQL's plans do not need are off: perf, strace and
    // nix's trace of every call (the test took 44 s with it here, 22 s without).
    cmd.args(["run", "--passes", "cold-instrumented", "--no-report", "--no-perf", "--no-strace", "--no-nix-trace"])
        .arg("--out")
        .arg(&out)
        .arg("--lab-dir")
        .arg(tmp.join(format!("lab-{name}")));
    for s in settings {
        cmd.args(["--pg-setting", s]);
    }
    run_ok(&mut cmd);
    out
}

/// The plan as the test reads EXPLAIN's JSON itself, independently of the
/// tool: node types, join types, strategies, relations, aliases, indexes,
/// sub-plan relationships, nested as the plan nests them.
fn shape(v: &Value) -> String {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    let children: Vec<String> = v["Plans"].as_array().map(|a| a.iter().map(shape).collect()).unwrap_or_default();
    format!(
        "{}|{}|{}|{}|{}|{}|{}|{}({})",
        s("Node Type"),
        s("Join Type"),
        s("Strategy"),
        s("Operation"),
        s("Relation Name"),
        s("Alias"),
        s("Index Name"),
        s("Parent Relationship"),
        children.join(",")
    )
}

/// Every execution the server logged (`log_min_duration_statement=0`):
/// the statement text and its parameters, as PostgreSQL printed them.
fn executions(bundle: &Path) -> Vec<(String, Vec<Option<String>>)> {
    let log = std::fs::read_to_string(bundle.join("cold-instrumented/pg/auto_explain.log")).unwrap();
    let mut out: Vec<(String, Vec<Option<String>>)> = Vec::new();
    let mut open: Option<String> = None;
    for line in log.lines() {
        if let Some(cont) = line.strip_prefix('\t') {
            if let Some(q) = &mut open {
                q.push('\n');
                q.push_str(cont);
            }
            continue;
        }
        if let Some(q) = open.take() {
            let params = line.split_once("DETAIL:  parameters: ").map(|(_, p)| parameters(p)).unwrap_or_default();
            out.push((q, params));
        }
        if let Some((_, rest)) = line.split_once(" ms  execute ") {
            open = rest.split_once(": ").map(|(_, q)| q.to_string());
        }
    }
    out
}

/// "$1 = 'a''b', $2 = NULL" as values.
fn parameters(s: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some((_, after)) = rest.split_once(" = ") {
        if let Some(r) = after.strip_prefix("NULL") {
            out.push(None);
            rest = r;
            continue;
        }
        let body = after.strip_prefix('\'').expect("a quoted value");
        let mut v = String::new();
        let mut chars = body.char_indices().peekable();
        let mut end = body.len();
        while let Some((i, c)) = chars.next() {
            if c == '\'' {
                if chars.peek().map(|x| x.1) == Some('\'') {
                    chars.next();
                    v.push('\'');
                    continue;
                }
                end = i + 1;
                break;
            }
            v.push(c);
        }
        out.push(Some(v));
        rest = &body[end..];
    }
    out
}

fn literal(v: &Option<String>) -> String {
    match v {
        Some(s) => format!("'{}'", s.replace('\'', "''")),
        None => "NULL".into(),
    }
}

/// EXPLAIN of every execution with its own parameters (a custom plan, as
/// the run's once-executed statements had), in one psql session on the
/// lab's server, under `setting`: the shape of each, in order.
fn explain_all(lab: &Path, runs: &[(String, Vec<Option<String>>)], setting: &str) -> Vec<String> {
    let st = read_json(&lab.join("lab.json"));
    let mut script = format!("SET enable_seqscan = {setting};\n");
    for (i, (text, params)) in runs.iter().enumerate() {
        let args = if params.is_empty() {
            String::new()
        } else {
            format!("({})", params.iter().map(literal).collect::<Vec<_>>().join(", "))
        };
        script.push_str(&format!(
            "\\echo @@{i}\nPREPARE evalbench_q AS {text};\nEXPLAIN (FORMAT JSON) EXECUTE \
                evalbench_q{args};\nDEALLOCATE evalbench_q;\n"
        ));
    }
    let file = lab.join(format!("explain-{setting}.sql"));
    std::fs::write(&file, script).unwrap();
    let out = run_ok(
        std::process::Command::new("/usr/lib/postgresql/15/bin/psql")
            .env("PGPASSWORD", st["pg_password"].as_str().unwrap())
            .arg("-h")
            .arg(lab.join("pg/sock"))
            .args([
                "-p",
                &st["pg_port"].to_string(),
                "-U",
                "postgres",
                "-d",
                "gradient",
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-f",
            ])
            .arg(&file),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let shapes: Vec<String> = text
        .split("@@")
        .skip(1)
        .map(|part| {
            let json = part.split_once('\n').map(|x| x.1).unwrap_or("");
            let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("EXPLAIN output {json}: {e}"));
            shape(&v[0]["Plan"])
        })
        .collect();
    assert_eq!(shapes.len(), runs.len());
    shapes
}

/// The most frequent of `shapes`, and whether another was as frequent.
fn most_frequent(shapes: &[&String]) -> (String, bool) {
    let mut n: BTreeMap<&String, usize> = BTreeMap::new();
    for s in shapes {
        *n.entry(s).or_default() += 1;
    }
    let top = n.values().copied().max().unwrap_or(0);
    let best: Vec<&&String> = n.iter().filter(|(_, c)| **c == top).map(|(s, _)| s).collect();
    (best[0].to_string(), best.len() > 1)
}

fn compare_json(a: &Path, b: &Path) -> Value {
    let out = run_ok(evalbench().args(["compare", "--json"]).arg(a).arg(b));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn changed(v: &Value) -> BTreeSet<String> {
    let plans = v["passes"][0]["plans"].as_array().expect("an instrumented pass has plans");
    plans.iter().filter(|p| p["change"] == "changed").map(|p| p["statement"].as_str().unwrap().to_string()).collect()
}

#[test]
fn plan_changes_are_exactly_those_explain_sees() {
    let tmp = reachable_tmp("evalbench-plans-test.");
    // Without autovacuum: an ANALYZE it starts part of the way through a
    // cold run changes the planner's statistics at a moment EXPLAIN
    // afterwards cannot replay; without it the tables stay unanalyzed, as
    // EXPLAIN finds them.
    // log_min_duration_statement=0 logs every execution with its parameters,
    // which the truth below needs: a plan depends on them (`drv_path =
    // ANY($1)` is a Seq Scan for 32 paths and a Bitmap Heap Scan for 4).
    const BOTH: [&str; 2] = ["autovacuum=off", "log_min_duration_statement=0"];
    let a = run(tmp.path(), "a", &BOTH);
    let b = run(tmp.path(), "b", &[BOTH[0], BOTH[1], "enable_seqscan=off"]);
    let a2 = run(tmp.path(), "a2", &BOTH);
    let run_b = read_json(&b.join("cold-instrumented/run.json"));
    assert_eq!(run_b["pg_settings"]["enable_seqscan"], "off", "run.json records the setting as the server showed it");
    assert_eq!(
        read_json(&a.join("cold-instrumented/run.json"))["pg_settings"],
        serde_json::json!({"autovacuum": "off", "log_min_duration_statement": "0"})
    );
    let summary = std::fs::read_to_string(b.join("summary.txt")).unwrap();
    assert!(
        summary.contains(
            "PostgreSQL ran with autovacuum=off enable_seqscan=off log_min_duration_statement=0 (--pg-setting) in \
                cold-instrumented."
        ),
        "{summary}"
    );

    let truth = explain_truth(tmp.path(), &a, &b);
    let ab = compare_json(&a, &b);
    assert_eq!(changed(&ab), truth, "compare's changed plans against EXPLAIN's");
    text_shows_whole_trees(&a, &b, &truth);
    markdown_shows_both_trees(&a, &b, &ab, &truth);
    a_against_a_changes_nothing(tmp.path(), &a, &a2);
    the_page_marks_the_changed_nodes(tmp.path(), &a, &b, &truth);
    hostile_plans_and_spans_are_text(tmp.path(), &a);
}

/// The truth: every statement A ran, EXPLAINed with its own parameters on
/// A's database under both settings; a statement's plan under a setting
/// is its most frequent one, as compare's is. The statements whose plan changed.
fn explain_truth(tmp: &Path, a: &Path, b: &Path) -> BTreeSet<String> {
    let lab = tmp.join("lab-a");
    run_ok(evalbench().args(["lab", "up", "--pg-setting", "autovacuum=off", "--lab-dir"]).arg(&lab));
    let runs = executions(a);
    let in_b: BTreeSet<String> =
        executions(b).into_iter().map(|(q, _)| evalbench_decode::normalize::normalize_sql(&q)).collect();
    let (on, off) = (explain_all(&lab, &runs, "on"), explain_all(&lab, &runs, "off"));
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(&lab));
    let mut by_statement: BTreeMap<String, (Vec<&String>, Vec<&String>)> = BTreeMap::new();
    for (i, (q, _)) in runs.iter().enumerate() {
        let key = evalbench_decode::normalize::normalize_sql(q);
        if in_b.contains(&key) {
            let e = by_statement.entry(key).or_default();
            e.0.push(&on[i]);
            e.1.push(&off[i]);
        }
    }
    // Changed, as docs/comparing.md defines it: another most frequent plan, and at
    // least half of the runs on another plan (total variation distance).
    let mut truth = BTreeSet::new();
    for (key, (x, y)) in &by_statement {
        let ((px, tx), (py, ty)) = (most_frequent(x), most_frequent(y));
        assert!(!tx && !ty, "{key}: two plans equally frequent; the truth would be a coin toss");
        let share = |v: &Vec<&String>, s: &String| v.iter().filter(|t| **t == s).count() as f64 / v.len() as f64;
        let all: BTreeSet<&String> = x.iter().chain(y.iter()).copied().collect();
        let moved: f64 = all.iter().map(|s| (share(x, s) - share(y, s)).abs()).sum::<f64>() / 2.0;
        if px != py && moved >= 0.5 {
            truth.insert(key.clone());
        }
    }
    assert!(
        runs.len() >= 500 && by_statement.len() >= 20,
        "{} executions of {} statements",
        runs.len(),
        by_statement.len()
    );
    assert!(!truth.is_empty(), "enable_seqscan=off changes some plans, says EXPLAIN");
    eprintln!(
        "EXPLAIN: {} executions of {} statements run on both sides; {} plans changed: {truth:#?}",
        runs.len(),
        by_statement.len(),
        truth.len()
    );
    truth
}

/// compare's text: trees shown whole, the settings of both sides.
fn text_shows_whole_trees(a: &Path, b: &Path, truth: &BTreeSet<String>) {
    let text = String::from_utf8(run_ok(evalbench().arg("compare").arg(a).arg(b)).stdout).unwrap();
    assert!(text.contains(&format!("{} plan changed", truth.len())), "{text}");
    // Trees are shown whole: every node line with rows ends in its loops count, nothing cut with "…".
    let tree_lines: Vec<&str> = text.lines().filter(|l| l.contains(" | ")).collect();
    assert!(!tree_lines.is_empty() && tree_lines.iter().all(|l| !l.contains('…')), "{text}");
    for l in &tree_lines {
        for side in l.split(" | ") {
            assert!(
                !side.trim_end().ends_with("loops=") && !side.trim_end().ends_with("rows="),
                "a node cut short: {l}"
            );
        }
    }
    assert!(
        text.contains(
            "PostgreSQL settings: A autovacuum=off, log_min_duration_statement=0; B autovacuum=off, \
                enable_seqscan=off, log_min_duration_statement=0"
        ),
        "{text}"
    );
}

/// The Markdown: a table of both trees per changed plan, a row per node of the larger.
fn markdown_shows_both_trees(a: &Path, b: &Path, ab: &serde_json::Value, truth: &BTreeSet<String>) {
    let md = String::from_utf8(
        run_ok(evalbench().args(["compare", "--format", "markdown", "--top", "1000"]).arg(a).arg(b)).stdout,
    )
    .unwrap();
    let (tables, links) = markdown_tables(&md);
    let trees: Vec<&Table> = tables.iter().filter(|(head, _)| head.len() == 2 && head[0].starts_with("A: ")).collect();
    // Each tree pair under the line that names its change and statement:
    // the plans changed are EXPLAIN's, exactly; any other is a statement
    // that only gained or lost a rare plan (which one run of the server may
    // or may not choose) or that one side never ran, named as such.
    let named: Vec<(&str, &str)> = md
        .lines()
        .filter_map(|l| {
            let (change, rest) = l.strip_prefix("**")?.split_once("** (")?;
            Some((change, rest.split_once("): ")?.1))
        })
        .collect();
    assert_eq!(named.len(), trees.len(), "a change and a statement over every tree: {md}");
    let md_changed: BTreeSet<&str> = named.iter().filter(|(c, _)| *c == "plan changed").map(|(_, s)| *s).collect();
    let truth_cells: Vec<String> = truth.iter().map(|q| evalbench_report::output::markdown::cell(q)).collect();
    assert_eq!(
        md_changed,
        truth_cells.iter().map(String::as_str).collect(),
        "the Markdown's changed plans against EXPLAIN's"
    );
    assert!(
        named
            .iter()
            .all(|(c, _)| ["plan changed", "gained or lost a plan", "new statement", "gone statement"].contains(c)),
        "{named:?}"
    );
    let shown: Vec<&serde_json::Value> =
        ab["passes"][0]["plans"].as_array().unwrap().iter().filter(|p| p["change"] != "same").collect();
    assert_eq!(trees.len(), shown.len(), "{md}");
    assert!(!links, "nothing links anywhere");
    for ((_, rows), p) in trees.iter().zip(&shown) {
        // Where both sides ran the statement, the nodes one lacks are marked
        // (a statement one side did not run, new or gone, has one tree).
        if p["a"].is_object() && p["b"].is_object() {
            assert!(rows.iter().any(|r| r.iter().any(|c| c.starts_with('*'))), "differing nodes marked: {rows:?}");
        }
        assert!(
            rows.iter().all(|r| r.iter().all(|c| c.is_empty() || c.contains(" rows="))),
            "rows × loops on every node: {rows:?}"
        );
    }
    depths_survive_the_renderer(&trees, &shown);
    for p in ab["passes"][0]["plans"].as_array().unwrap().iter().filter(|p| p["change"] == "changed") {
        assert_ne!(p["a"]["fingerprint"], p["b"]["fingerprint"]);
        for side in ["a", "b"] {
            let nodes = p[side]["nodes"].as_array().unwrap();
            assert!(!nodes.is_empty() && p[side]["count"].as_u64().unwrap() >= 1);
            assert_eq!(p[side]["differs"].as_array().unwrap().len(), nodes.len());
            assert!(
                nodes.iter().all(|n| n["rows"].is_number() && n["loops"].is_number()),
                "actual rows × loops per node"
            );
        }
    }
}

/// Each node's depth survives the renderer: read as the strictest ones
/// read a cell (trimmed of all Unicode white space, as JavaScript's
/// trim() in markdown-it does), the tree keeps its shape.
fn depths_survive_the_renderer(trees: &[&Table], shown: &[&serde_json::Value]) {
    for ((_, rows), p) in trees.iter().zip(shown) {
        for (col, side) in ["a", "b"].iter().enumerate() {
            // A side that did not run the statement has no nodes, and its column no cells.
            let want: Vec<u64> = p[side]["nodes"]
                .as_array()
                .map_or(&[][..], |n| n)
                .iter()
                .map(|n| n["depth"].as_u64().unwrap())
                .collect();
            let seen: Vec<u64> = rows
                .iter()
                .map(|r| r[col].trim())
                .filter(|c| !c.is_empty())
                .map(|c| {
                    let mut c = c.strip_prefix("* ").unwrap_or(c);
                    let mut depth = 0;
                    while let Some(rest) = c.strip_prefix("│ ") {
                        depth += 1;
                        c = rest;
                    }
                    depth
                })
                .collect();
            assert_eq!(seen, want, "{side}'s tree as rendered: {rows:?}");
        }
    }
}

/// A against A: the same settings, no plan changed; and A against itself
/// logged in auto_explain's JSON format: one plan, one fingerprint.
fn a_against_a_changes_nothing(tmp: &Path, a: &Path, a2: &Path) {
    const BOTH: [&str; 2] = ["autovacuum=off", "log_min_duration_statement=0"];
    let aa = compare_json(a, a2);
    assert_eq!(changed(&aa), BTreeSet::new(), "A/A: no plan changed");
    let j = run(tmp, "json", &[BOTH[0], BOTH[1], "auto_explain.log_format=json"]);
    let log = std::fs::read_to_string(j.join("cold-instrumented/pg/auto_explain.log")).unwrap();
    assert!(log.contains("plan:\n\t{\n\t  \"Query Text\""), "the JSON format was logged");
    let aj = compare_json(a, &j);
    assert_eq!(changed(&aj), BTreeSet::new(), "text against JSON: no plan changed");
    let same = aj["passes"][0]["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["a"]["fingerprint"] == p["b"]["fingerprint"])
        .count();
    assert!(same >= 20, "{same} statements with one fingerprint in both formats");
}

/// The page, in a real browser: the changed plans' differing nodes marked,
/// every node with a hover title, nothing run.
fn the_page_marks_the_changed_nodes(tmp: &Path, a: &Path, b: &Path, truth: &BTreeSet<String>) {
    let html = tmp.join("page");
    run_ok(evalbench().args(["compare", "--html"]).arg(&html).arg(a).arg(b));
    let page = html.join("index.html");
    let raw = std::fs::read_to_string(&page).unwrap();
    assert!(!raw.to_ascii_lowercase().contains("<script"), "no script in the page");
    assert!(raw.contains("Content-Security-Policy"));
    // A screenshot for people, beside the report's (target/test-artifacts).
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    browse(&page, &tmp.join("shot"), Some(&artifacts.join("compare-plans.png")));
    let seen = browse(&page, tmp, None);
    let dom = &seen.dom;
    assert_eq!(dom.matches("data-change=\"changed\"").count(), truth.len(), "one drawing per changed plan");
    for block in dom.split("data-change=\"changed\"").skip(1) {
        let block = block.split("class=\"change\"").next().unwrap();
        assert!(block.contains("class=\"node differs\""), "a changed plan has marked nodes: {block}");
        assert!(block.contains("<h4>A: plan ") && block.contains("<h4>B: plan "), "two trees side by side");
    }
    let nodes = dom.matches("class=\"node").count();
    let titled =
        dom.split("class=\"node").skip(1).filter(|n| n.split('>').next().unwrap().contains(" title=\"")).count();
    assert!(nodes > 0 && titled == nodes, "{titled} of {nodes} nodes have a hover title");
    no_console(&seen);
    no_network(&seen);
}

/// Bundles come from other machines: a plan whose statement, relation,
/// alias and details are markup, and a span named like one, shown as text.
/// Both sides get the hostile span (compare shows spans both sides have),
/// B the hostile plan as well.
fn hostile_plans_and_spans_are_text(tmp: &Path, a: &Path) {
    let (evil_a, evil) = (tmp.join("evil-a"), tmp.join("evil"));
    for copy in [&evil_a, &evil] {
        run_ok(std::process::Command::new("cp").arg("-a").arg(a).arg(copy));
        for e in std::fs::read_dir(copy.join("cold-instrumented/trace")).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p)
                .unwrap()
                .replace("\"name\":\"resolve\"", &format!("\"name\":{}", serde_json::to_string(SCRIPT).unwrap()));
            std::fs::write(&p, text).unwrap();
        }
    }
    let mut log =
        std::fs::OpenOptions::new().append(true).open(evil.join("cold-instrumented/pg/auto_explain.log")).unwrap();
    std::io::Write::write_all(
        &mut log,
        format!(
            "2026-12-01 00:00:00.000 UTC [1] gradient@gradient LOG:  duration: 0.010 ms  plan:\n\tQuery Text: SELECT 1 \
                /* {SCRIPT} */\n\tSeq Scan on \"<img src=x onerror=alert(1)>\" \"{}\"  (cost=0.00..1.00 rows=1 \
                width=4) (actual rows=1 loops=1)\n\
             \t  Filter: (a = '{SCRIPT}')\n",
            SCRIPT.replace('"', "\"\"")
        )
        .as_bytes(),
    )
    .unwrap();
    let html = tmp.join("evil-page");
    let out = run_ok(evalbench().args(["compare", "--html"]).arg(&html).arg(&evil_a).arg(&evil));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("new statement (only in B: A never ran it): SELECT ? /*"),
        "the hostile plan is a new statement"
    );
    // The other way round it is gone: a statement B never ran has no plan its runs moved to.
    let back = run_ok(evalbench().arg("compare").arg(&evil).arg(&evil_a));
    assert!(
        String::from_utf8_lossy(&back.stdout).contains("gone statement (only in A: B never ran it): SELECT ? /*"),
        "{}",
        String::from_utf8_lossy(&back.stdout)
    );
    let page = html.join("index.html");
    let raw = std::fs::read_to_string(&page).unwrap();
    assert!(!raw.contains("<script") && !raw.contains("<img"), "markup from the bundle reached the page");
    let seen = browse(&page, &tmp.join("evil-browser"), None);
    no_console(&seen);
    no_network(&seen);
    assert!(!seen.dom.contains("data-pwned=\"1\"") && !seen.dom.contains("<title>pwned"), "a script ran");
    assert!(seen.dom.contains("Seq Scan on &lt;img src=x onerror=alert(1)&gt;"), "the relation is shown as text");
    assert!(seen.dom.contains("eval &lt;script&gt;document.title"), "the span name is shown as text");
}

const SCRIPT: &str = "<script>document.title='pwned';document.body.setAttribute('data-pwned','1')</script>";

#[test]
fn a_setting_postgresql_does_not_know_is_refused_in_its_words() {
    let tmp = reachable_tmp("evalbench-pgset-test.");
    let lab = tmp.path().join("lab");
    for (setting, said) in [
        ("enable_foo=on", "unrecognized configuration parameter \"enable_foo\""),
        ("enable_seqscan=maybe", "parameter \"enable_seqscan\" requires a Boolean value"),
    ] {
        let out = evalbench()
            .args(["lab", "up", "--net", "off", "--pg-setting", setting, "--lab-dir"])
            .arg(&lab)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{setting}: {err}");
        assert!(err.contains(said) && err.contains(setting), "{setting}: {err}");
    }
    for (setting, said) in [("port=5433", "the lab sets this itself"), ("no-equals", "expected NAME=VALUE")] {
        let out = evalbench().args(["lab", "up", "--pg-setting", setting, "--lab-dir"]).arg(&lab).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{setting}: {err}");
        assert!(err.contains(said), "{setting}: {err}");
    }
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(&lab));
}
