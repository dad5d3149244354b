//! `evalbench inspect`: placeholder until the report lands.

use std::path::Path;

pub fn render_dir(_bundle: &Path, _out: &Path) -> Result<(), String> {
    Err("inspect is not implemented yet".into())
}
