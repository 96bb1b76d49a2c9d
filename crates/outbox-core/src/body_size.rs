//! How large a body may be (§3 rule 4), and the bound merging keeps (§7).
//!
//! The app may give a body of at most [`MAX_BODY_VALUES`] JSON values (the binding's walk
//! refuses more). Coalescing merges bodies: unbounded, a few large edits of one record
//! would make a row larger than any walk reads back whole, and the row would be stuck for
//! good. So a merge that would pass the bound does not happen: the new row waits after
//! the rows it would have absorbed, as for bodies that cannot be merged.

use serde_json::Value;

/// The most JSON values a body may hold: every object, array, string, number, boolean
/// and null counts one.
pub const MAX_BODY_VALUES: usize = 1_000_000;

/// Whether `body` holds at most [`MAX_BODY_VALUES`] values (counted until the bound is
/// passed, with a stack of its own: no recursion on the body's depth).
#[must_use]
pub fn fits(body: &Value) -> bool {
    let mut stack = vec![body];
    let mut count = 0usize;
    while let Some(v) = stack.pop() {
        count += 1;
        if count > MAX_BODY_VALUES {
            return false;
        }
        match v {
            // Pushes, not `extend`: each of the two iterator types had its own extend code.
            Value::Array(items) => {
                for item in items {
                    stack.push(item);
                }
            }
            Value::Object(map) => {
                for item in map.values() {
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_every_value_up_to_the_bound() {
        let list = |n: usize| json!({ "list": vec![0; n] }); // the object, the list, n numbers
        assert!(fits(&list(MAX_BODY_VALUES - 2)));
        assert!(!fits(&list(MAX_BODY_VALUES - 1)));
        assert!(fits(&json!(null)));
        let nested = json!({"a": {"b": [1, {"c": null}]}}); // 6 values
        assert!(fits(&nested));
    }
}
