//! Collectors. Each starts before the evaluation request and stops when the
//! evaluation leaves EvaluatingDerivation; each writes its files into the
//! pass directory and nowhere else.

pub mod machine;
pub mod perf;
pub mod pgstat;
pub mod strace;
pub mod tcpdump;

/// What a pass captures, beyond spans (always on).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Captures {
    pub pcap: bool,
    pub pg_stats: bool,
    pub wait_samples: bool,
    pub perf: bool,
    pub strace: bool,
    pub auto_explain: bool,
    /// Counted passes: nix's instructions, counted under Valgrind (`eval/cachegrind.*.out`).
    pub instructions: bool,
}

impl Captures {
    pub const NONE: Captures = Captures {
        pcap: false,
        pg_stats: false,
        wait_samples: false,
        perf: false,
        strace: false,
        auto_explain: false,
        instructions: false,
    };

    /// What either captures.
    pub fn union(self, o: Captures) -> Captures {
        Captures {
            pcap: self.pcap || o.pcap,
            pg_stats: self.pg_stats || o.pg_stats,
            wait_samples: self.wait_samples || o.wait_samples,
            perf: self.perf || o.perf,
            strace: self.strace || o.strace,
            auto_explain: self.auto_explain || o.auto_explain,
            instructions: self.instructions || o.instructions,
        }
    }

    pub fn names(&self) -> Vec<&'static str> {
        let mut v = vec!["spans", "job_phases"];
        for (on, n) in [
            (self.pcap, "pcap"),
            (self.pg_stats, "pg_stat_statements"),
            (self.wait_samples, "wait_samples"),
            (self.perf, "perf"),
            (self.strace, "strace"),
            (self.auto_explain, "auto_explain"),
            (self.instructions, "instructions"),
        ] {
            if on {
                v.push(n);
            }
        }
        v
    }
}
