//! The exploratory rows of a comparison, judged as one family: every span,
//! statement and path step of every pass, nix's counters that are not
//! exact, and the instrumented passes' evaluated seconds. The primary
//! measures were named before looking (`comparison`); everything else is
//! looked through, and looking through four hundred rows at 5% each would
//! call some changed on identical inputs. Holm over all of them holds the
//! chance of any false verdict among them to 5% (docs/decisions.md,
//! "Verdicts").

use std::collections::{BTreeMap, HashMap};

use crate::verdict::{judge_together, Family, Item, Measured, Rules, Verdict, AMOUNT, TIME};

/// Which list of a pass a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum List {
    Spans,
    Statements,
    Path,
    Counters,
    Evaluated,
}

/// The rows gathered before they are judged.
#[derive(Default)]
pub struct Explore {
    items: Vec<Item>,
    keys: Vec<(usize, List, String)>,
}

/// The rows judged: each verdict taken out by its pass, list and name.
pub struct Explored {
    pub family: Family,
    verdicts: HashMap<(usize, List, String), Verdict>,
}

impl Explore {
    fn push(
        &mut self,
        pass: usize,
        list: List,
        measured: Measured,
        unit: &str,
        words: (crate::verdict::Kind, crate::verdict::Kind),
        rules: Rules,
    ) {
        self.keys.push((pass, list, measured.what.clone()));
        self.items.push(Item { measured, unit: unit.to_string(), words, rules });
    }

    /// Times in ms, every name both sides have.
    pub fn times(
        &mut self,
        pass: usize,
        list: List,
        a: &BTreeMap<String, Vec<f64>>,
        b: &BTreeMap<String, Vec<f64>>,
        floor_ms: f64,
        rules: Rules,
    ) {
        for (k, va) in a {
            if let Some(vb) = b.get(k) {
                let m = Measured { what: k.clone(), a: va.clone(), b: vb.clone(), floor_abs: floor_ms };
                self.push(pass, list, m, "ms", TIME, rules);
            }
        }
    }

    /// nix's counters that are not exact, as amounts.
    pub fn counters(&mut self, pass: usize, noisy: Vec<Measured>, rules: Rules) {
        for m in noisy {
            self.push(pass, List::Counters, m, "", AMOUNT, rules);
        }
    }

    /// One time in seconds (an instrumented pass's evaluated seconds).
    pub fn seconds(&mut self, pass: usize, m: Measured, rules: Rules) {
        self.push(pass, List::Evaluated, m, "s", TIME, rules);
    }

    pub fn judge(self, rules: Rules) -> Explored {
        let mut family = judge_together("exploratory (every other row of every pass)", self.items, rules);
        let verdicts =
            self.keys.into_iter().zip(std::mem::take(&mut family.verdicts)).map(|(k, (_, v))| (k, v)).collect();
        Explored { family, verdicts }
    }
}

impl Explored {
    /// The pass's verdicts of one list, by name.
    pub fn take(&mut self, pass: usize, list: List) -> Vec<(String, Verdict)> {
        let keys: Vec<(usize, List, String)> =
            self.verdicts.keys().filter(|k| k.0 == pass && k.1 == list).cloned().collect();
        let mut out: Vec<(String, Verdict)> =
            keys.into_iter().filter_map(|k| self.verdicts.remove(&k).map(|v| (k.2, v))).collect();
        out.sort_by(|x, y| x.0.cmp(&y.0));
        out
    }
}
