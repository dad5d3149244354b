//! What a connection remembers by name or by text: its prepared statements
//! and portals, and the statement texts and command tags it repeats.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Prepared statements or portals by name. Most drivers use only the
/// unnamed one (""), so it has a slot of its own beside the map.
#[derive(Default)]
pub(super) struct Names {
    unnamed: Option<Arc<str>>,
    named: HashMap<String, Arc<str>>,
}

impl Names {
    pub(super) fn get(&self, name: &str) -> Option<&Arc<str>> {
        if name.is_empty() {
            self.unnamed.as_ref()
        } else {
            self.named.get(name)
        }
    }
    pub(super) fn insert(&mut self, name: Cow<'_, str>, sql: Arc<str>) {
        if name.is_empty() {
            self.unnamed = Some(sql);
        } else if let Some(old) = self.named.get_mut(name.as_ref()) {
            *old = sql;
        } else {
            self.named.insert(name.into_owned(), sql);
        }
    }
    pub(super) fn remove(&mut self, name: &str) {
        if name.is_empty() {
            self.unnamed = None;
        } else {
            self.named.remove(name);
        }
    }
}

/// The last few strings of a kind seen on a connection, shared: a string
/// that repeats one of them costs a comparison, not an allocation.
#[derive(Default)]
pub(super) struct Recent(VecDeque<Arc<str>>);

impl Recent {
    const KEPT: usize = 8;

    /// As [`Recent::get`], for bytes: compared as bytes with the ones kept
    /// first, so that a repeated one is neither checked for UTF-8 again
    /// nor copied.
    pub(super) fn get_bytes(&mut self, b: &[u8]) -> Arc<str> {
        match self.0.iter().find(|k| k.as_bytes() == b) {
            Some(a) => a.clone(),
            None => self.get(super::text(b)),
        }
    }

    pub(super) fn get(&mut self, s: Cow<'_, str>) -> Arc<str> {
        if let Some(a) = self.0.iter().find(|k| ***k == *s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        if self.0.len() == Self::KEPT {
            self.0.pop_front();
        }
        self.0.push_back(a.clone());
        a
    }
}
