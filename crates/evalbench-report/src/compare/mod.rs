//! compare's outputs, over analyze's `Comparison`: the headline and the
//! tables made once (`headline`, `tables`), given a syntax by the text and
//! Markdown writers (`text`), the JSON (`json`) and the page (`html`);
//! the plans' changes in each (`plans`), the attributes that moved (`attributes`).

mod attributes;
pub mod headline;
pub mod html;
pub mod json;
pub mod plans;
pub mod tables;
pub mod text;
