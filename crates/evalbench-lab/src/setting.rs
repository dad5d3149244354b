//! The lab's own settings (`--lab-setting NAME=VALUE`): choices in how the
//! lab's server does its work, where Gradient itself has had more than one
//! way, so that the difference can be measured like any other change. Each
//! is recorded in the provenance, and the server is started with them.

use serde::{Deserialize, Serialize};

/// How the server's recursive walks over the dependency edges are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GraphWalk {
    /// The recursive term joins the working table to the edge table: what
    /// Gradient wrote before its PR #605. The planner chooses the join from
    /// its estimate of the working table (ten times the seed).
    Join,
    /// The recursive term probes the edges per row through a `LATERAL`
    /// subquery behind `OFFSET 0`, which leaves a nested loop over the
    /// edge index as the only plan: Gradient since #605. The default, by
    /// measurement (docs/graph-walks.md).
    #[default]
    Lateral,
}

impl GraphWalk {
    pub fn as_str(self) -> &'static str {
        match self {
            GraphWalk::Join => "join",
            GraphWalk::Lateral => "lateral",
        }
    }
}

/// Every lab setting, at its default unless given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LabSettings {
    #[serde(default)]
    pub graph_walk: GraphWalk,
}

/// The names a user may set, with what each takes.
pub const NAMES: &[(&str, &str)] = &[("graph_walk", "join|lateral")];

/// A `--lab-setting` the lab does not take: the setting as given, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("{given:?}: expected NAME=VALUE; the lab's settings are {known}", known = known())]
    NotNameValue { given: String },
    #[error("{name:?} is not a lab setting; the lab's settings are {known}", known = known())]
    Unknown { name: String },
    /// A known name with a value it does not take: name, value, what it takes.
    #[error("{name}={value}: expected {expected}")]
    BadValue { name: &'static str, value: String, expected: &'static str },
}

/// Every setting with what it takes: `graph_walk=join|lateral`.
fn known() -> String {
    NAMES.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(", ")
}

impl LabSettings {
    /// Applies `NAME=VALUE` (the command line's form); later ones win.
    pub fn set(&mut self, s: &str) -> Result<(), SettingError> {
        let (name, value) = s.split_once('=').ok_or_else(|| SettingError::NotNameValue { given: s.to_string() })?;
        match name.trim() {
            "graph_walk" => {
                self.graph_walk = match value.trim() {
                    "join" => GraphWalk::Join,
                    "lateral" => GraphWalk::Lateral,
                    v => {
                        return Err(SettingError::BadValue {
                            name: "graph_walk",
                            value: v.to_string(),
                            expected: "join or lateral",
                        })
                    }
                }
            }
            n => return Err(SettingError::Unknown { name: n.to_string() }),
        }
        Ok(())
    }

    /// From every `NAME=VALUE` given, in order.
    pub fn from_args(args: &[String]) -> Result<LabSettings, SettingError> {
        let mut s = LabSettings::default();
        for a in args {
            s.set(a)?;
        }
        Ok(s)
    }

    /// Name and value of every setting, for the provenance.
    pub fn pairs(&self) -> Vec<(String, String)> {
        vec![("graph_walk".into(), self.graph_walk.as_str().into())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_later_ones_win_and_mistakes_say_what_is_known() {
        let s = LabSettings::from_args(&["graph_walk=join".into(), "graph_walk = lateral".into()]).unwrap();
        assert_eq!(s.graph_walk, GraphWalk::Lateral);
        assert_eq!(LabSettings::from_args(&["graph_walk=join".into()]).unwrap().graph_walk, GraphWalk::Join);
        let e = LabSettings::from_args(&["graph_wlak=join".into()]).unwrap_err().to_string();
        assert!(e.contains("not a lab setting") && e.contains("graph_walk=join|lateral"), "{e}");
        assert!(LabSettings::from_args(&["graph_walk=loop".into()])
            .unwrap_err()
            .to_string()
            .contains("expected join or lateral"));
        assert!(LabSettings::from_args(&["graph_walk".into()]).unwrap_err().to_string().contains("NAME=VALUE"));
    }
}
