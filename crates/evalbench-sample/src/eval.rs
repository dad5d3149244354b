//! The eval child: resolves attributes into derivation paths, with a cache
//! that a warm pass reads instead of computing.

use std::io::Write;
use std::path::Path;

use tracing::debug_span;

const E: &str = "gradient_eval";

/// A deterministic, unskippable bit of CPU work: FNV-1a over the seed, once a round.
pub fn work(seed: &[u8], rounds: u32) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = evalbench_bundle::Fnv.build_hasher();
    for r in 0..rounds {
        h.write_u32(r);
        h.write(seed);
    }
    h.finish()
}

pub fn eval(job: &str, shard: u64, drvs: u32, cache_dir: &Path) -> std::io::Result<()> {
    let cache_file = cache_dir.join(format!("shard-{shard}.cache"));
    let _o = debug_span!(target: E, "open", job_id = job).entered();
    let cached: Option<Vec<String>> = {
        let _l = debug_span!(target: E, "lock_flake", cached = tracing::field::Empty).entered();
        std::hint::black_box(crate::tune::work("lock_flake", job.as_bytes(), 5000));
        let c = std::fs::read_to_string(&cache_file).ok().map(|s| s.lines().map(String::from).collect::<Vec<_>>());
        let c = c.filter(|v| v.len() == drvs as usize);
        _l.record("cached", c.is_some());
        c
    };
    let attrs: Vec<String> = {
        let _d = debug_span!(target: E, "discover", attrs = drvs).entered();
        (0..drvs).map(|i| format!("packages.x86_64-linux.pkg{shard}_{i}")).collect()
    };
    {
        let _p = debug_span!(target: E, "plan_shards", shards = 1u32).entered();
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut results = Vec::with_capacity(attrs.len());
    for (i, attr) in attrs.iter().enumerate() {
        let _r = debug_span!(target: E, "resolve", attr = attr.as_str()).entered();
        let path = match &cached {
            Some(c) => c[i].clone(),
            None => format!(
                "/nix/store/{:016x}-{}.drv",
                crate::tune::work("resolve", attr.as_bytes(), 400),
                attr.rsplit('.').next().unwrap_or("x")
            ),
        };
        writeln!(out, "{path}")?;
        results.push(path);
    }
    out.flush()?;
    if cached.is_none() {
        std::fs::create_dir_all(cache_dir)?;
        std::fs::write(&cache_file, results.join("\n") + "\n")?;
    }
    Ok(())
}
