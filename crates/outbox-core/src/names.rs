//! Sets and maps keyed by strings, without the standard library's `HashMap`/`HashSet`.
//!
//! Each `HashMap`/`HashSet` type was its own copy of the hash table's code in the wasm
//! module, with the standard hasher beside it (about 4 KB, issue 12). The planner's string
//! sets and maps are built instead on what is linked anyway:
//!
//! - [`Names`] and [`Numbered`] on `serde_json::Map` (an `IndexMap` with `preserve_order`),
//!   whose one instance every JSON object already uses: `O(1)` a look-up, an insert and a
//!   removal;
//! - [`Lookup`] for a list built once and only searched: the keys sorted with
//!   [`crate::sort`] and searched by halves, `O(log n)` a look-up.
//!
//! Neither keeps an order callers may rely on (a removal may move the last entry into the
//! hole), as a hash map keeps none.

use serde_json::{Map, Value};

/// A set of strings.
#[derive(Clone, Debug, Default)]
pub struct Names(Map<String, Value>);

impl Names {
    /// True when `name` is in the set.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Adds `name` (nothing changes if it is in the set already).
    pub fn insert(&mut self, name: String) {
        self.0.insert(name, Value::Null);
    }

    /// Removes `name` if it is in the set.
    pub fn remove(&mut self, name: &str) {
        self.0.remove(name);
    }
}

/// Keeps the entries of `map` for which `keep` is true, in their order. `keep` is a `dyn`:
/// the map's retain is generic over its closure, and each copy is about 1 KB of wasm
/// (issue 35).
pub fn retain_entries(map: &mut Map<String, Value>, keep: &mut dyn FnMut(&str, &mut Value) -> bool) {
    map.retain(|k, v| keep(k, v));
}

/// Removes `key` from `map` and gives its value; the other entries keep their order (a
/// stored row's unknown fields stay as stored, §3 rule 2). Through [`retain_entries`]: one
/// ordered removal in the module, not IndexMap's `shift_remove` beside its retain (issue 35).
pub fn remove_in_order(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let mut removed = None;
    retain_entries(map, &mut |k, v| {
        if k == key {
            removed = Some(v.take());
        }
        k != key
    });
    removed
}

/// A map from strings to numbers.
#[derive(Clone, Debug, Default)]
pub struct Numbered(Map<String, Value>);

impl Numbered {
    /// The number of `name`, if it has one.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.get(name).and_then(Value::as_u64)
    }

    /// Gives `name` the number `n` (replacing the one it had).
    pub fn insert(&mut self, name: String, n: u64) {
        self.0.insert(name, Value::from(n));
    }

    /// Removes `name` and its number.
    pub fn remove(&mut self, name: &str) {
        self.0.remove(name);
    }

    /// Keeps the names for which `keep(name, number)` is true, removes the others. `keep`
    /// is a `dyn`: one copy of the map's retain in the module, whoever calls (issue 35).
    pub fn retain(&mut self, keep: &mut dyn FnMut(&str, u64) -> bool) {
        retain_entries(&mut self.0, &mut |name, n| keep(name, n.as_u64().unwrap_or_default()));
    }

    /// How many names have a number.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when no name has a number.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Sorts `(key, place)` pairs stably by key: the one copy of the sort's closure for every
/// list sorted by a string key (issue 35).
pub(crate) fn sort_by_key(pairs: &mut [(&str, usize)]) {
    crate::sort::stable_by(pairs, |a, b| a.0.cmp(b.0));
}

/// The place of each key in a list, built once: `(key, place)` sorted by key.
#[derive(Clone, Debug, Default)]
pub struct Lookup<'a> {
    by_key: Vec<(&'a str, usize)>,
}

impl<'a> Lookup<'a> {
    /// The keys of a list, `None` where an item has none.
    pub fn new(keys: impl Iterator<Item = Option<&'a str>>) -> Lookup<'a> {
        let mut by_key = Vec::new();
        for (at, k) in keys.enumerate() {
            if let Some(k) = k {
                by_key.push((k, at));
            }
        }
        Lookup::sorted(by_key)
    }

    /// Not generic: one sort in the module, whatever iterator [`Lookup::new`] was given.
    fn sorted(mut by_key: Vec<(&'a str, usize)>) -> Lookup<'a> {
        // Stable: of two items with one key, the later stays later.
        sort_by_key(&mut by_key);
        Lookup { by_key }
    }

    /// The place of the item with key `key`; of two with one key, the later one (as a map
    /// built from the list in order keeps).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<usize> {
        let after = self.by_key.partition_point(|(k, _)| *k <= key);
        self.by_key[..after].last().filter(|(k, _)| *k == key).map(|(_, at)| *at)
    }

    /// True when some item has key `key`.
    #[must_use]
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_hold_each_name_once() {
        let mut n = Names::default();
        assert!(!n.contains("a"));
        n.insert("a".into());
        n.insert("b".into());
        n.insert("a".into());
        assert!(n.contains("a") && n.contains("b") && !n.contains("c") && !n.contains(""));
        n.remove("a");
        n.remove("c");
        assert!(!n.contains("a") && n.contains("b"));
    }

    #[test]
    fn numbered_keeps_the_last_number_and_retains_by_name_and_number() {
        let mut m = Numbered::default();
        assert!(m.is_empty() && m.get("a").is_none());
        m.insert("a".into(), 1);
        m.insert("b".into(), 2);
        m.insert("a".into(), u64::MAX);
        m.insert("c".into(), 2);
        assert_eq!(
            (m.get("a"), m.get("b"), m.get("c"), m.get("d"), m.len()),
            (Some(u64::MAX), Some(2), Some(2), None, 3)
        );
        assert!(!m.is_empty());
        m.remove("b");
        assert_eq!((m.get("b"), m.len()), (None, 2));
        let mut seen = Vec::new();
        m.retain(&mut |name: &str, n| {
            seen.push((name.to_owned(), n));
            n != 2
        });
        seen.sort();
        assert_eq!(seen, [("a".to_owned(), u64::MAX), ("c".to_owned(), 2)]);
        assert_eq!((m.get("a"), m.get("c"), m.len()), (Some(u64::MAX), None, 1));
    }

    #[test]
    fn lookup_finds_every_key_and_keeps_the_last_of_two() {
        let keys = [Some("b"), Some("a"), None, Some("c"), Some("a"), Some("")];
        let l = Lookup::new(keys.into_iter());
        assert_eq!((l.get("a"), l.get("b"), l.get("c"), l.get("")), (Some(4), Some(0), Some(3), Some(5)));
        assert_eq!((l.get("d"), l.get("0"), l.get("bb")), (None, None, None));
        assert!(l.contains("c") && !l.contains("d") && !Lookup::new(std::iter::empty()).contains(""));
    }
}
