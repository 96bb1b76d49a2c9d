//! The flush's tasks by token: a small vector rather than a `BTreeMap`. A flush has at most
//! `concurrency` sends and a few claims under way, looked up by token, summed and counted —
//! never walked in order — and the B-tree's code was 4.5 KB of the gzipped wasm (issue 12).

use super::request::Token;
use super::task::Task;

/// Tasks under way, each under its token (unique: tokens are never reused).
#[derive(Debug, Default)]
pub(super) struct Tasks(Vec<(Token, Task)>);

impl Tasks {
    /// Adds `task` under `token`, replacing the task already there.
    pub(super) fn insert(&mut self, token: Token, task: Task) {
        match self.get_mut(&token) {
            Some(t) => *t = task,
            None => self.0.push((token, task)),
        }
    }

    pub(super) fn get(&self, token: &Token) -> Option<&Task> {
        self.0.iter().find(|e| e.0 == *token).map(|e| &e.1)
    }

    pub(super) fn get_mut(&mut self, token: &Token) -> Option<&mut Task> {
        self.0.iter_mut().find(|e| e.0 == *token).map(|e| &mut e.1)
    }

    pub(super) fn remove(&mut self, token: &Token) -> Option<Task> {
        let i = self.0.iter().position(|e| e.0 == *token)?;
        Some(self.0.swap_remove(i).1)
    }

    /// Every task, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Task> {
        self.0.iter().map(|e| &e.1)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Unsent;
    use crate::row::Ticket;

    /// A task told apart by `n`.
    fn task(n: u64) -> Task {
        let ticket = Ticket { tab_id: "t".into(), fence: n };
        Task::Release(vec![Unsent { id: "r".into(), target: "x".into(), ticket, evidence_before: None }])
    }

    #[test]
    fn insert_get_replace_and_remove_by_token() {
        let mut t = Tasks::default();
        assert!(t.is_empty());
        t.insert(1, task(1));
        t.insert(2, task(2));
        t.insert(1, task(3));
        assert_eq!(t.values().count(), 2, "a token holds one task");
        assert_eq!(t.get(&1), Some(&task(3)));
        assert_eq!(t.get_mut(&2), Some(&mut task(2)));
        assert!(t.get(&9).is_none());
        assert_eq!(t.remove(&1), Some(task(3)));
        assert!(t.remove(&1).is_none());
        assert_eq!(t.get(&2), Some(&task(2)), "the others stay");
        assert!(t.remove(&2).is_some());
        assert!(t.is_empty());
    }
}
