//! Bundles drawn by construction from a seeded generator: cold-clean and
//! warm-clean, N runs each, 60 span names with lognormal jitter. What the
//! verdict and history tests judge.

use std::path::Path;

pub const SPANS: usize = 60;
/// Lognormal sigma of the evaluation's seconds and of every span's total.
pub const EVAL_SIGMA: f64 = 0.02;
pub const SPAN_SIGMA: f64 = 0.04;
pub const PASSES: [&str; 2] = ["cold-clean", "warm-clean"];

/// xorshift64*: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    /// The seed goes through splitmix64 first: xorshift started from
    /// `seed × constant` gives neighbouring seeds correlated streams (seeds
    /// 100 and 101 drew 5.848/5.861 s, then 6.012/6.021 s), which made
    /// "independent" sides alike.
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }
}

/// What a side's runs are drawn around.
pub struct Truth {
    pub evaluated_s: [f64; 2],
    /// Median total of span `i`, µs.
    pub span_us: Vec<f64>,
}

impl Truth {
    /// The same for every seed: the distribution both sides of an A/A pair share.
    pub fn baseline() -> Truth {
        let mut r = Rng::new(12345);
        // Span totals spread over three decades, 0.5 ms to 500 ms.
        let span_us = (0..SPANS).map(|_| 500.0 * 1000f64.powf(r.uniform())).collect();
        Truth { evaluated_s: [6.0, 0.9], span_us }
    }
    pub fn shifted(mut self, spans: &[(usize, f64)], evaluation: f64) -> Truth {
        for &(i, f) in spans {
            self.span_us[i] *= f;
        }
        for e in &mut self.evaluated_s {
            *e *= evaluation;
        }
        self
    }
}

/// A bundle of `runs` runs of each pass, drawn from `truth` with `seed`.
pub fn write_bundle(dir: &Path, truth: &Truth, runs: usize, seed: u64) {
    let mut r = Rng::new(seed);
    for (p, pass) in PASSES.iter().enumerate() {
        for k in 1..=runs {
            let name = if k == 1 { pass.to_string() } else { format!("{pass}.{k}") };
            let d = dir.join(&name);
            std::fs::create_dir_all(d.join("trace")).unwrap();
            let evaluated = r.lognormal(truth.evaluated_s[p], EVAL_SIGMA);
            std::fs::write(
                d.join("run.json"),
                serde_json::json!({"pass": name, "status": "Completed", "evaluated_s": evaluated}).to_string(),
            )
            .unwrap();
            let mut lines = String::new();
            let mut ts: i64 = 1_800_000_000_000_000;
            for (i, &median) in truth.span_us.iter().enumerate() {
                let dur = r.lognormal(median, SPAN_SIGMA).round().max(1.0) as i64;
                lines.push_str(
                    &serde_json::json!({"name": format!("step_{i:02}"), "target": "gradient_eval", "ts_us": ts,
                        "dur_us": dur, "pid": 7, "process": "eval", "id": i + 1})
                    .to_string(),
                );
                lines.push('\n');
                ts += dur + 10;
            }
            std::fs::write(d.join("trace/eval.7.jsonl"), lines).unwrap();
        }
    }
}

/// Adds nix's counters to every run.json of a bundle.
pub fn with_counters(bundle: &Path, calls: u64, thunks: u64) {
    for e in std::fs::read_dir(bundle).unwrap() {
        let run = e.unwrap().path().join("run.json");
        let mut v = super::read_json(&run);
        v["nix_stats"] = serde_json::json!({"nrFunctionCalls": calls, "nrThunks": thunks, "gc.totalBytes":
            35_200_528u64, "cpuTime": 0.05});
        std::fs::write(&run, v.to_string()).unwrap();
    }
}
