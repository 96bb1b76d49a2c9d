//! One stable sort for the planner and the binding. Every caller sorts through the same
//! non-generic sort of indices, so the standard library's sort is built into the wasm
//! module once, not once per element type and comparator (about 2.5 KB each, issue 12).

use std::cmp::Ordering;

/// Sorts `items` stably by `cmp`.
pub fn stable_by<T>(items: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    let order = indices(items.len(), &|a, b| cmp(&items[a], &items[b]));
    permute(items, &order);
}

/// Sorts `items` stably by the key `key` gives.
pub fn stable_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    stable_by(items, |a, b| key(a).cmp(&key(b)));
}

/// `0..n` sorted stably by `cmp` of the items at those indices.
#[inline(never)]
fn indices(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Puts `items[order[k]]` at `k`, following each cycle of `order` once (linear time).
fn permute<T>(items: &mut [T], order: &[usize]) {
    let mut placed = vec![false; items.len()];
    for start in 0..items.len() {
        let mut at = start;
        while !placed[at] {
            placed[at] = true;
            let from = order[at];
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_stable_sort() {
        // Every permutation-ish input of a few lengths, with ties, against `sort_by_key`.
        let mut seed = 7u64;
        for len in 0..40 {
            for _ in 0..25 {
                let items: Vec<(u8, usize)> = (0..len)
                    .map(|i| {
                        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        ((seed >> 60) as u8, i)
                    })
                    .collect();
                let mut ours = items.clone();
                stable_by_key(&mut ours, |x| x.0);
                let mut std = items.clone();
                std.sort_by_key(|x| x.0);
                assert_eq!(ours, std, "{items:?}");
            }
        }
    }

    #[test]
    fn descending_comparators_and_cycles_of_every_length() {
        let mut items: Vec<u32> = (0..1000).collect();
        stable_by(&mut items, |a, b| b.cmp(a));
        assert_eq!(items, (0..1000).rev().collect::<Vec<_>>());
        let mut rotated: Vec<u32> = (1..500).chain([0]).collect();
        stable_by_key(&mut rotated, |x| *x);
        assert_eq!(rotated, (0..500).collect::<Vec<_>>());
    }
}
