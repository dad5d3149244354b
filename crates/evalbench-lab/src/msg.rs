//! Messages on `/proto`: JSON in binary WebSocket frames, one message a frame.

use serde::{Deserialize, Serialize};

/// A derivation as the worker read it from its `.drv` file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Drv {
    pub path: String,
    pub name: String,
    pub system: String,
    pub outputs: Vec<(String, String)>,
    pub input_drvs: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobOffer {
    pub job: String,
    pub evaluation: String,
    pub project: String,
}

/// Server to worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    Offer { jobs: Vec<JobOffer> },
    Credentials { job: String, token: String },
    Assign { job: String, evaluation: String, repository: String },
    NoJob,
    KnownReply { id: u64, known: Vec<String> },
}

/// Worker to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToServer {
    Hello {
        worker: String,
    },
    Scores {
        scores: Vec<(String, i32)>,
    },
    RequestJob,
    /// A job phase started (`dispatched_job_phase`); the previous one ended.
    Phase {
        job: String,
        phase: String,
    },
    Known {
        id: u64,
        drvs: Vec<String>,
    },
    EvalResult {
        job: String,
        drvs: Vec<Drv>,
    },
    EvalDone {
        job: String,
        metric: serde_json::Value,
        /// The derivations the flake's attributes name: where the server's
        /// closure walk starts (Gradient's entry points).
        #[serde(default)]
        roots: Vec<String>,
    },
    EvalFailed {
        job: String,
        attr: Option<String>,
        message: String,
    },
}

pub fn encode<T: Serialize>(m: &T) -> Vec<u8> {
    serde_json::to_vec(m).expect("messages serialize")
}
