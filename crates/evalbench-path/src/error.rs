//! Why a pass has no critical path, or a what-if no answer: each case a
//! variant, so that a caller can tell a bundle without its window from a
//! name typed wrong, and the message says what to do.

/// What went wrong finding or shortening a path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PathError {
    #[error(
        "no readable run.json (missing, or unreadable: see the warning before this): the evaluated window is unknown"
    )]
    NoRun,
    #[error("run.json has no evaluated seconds, or no evaluate request and the spans no assign_job to start from")]
    NoWindow,
    #[error("run.json's evaluated_s is {0}, not a duration")]
    NotADuration(f64),
    #[error("the spans' nesting has a cycle: no path")]
    Cycle,
    #[error("{spans} spans in the pass: the critical path is found for at most {limit}")]
    TooManySpans { spans: usize, limit: usize },
    /// `--faster` as typed, and what it should have been.
    #[error("{given:?}: {expected}")]
    Faster { given: String, expected: String },
    /// A name after `--faster` that no step of the pass has, and the nearest that do.
    #[error(
        "--faster {name}: no step of that name in this pass (NAME, PROCESS:NAME, or PROCESS NAME as the path table \
            prints it, postgres statements and waits too){}",
        did_you_mean(near)
    )]
    NoSuchStep { name: String, near: Vec<String> },
}

fn did_you_mean(near: &[String]) -> String {
    if near.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", near.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(" or "))
    }
}

#[cfg(test)]
mod tests {
    use super::super::graph::{fits, MAX_SPANS};

    #[test]
    fn a_pass_past_the_packing_is_an_error_not_a_wrapped_index() {
        assert!(fits(MAX_SPANS).is_ok());
        let e = fits(MAX_SPANS + 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} spans in the pass: the critical path is found for at most {MAX_SPANS}", MAX_SPANS + 1)
        );
    }
}
