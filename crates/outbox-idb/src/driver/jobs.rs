//! The flush's work under way — its reads, sends, port calls, its write transaction and the
//! microtask before one — owned by the one future of [`super::drive`] and polled the way
//! `futures_util`'s `FuturesUnordered` polls (which cost the module about 4 KB gzip): a job
//! only when it was woken, in the order of the wake-ups, a new job counting as woken. So
//! results come in the order they arrived, as many as are in by the time `drive` looks, and
//! a job nobody woke costs nothing however many sends are out. Dropping the set drops every
//! job: a failed flush abandons the sends still outstanding.

use crate::error::Result;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// One piece of the flush's work; it may borrow what `drive` holds (its flush, the
/// outbox, the ports): no clones of them per job (issue 35).
pub type Job<'a> = Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

#[derive(Default)]
pub struct Jobs<'a> {
    /// By id; `None` once done. `bool`: whether it ends the flush's write (see `poll_woken`).
    slots: Vec<Option<(bool, Job<'a>, Waker)>>,
    /// Ids of the empty slots, given to the next jobs.
    free: Vec<usize>,
    woken: Arc<Woken>,
}

/// The ids of the jobs woken since `drive` last looked, and the waker of `drive`'s task.
#[derive(Default)]
struct Woken(Mutex<(Vec<usize>, Option<Waker>)>);

/// A job's waker. One woken after its job ended wakes the job that took its id: a poll
/// more, which futures allow.
struct JobWaker {
    id: usize,
    woken: Arc<Woken>,
}

impl Wake for JobWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let run = self.woken.0.lock().ok().and_then(|mut w| {
            w.0.push(self.id);
            w.1.clone()
        });
        if let Some(run) = run {
            run.wake();
        }
    }
}

impl<'a> Jobs<'a> {
    /// Adds a job, polled first by the next `poll_woken`, after the jobs woken before it.
    /// `ends_write`: it is the flush's write transaction or the microtask before one.
    pub fn push(&mut self, ends_write: bool, job: Job<'a>) {
        let id = self.free.pop().unwrap_or(self.slots.len());
        let waker = Waker::from(Arc::new(JobWaker { id, woken: self.woken.clone() }));
        if id == self.slots.len() {
            self.slots.push(None);
        }
        self.slots[id] = Some((ends_write, job, waker));
        if let Ok(mut w) = self.woken.0.lock() {
            w.0.push(id);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.free.len() == self.slots.len()
    }

    /// Polls the jobs woken since the last call, in the order of their wake-ups. Ready once
    /// at least one ended, with whether one of those ended the flush's write; the first job
    /// that fails ends it with its error.
    pub fn poll_woken(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool>> {
        let mut ended = None;
        loop {
            let ids = match self.woken.0.lock() {
                Ok(mut w) => {
                    if !w.1.as_ref().is_some_and(|run| run.will_wake(cx.waker())) {
                        w.1 = Some(cx.waker().clone());
                    }
                    std::mem::take(&mut w.0)
                }
                Err(_) => return Poll::Pending,
            };
            if ids.is_empty() {
                break;
            }
            for id in ids {
                let Some(Some((ends_write, job, waker))) = self.slots.get_mut(id) else { continue };
                if let Poll::Ready(result) = job.as_mut().poll(&mut Context::from_waker(waker)) {
                    ended = Some(*ends_write | ended.unwrap_or(false));
                    self.slots[id] = None;
                    self.free.push(id);
                    result?;
                }
            }
        }
        ended.map_or(Poll::Pending, |e| Poll::Ready(Ok(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::Jobs;
    use std::task::{Context, Poll, Waker};
    use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
    wasm_bindgen_test_configure!(run_in_browser);

    fn poll(jobs: &mut Jobs) -> Poll<bool> {
        jobs.poll_woken(&mut Context::from_waker(Waker::noop())).map(|r| r.expect("no job fails"))
    }

    /// The flush's write ending in the same poll as a job after it still counts: else the
    /// driver would think a write still runs, never start the next, and end the flush with
    /// answers unwritten (their rows sent again after the lease).
    #[wasm_bindgen_test]
    fn a_write_ending_beside_later_jobs_is_reported() {
        let mut jobs = Jobs::default();
        jobs.push(true, Box::pin(async { Ok(()) }));
        jobs.push(false, Box::pin(async { Ok(()) }));
        assert_eq!(poll(&mut jobs), Poll::Ready(true));
        assert!(jobs.is_empty());
        jobs.push(false, Box::pin(async { Ok(()) }));
        jobs.push(true, Box::pin(async { Ok(()) }));
        assert_eq!(poll(&mut jobs), Poll::Ready(true));
        jobs.push(false, Box::pin(async { Ok(()) }));
        assert_eq!(poll(&mut jobs), Poll::Ready(false));
    }

    /// A job still running is kept, and is not ready to report.
    #[wasm_bindgen_test]
    fn a_pending_job_keeps_the_set_busy() {
        let mut jobs = Jobs::default();
        jobs.push(true, Box::pin(std::future::pending()));
        assert_eq!(poll(&mut jobs), Poll::Pending);
        assert!(!jobs.is_empty());
    }
}
