//! The scheduler: turns queued evaluations into jobs and offers them to
//! every connected worker, again while they stay unclaimed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{debug_span, Instrument};

use super::{service, ServerError, Shared};
use crate::msg::{JobOffer, ToWorker};

const T: &str = "gradient_server::scheduler";

pub async fn run(s: Arc<Shared>) {
    let mut offered: HashMap<uuid::Uuid, Instant> = HashMap::new();
    loop {
        tokio::select! {
            _ = s.wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
        if let Err(e) = tick(&s, &mut offered).await {
            eprintln!("lab server: scheduler: {e}");
        }
    }
}

async fn tick(s: &Arc<Shared>, offered: &mut HashMap<uuid::Uuid, Instant>) -> Result<(), ServerError> {
    service::create_jobs(s).instrument(debug_span!(target: T, "assign_queued_evals")).await?;
    let queued = s.store.queued_jobs().await?;
    let now = Instant::now();
    let fresh: Vec<(uuid::Uuid, uuid::Uuid)> = queued
        .into_iter()
        .filter(|(j, _)| offered.get(j).is_none_or(|t| now.duration_since(*t) > Duration::from_secs(2)))
        .collect();
    if fresh.is_empty() {
        return Ok(());
    }
    let workers = s.workers.lock().await;
    if workers.is_empty() {
        return Ok(());
    }
    let span = debug_span!(target: T, "offer_jobs", jobs = fresh.len(), workers = workers.len());
    let _e = span.enter();
    let jobs: Vec<JobOffer> = fresh
        .iter()
        .map(|(j, e)| JobOffer { job: j.to_string(), evaluation: e.to_string(), project: s.provision.project.clone() })
        .collect();
    for tx in workers.values() {
        let _ = tx.send(ToWorker::Offer { jobs: jobs.clone() });
    }
    for (j, _) in fresh {
        offered.insert(j, now);
    }
    Ok(())
}
