//! The evaluator's markers (`builtins.trace "evalbench:…"`, see
//! [`super::evaluator`]) read from nix's stderr, and what each asks of the
//! reader: a pure step, tested without nix. The reader does the rest
//! (spans, RSS, killing a recycled evaluator).

const MARK: &str = "trace: evalbench:";

/// One line of nix's stderr, as the evaluator reads it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line<'a> {
    /// `function-trace entered|exited …` (instrumented passes).
    Trace(&'a str),
    /// `error: …`: nix's error begins (the lines after it belong to it).
    Error,
    Marker(Marker<'a>),
    /// nix's own messages: warnings, `trace:` of the flake itself.
    Other,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Marker<'a> {
    /// The outputs are open and `packages.<system>` has this many attributes
    /// (as nix printed it).
    Opened(&'a str),
    /// Attribute j of the shard is about to be touched.
    Begin(usize),
    /// Attribute j's drvPath is forced.
    End(usize, &'a str),
}

pub(super) fn line(l: &str) -> Line<'_> {
    if l.starts_with("function-trace ") {
        return Line::Trace(l);
    }
    if l.starts_with("error:") {
        return Line::Error;
    }
    let Some(m) = l.strip_prefix(MARK) else { return Line::Other };
    let marker = if let Some(total) = m.strip_prefix("opened:") {
        Marker::Opened(total)
    } else if let Some(j) = m.strip_prefix("begin:").and_then(|j| j.parse().ok()) {
        Marker::Begin(j)
    } else if let Some((j, drv)) = m.strip_prefix("end:").and_then(|r| r.split_once(':')) {
        match j.parse() {
            Ok(j) => Marker::End(j, drv),
            Err(_) => return Line::Other,
        }
    } else {
        return Line::Other;
    };
    Line::Marker(marker)
}

/// What the reader does for a marker.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step<'a> {
    /// The outputs are open: the starting span ends. `Some(now)` when
    /// `packages.<system>` does not have the attributes it had at discovery.
    Opened(Option<&'a str>),
    /// nix starts on attribute j: the profile's calls go under it from now
    /// on; `open` when its span is to be opened (closing another that is
    /// open), false when it opened as the one before it ended.
    Begin { j: usize, open: bool },
    /// Attribute j is resolved to `drv`; `next` is the attribute that follows
    /// in this evaluator (opened at the same instant unless it is recycled).
    Resolved { j: usize, drv: &'a str, next: Option<usize> },
    /// Nothing to do: a marker out of range or out of order.
    Nothing,
}

/// Where the reader is: which attribute is open, of how many.
#[derive(Debug)]
pub(super) struct Progress {
    /// The shard's attributes, and how many `packages.<system>` has.
    attrs: usize,
    total: usize,
    pub on: Option<usize>,
}

impl Progress {
    pub fn new(attrs: usize, total: usize) -> Progress {
        Progress { attrs, total, on: None }
    }

    pub fn step<'a>(&mut self, m: Marker<'a>) -> Step<'a> {
        match m {
            Marker::Opened(total) => Step::Opened((total.parse::<usize>().ok() != Some(self.total)).then_some(total)),
            // Attribute j is usually open already (opened back to back when
            // the one before ended); the first one opens here.
            Marker::Begin(j) if j < self.attrs => {
                let open = self.on != Some(j);
                self.on = Some(j);
                Step::Begin { j, open }
            }
            Marker::End(j, drv) if self.on == Some(j) => {
                let next = (j + 1 < self.attrs).then_some(j + 1);
                self.on = next;
                Step::Resolved { j, drv, next }
            }
            _ => Step::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart() {
        assert_eq!(line("trace: evalbench:opened:3"), Line::Marker(Marker::Opened("3")));
        assert_eq!(line("trace: evalbench:begin:2"), Line::Marker(Marker::Begin(2)));
        assert_eq!(
            line("trace: evalbench:end:2:/nix/store/x-a.drv"),
            Line::Marker(Marker::End(2, "/nix/store/x-a.drv"))
        );
        assert_eq!(line("function-trace entered a.nix:1:1 at 5"), Line::Trace("function-trace entered a.nix:1:1 at 5"));
        assert_eq!(line("error: attribute 'x' missing"), Line::Error);
        for other in [
            "trace: hello from the flake",
            "warning: Git tree is dirty",
            "trace: evalbench:begin:x",
            "trace: evalbench:end:x:y",
        ] {
            assert_eq!(line(other), Line::Other, "{other}");
        }
    }

    #[test]
    fn a_shard_is_read_back_to_back() {
        let mut p = Progress::new(2, 5);
        assert_eq!(p.step(Marker::Opened("5")), Step::Opened(None));
        assert_eq!(p.step(Marker::Begin(0)), Step::Begin { j: 0, open: true });
        assert_eq!(p.step(Marker::End(0, "/d0")), Step::Resolved { j: 0, drv: "/d0", next: Some(1) });
        // Attribute 1 opened when 0 ended: its begin opens nothing, but
        // the profile's calls from now on are its own.
        assert_eq!(p.step(Marker::Begin(1)), Step::Begin { j: 1, open: false });
        assert_eq!(p.step(Marker::End(1, "/d1")), Step::Resolved { j: 1, drv: "/d1", next: None });
        assert_eq!(p.on, None);
    }

    #[test]
    fn markers_out_of_place_change_nothing() {
        let mut p = Progress::new(2, 5);
        assert_eq!(p.step(Marker::Opened("6")), Step::Opened(Some("6")), "attributes changed since discovery");
        assert_eq!(p.step(Marker::Begin(7)), Step::Nothing, "out of range");
        assert_eq!(p.step(Marker::End(0, "/d0")), Step::Nothing, "ended before it began");
        assert_eq!(p.step(Marker::Begin(1)), Step::Begin { j: 1, open: true });
        assert_eq!(p.step(Marker::End(0, "/d0")), Step::Nothing, "another attribute is open");
        // A recycled evaluator's successor starts from a later attribute.
        let mut q = Progress::new(4, 4);
        assert_eq!(q.step(Marker::Begin(2)), Step::Begin { j: 2, open: true });
        assert_eq!(q.step(Marker::End(2, "/d2")), Step::Resolved { j: 2, drv: "/d2", next: Some(3) });
    }
}
