//! Every statement that walks the derivation graph, in one place, as
//! Gradient keeps its walks in one module (`graph_sql.rs`): so that every
//! walk agrees on what "reachable" and "ready" mean, and so that the form
//! of the recursive term is chosen once (`--lab-setting graph_walk`).
//!
//! The graph is `derivation_dependency (derivation, dependency)`, ids of
//! `derivation`, indexed both ways. A recursive walk is
//! `seed UNION step`, `UNION` because nixpkgs' graph is full of diamonds:
//! the frontier must be deduplicated at every iteration, or the walk grows
//! with the number of paths instead of the number of derivations.
//!
//! The two forms differ only in the step. PostgreSQL estimates a recursive
//! working table at ten times its seed, so from a seed of many roots the
//! plain join is costed as a hash or merge join over the whole edge table
//! at every iteration; the `LATERAL` probe behind `OFFSET 0` cannot be
//! pulled up into a join, which leaves one index lookup per frontier row.

use crate::setting::GraphWalk;

/// `{name}(derivation) AS (seed UNION step)` over the edges toward what each
/// derivation depends on. `seed` selects one column of derivation ids.
pub fn dependency_closure(name: &str, seed: &str, form: GraphWalk) -> String {
    let step = match form {
        GraphWalk::Join => {
            format!("SELECT e.dependency FROM {name} c JOIN derivation_dependency e ON e.derivation = c.derivation")
        }
        GraphWalk::Lateral => format!(
            "SELECT s.next FROM {name} c, LATERAL (SELECT e.dependency AS next FROM derivation_dependency e \
             WHERE e.derivation = c.derivation OFFSET 0) s"
        ),
    };
    format!("{name}(derivation) AS ({seed} UNION {step})")
}

/// The evaluation's closure (`$1`, an evaluation id), walked from its entry
/// points and recorded in `evaluation_closure`; returns one row, the count.
/// What Gradient's eval-closure sweep computes when an evaluation completes.
/// Named in a comment, so that both forms are one statement to `compare`.
pub fn record_eval_closure(form: GraphWalk) -> String {
    format!(
        "/* eval_closure */ WITH RECURSIVE {}, recorded AS (INSERT INTO evaluation_closure (evaluation, derivation) \
         SELECT $1, derivation FROM closure ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*) FROM recorded",
        dependency_closure("closure", "SELECT ep.derivation FROM entry_point ep WHERE ep.evaluation = $1", form)
    )
}

/// The store paths of the closure of the derivations with these paths
/// (`$1`, a text array): the same walk from another seed, for whoever
/// wants a closure without recording it (the exactness test, a person at psql).
pub fn closure_of_paths(form: GraphWalk) -> String {
    format!(
        "WITH RECURSIVE {} SELECT d.drv_path FROM closure c JOIN derivation d ON d.id = c.derivation ORDER BY 1",
        dependency_closure("closure", "SELECT id FROM derivation WHERE drv_path = ANY($1)", form)
    )
}

/// A derivation `p` joined to each of its dependencies `d`, one hop over
/// the edges: what `seed_blocking_deps` and [`ready`] both read, keyed by
/// path since the builds are.
pub const DEPENDENCIES: &str =
    "derivation p JOIN derivation_dependency e ON e.derivation = p.id JOIN derivation d ON d.id = e.dependency";

/// Build `{alias}` of its evaluation may start: no dependency edge of its
/// derivation leads to a build of the same evaluation that has not
/// completed. One hop, never a walk: a dependency's own dependencies are
/// already in that dependency's readiness. The one definition of ready.
pub fn ready(alias: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM {DEPENDENCIES} JOIN build b2 ON b2.drv_path = d.drv_path AND b2.evaluation = \
            {alias}.evaluation WHERE p.drv_path = {alias}.drv_path AND b2.status <> 'Completed')"
    )
}
