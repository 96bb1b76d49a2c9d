//! One stable sort for the planner and the binding. Every caller sorts through the same
//! non-generic merge sort of indices, so one sort is built into the wasm module, not one per
//! element type and comparator (about 2.5 KB each, issue 12).

use std::cmp::Ordering;

/// Sorts `items` stably by `cmp`.
pub fn stable_by<T>(items: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    // One closure per element type does both steps, not one to compare and one to swap:
    // each closure is a function and a vtable of its own in the wasm module (issue 35).
    sort(items.len(), &mut |step, a, b| match step {
        Step::Compare => cmp(&items[a], &items[b]),
        Step::Swap => {
            items.swap(a, b);
            Ordering::Equal
        }
    });
}

/// What [`sort`] asks of the items at two indices.
enum Step {
    /// Their order.
    Compare,
    /// Swap them (the answer is not read).
    Swap,
}

/// Sorts the `n` items `at` reaches: their order by merge sort, then the items moved there.
fn sort(n: usize, at: &mut dyn FnMut(Step, usize, usize) -> Ordering) {
    let order = indices(n, &mut |a, b| at(Step::Compare, a, b));
    permute(&order, &mut |a, b| {
        at(Step::Swap, a, b);
    });
}

/// Sorts `items` stably by the key `key` gives.
pub fn stable_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    stable_by(items, |a, b| key(a).cmp(&key(b)));
}

/// `0..n` sorted stably by `cmp` of the items at those indices: a bottom-up merge sort of
/// the indices (runs of `width` merged in pairs, `width` doubling), O(n log n) comparisons.
/// Written out rather than the standard library's `sort_by`, whose driftsort is several
/// KB of wasm for this one instance (issue 12).
#[inline(never)]
fn indices(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    // Pushed, not collected from `0..n`: no `FromIterator` copy of its own (issue 35).
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for i in 0..n {
        order.push(i);
    }
    let mut merged = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = n.min(start + width);
            let end = n.min(mid + width);
            let (mut left, mut right) = (start, mid);
            for slot in &mut merged[start..end] {
                // The right run's item goes first only when it is strictly less: ties keep
                // their order (stable).
                if right < end && (left == mid || cmp(order[right], order[left]) == Ordering::Less) {
                    *slot = order[right];
                    right += 1;
                } else {
                    *slot = order[left];
                    left += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

/// Puts the item at `order[k]` at `k` by calls of `swap`, following each cycle of `order`
/// once (linear time). Not generic: one copy in the module, whatever is sorted.
fn permute(order: &[usize], swap: &mut dyn FnMut(usize, usize)) {
    let mut placed = vec![false; order.len()];
    for start in 0..order.len() {
        let mut at = start;
        while !placed[at] {
            placed[at] = true;
            let from = order[at];
            if from == start {
                break;
            }
            swap(at, from);
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
