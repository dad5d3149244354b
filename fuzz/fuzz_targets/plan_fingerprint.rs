//! Plans, three ways.
//!
//! 1. Any bytes as a plan in auto_explain's text format (first byte even) or
//!    its JSON format (odd): the tree is read without a panic, its depths
//!    step down at most one level at a time from a single top node, and the
//!    fingerprint is 16 hex digits, the same when read again.
//! 2. The claim of `plan.rs`: one plan in both formats has one fingerprint.
//!    The bytes also drive a generator of plans (operations, relations,
//!    aliases, indexes, join types, and chains deeper than the depth cap);
//!    each is written as auto_explain's JSON and as its text (labels as
//!    EXPLAIN prints them, arrows indented as PostgreSQL does), and both
//!    readings must keep the same nodes and the same fingerprint.
//! 3. Whole logs, both formats, through the statement aggregation.
//!
//! The check itself is `fuzz/checks/plan_fingerprint.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/plan_fingerprint.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
