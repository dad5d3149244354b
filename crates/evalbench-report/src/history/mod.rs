//! history's outputs, over the history crate's `History` and its charts
//! (`evalbench_history::chart`): the series as text, JSON and Markdown
//! (`text`), and the page (`html`).

pub mod html;
pub mod text;
