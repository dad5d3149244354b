//! The dependency graph of a generated package set, shaped like nixpkgs'
//! at any size, for both generated flake shapes.
//!
//! Why: a chain (every package on the one before it) makes `default` force
//! N derivations deep, which overflows nix's stack near 50,000 and makes the
//! last package the slowest by far. nixpkgs is not like that. Its in-degree
//! follows a power law around hubs such as bash and stdenv, its out-degree
//! is cut off low, and it had about 46,000 packages and 300,000 edges in 2019
//! (Tweag, "Mapping a Universe of Open Source Software", 2019-02-06), about
//! 6.5 dependencies a package. Its depth is bounded by the stdenv bootstrap
//! (a handful of stages) and the layers of libraries on top.
//!
//! So, deterministic for a seed:
//! - a bootstrap chain of [`BOOT`] packages; the last is "stdenv", and
//!   every other package depends on it;
//! - the rest in at most [`LAYERS`] layers, each depending only on earlier
//!   layers, so the depth is at most `BOOT + LAYERS` whatever the size;
//! - besides stdenv, 1 to [`MAX_EXTRA`] dependencies a package (about 6 on
//!   average, exponentially fewer for more), each picked with probability
//!   falling as 1/(rank+1) over the earlier layers' packages: the first
//!   become hubs, most are depended on by few or none.

/// Stages of the bootstrap chain (nixpkgs' stdenv has a handful).
pub const BOOT: u32 = 7;
/// Layers above the bootstrap.
pub const LAYERS: u32 = 40;
/// The most dependencies a package picks besides stdenv.
pub const MAX_EXTRA: usize = 24;
/// The seed `gen-flake` uses unless given one.
pub const DEFAULT_SEED: u64 = 1;

/// Each package's dependencies, by index, lower than its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    pub deps: Vec<Vec<u32>>,
}

/// splitmix64: small, seeded, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The first index of each layer above the bootstrap, and the end.
fn layer_starts(count: u32) -> Vec<u32> {
    let boot = BOOT.min(count);
    let rest = count - boot;
    let layers = LAYERS.min(rest.max(1));
    // Layers grow geometrically, as libraries fan out into applications:
    // layer k ends at boot + rest * (2^((k+1)/layers·g) - 1) / (2^g - 1).
    const G: f64 = 4.0;
    let mut starts: Vec<u32> = (0..=layers)
        .map(|k| {
            let f = ((G * k as f64 / layers as f64).exp2() - 1.0) / (G.exp2() - 1.0);
            boot + (rest as f64 * f).round() as u32
        })
        .collect();
    starts.dedup();
    starts
}

/// The graph of `count` packages for `seed`.
pub fn generate(count: u32, seed: u64) -> Graph {
    let mut rng = Rng(seed);
    let boot = BOOT.min(count);
    let mut deps: Vec<Vec<u32>> = (0..boot).map(|i| if i == 0 { Vec::new() } else { vec![i - 1] }).collect();
    let starts = layer_starts(count);
    let stdenv = boot.saturating_sub(1);
    for w in starts.windows(2) {
        let (from, to) = (w[0], w[1]);
        // Candidates: the packages of earlier layers above the bootstrap.
        let pool = from - boot;
        for _ in from..to {
            let mut d = vec![stdenv];
            if pool > 0 {
                let extra = (1.0 + (-(1.0 - rng.unit()).ln() * 5.5)).floor() as usize;
                for _ in 0..extra.min(MAX_EXTRA) {
                    // Log-uniform over ranks 1..=pool: P(rank r) ~ 1/r.
                    let r = ((pool as f64 + 1.0).powf(rng.unit()).floor() as u32).clamp(1, pool);
                    d.push(boot + r - 1);
                }
            }
            d.sort_unstable();
            d.dedup();
            deps.push(d);
        }
    }
    Graph { deps }
}

/// What the graph is like, to set beside nixpkgs' published figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
    pub packages: usize,
    pub edges: usize,
    pub mean_dependencies: f64,
    /// The longest chain of dependencies, in packages.
    pub depth: u32,
    /// The most depended-on packages: (name, dependents), most first.
    pub top_fan_in: Vec<(String, usize)>,
    /// Dependents at these shares of packages (nearest rank): p50, p90, p99.
    pub fan_in_p50: usize,
    pub fan_in_p90: usize,
    pub fan_in_p99: usize,
    /// The share of packages nothing depends on.
    pub no_dependents: f64,
}

impl Graph {
    pub fn figures(&self, top: usize) -> Figures {
        let n = self.deps.len();
        let mut fan_in = vec![0usize; n];
        let mut depth = vec![1u32; n];
        for (i, ds) in self.deps.iter().enumerate() {
            for &d in ds {
                fan_in[d as usize] += 1;
                depth[i] = depth[i].max(depth[d as usize] + 1);
            }
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(fan_in[i]), i));
        let mut sorted = fan_in.clone();
        sorted.sort_unstable();
        let at = |q: f64| if n == 0 { 0 } else { sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1] };
        let edges = self.deps.iter().map(Vec::len).sum();
        Figures {
            packages: n,
            edges,
            mean_dependencies: if n == 0 { 0.0 } else { edges as f64 / n as f64 },
            depth: depth.iter().copied().max().unwrap_or(0),
            top_fan_in: order.iter().take(top).map(|&i| (format!("pkg{i}"), fan_in[i])).collect(),
            fan_in_p50: at(0.5),
            fan_in_p90: at(0.9),
            fan_in_p99: at(0.99),
            no_dependents: if n == 0 { 0.0 } else { fan_in.iter().filter(|&&f| f == 0).count() as f64 / n as f64 },
        }
    }

    /// The dependencies as a Nix list of lists of indices, one line a package.
    pub fn nix_table(&self) -> String {
        let mut s = String::with_capacity(self.deps.len() * 24);
        s.push_str("[\n");
        for ds in &self.deps {
            s.push_str("        [");
            for d in ds {
                s.push(' ');
                s.push_str(&d.to_string());
            }
            s.push_str(" ]\n");
        }
        s.push_str("      ]");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_bounded_and_fan_in_has_hubs_at_any_size() {
        for count in [1, 2, 7, 8, 10, 100, 1_000, 100_000] {
            let g = generate(count, DEFAULT_SEED);
            assert_eq!(g.deps.len(), count as usize);
            for (i, ds) in g.deps.iter().enumerate() {
                assert!(ds.iter().all(|&d| (d as usize) < i), "{count}: pkg{i} depends only on earlier packages");
            }
            let f = g.figures(5);
            assert!(f.depth <= BOOT + LAYERS, "{count}: depth {}", f.depth);
            if count >= 1_000 {
                assert_eq!(f.top_fan_in[0].0, format!("pkg{}", BOOT - 1), "stdenv is the top hub");
                assert!(f.top_fan_in[1].1 > 100 * f.fan_in_p50.max(1), "{count}: a heavy tail: {f:?}");
                assert!(f.no_dependents > 0.3, "{count}: most are depended on by few: {f:?}");
                assert!((4.0..9.0).contains(&f.mean_dependencies), "{count}: {f:?}");
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_graph_and_another_seed_another() {
        assert_eq!(generate(5_000, 7), generate(5_000, 7));
        assert_ne!(generate(5_000, 7), generate(5_000, 8));
    }
}
