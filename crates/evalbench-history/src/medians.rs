//! A commit's span medians, as the history page reads them: a page of
//! 10,000 commits reads half a million (name, median) pairs, and one
//! allocated string per pair was most of `history report`'s time. Names
//! are shared: read back, each distinct name is allocated once per thread
//! and every commit holds a reference to it.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// `<process> <span>` to its median total over a commit's runs, ms, in name order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpanMedians(pub Vec<(Arc<str>, f64)>);

thread_local! {
    static NAMES: RefCell<HashSet<Arc<str>>> = RefCell::new(HashSet::new());
    static SCRATCH: RefCell<Vec<(Arc<str>, f64)>> = const { RefCell::new(Vec::new()) };
}

/// The one shared copy of `name` on this thread.
fn shared(name: &str) -> Arc<str> {
    NAMES.with(|n| {
        let mut n = n.borrow_mut();
        match n.get(name) {
            Some(a) => a.clone(),
            None => {
                let a: Arc<str> = Arc::from(name);
                n.insert(a.clone());
                a
            }
        }
    })
}

impl SpanMedians {
    pub fn from_pairs<'a>(pairs: impl Iterator<Item = (&'a str, f64)>) -> SpanMedians {
        let mut v: Vec<(Arc<str>, f64)> = pairs.map(|(k, m)| (shared(k), m)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        SpanMedians(v)
    }

    /// The median of `name` (names are kept in order).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(name)).ok().map(|i| self.0[i].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, m)| (k.as_ref(), *m))
    }
}

/// A JSON object, as the store has always written span medians.
impl Serialize for SpanMedians {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k.as_ref(), v)?;
        }
        m.end()
    }
}

/// A name read without a string of its own: interned from the input.
struct Name(Arc<str>);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a span name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Name, E> {
                Ok(Name(shared(s)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for SpanMedians {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SpanMedians, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SpanMedians;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of span names to medians")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<SpanMedians, A::Error> {
                // Gathered in a buffer kept for the thread, then copied once at
                // its size: JSON gives no length, and growing a vector for
                // each of 40,000 rows was a tenth of a page's time.
                let mut v = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
                v.clear();
                while let Some((k, x)) = m.next_entry::<Name, f64>()? {
                    v.push((k.0, x));
                }
                let read = v.to_vec();
                SCRATCH.with(|s| *s.borrow_mut() = v);
                let mut v = read;
                // Written in name order; anything else is put in it, so `get` can search.
                if !v.is_sorted_by(|a, b| a.0 <= b.0) {
                    v.sort_by(|a, b| a.0.cmp(&b.0));
                }
                Ok(SpanMedians(v))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_read_back_as_written_and_share_their_names() {
        let a = SpanMedians::from_pairs([("eval resolve", 1.5), ("server \"q\"", 2.0)].into_iter());
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(text, r#"{"eval resolve":1.5,"server \"q\"":2.0}"#);
        let b: SpanMedians = serde_json::from_str(&text).unwrap();
        let c: SpanMedians = serde_json::from_str(&text).unwrap();
        assert_eq!(a, b);
        assert!(Arc::ptr_eq(&b.0[0].0, &c.0[0].0), "one copy of a name");
        assert!(serde_json::from_str::<SpanMedians>("[1]").is_err());
    }
}
