//! Span id to a value (an index, a track): the lookup every walk along
//! `parent` needs. Our layer numbers spans 1, 2, 3, ... per process, so a
//! vector indexed by id serves; other writers' ids fall back to a hash map.

use std::collections::HashMap;

use crate::{Fnv, Stream};

pub enum IdMap {
    Dense(Vec<u32>),
    Sparse(HashMap<u64, u32, Fnv>),
}

impl IdMap {
    const NONE: u32 = u32::MAX;

    /// An empty map sized for the ids of `st`'s spans.
    pub fn new(st: &Stream) -> IdMap {
        let max = st.spans.iter().filter_map(|s| st.id(s)).max().unwrap_or(0);
        if max <= (st.spans.len() as u64).saturating_mul(4).max(1024) {
            IdMap::Dense(vec![Self::NONE; max as usize + 1])
        } else {
            IdMap::Sparse(HashMap::with_capacity_and_hasher(st.spans.len(), Fnv))
        }
    }

    /// Each span's id to its index in `st.spans`; a repeated id keeps the last.
    pub fn indices(st: &Stream) -> IdMap {
        let mut m = IdMap::new(st);
        for (i, s) in st.spans.iter().enumerate() {
            if let Some(id) = st.id(s) {
                m.insert(id, i as u32);
            }
        }
        m
    }

    pub fn get(&self, id: u64) -> Option<u32> {
        match self {
            IdMap::Dense(v) => v.get(id as usize).copied().filter(|&t| t != Self::NONE),
            IdMap::Sparse(m) => m.get(&id).copied(),
        }
    }

    /// `value` must not be `u32::MAX` (the dense map's "none").
    pub fn insert(&mut self, id: u64, value: u32) {
        match self {
            IdMap::Dense(v) => {
                if let Some(slot) = v.get_mut(id as usize) {
                    *slot = value;
                }
            }
            IdMap::Sparse(m) => {
                m.insert(id, value);
            }
        }
    }
}
