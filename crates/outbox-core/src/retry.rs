//! Exponential backoff with full jitter (SPEC §10), and when a deferred row is due again
//! (§8 rule 1, §10 the network's return). The random draw and the instants are arguments.

use crate::row::{Row, RowState};
use crate::time::Millis;

/// The `lastErrorCode`s of a failure of the network rather than of the server (§10): no
/// connection (`classifyHttp(0)`, a fetch that threw), or a request given up on (`TIMEOUT`).
pub const NETWORK_CODES: [&str; 2] = ["NETWORK", "TIMEOUT"];

/// The one rule for "due" (§8 rule 1, §10), used by selection and by the claim alike:
/// `None` when `row`'s backoff lets it go at `now`, else the `nextAttemptAt` it waits for.
/// A row deferred by a network failure before `online_since` (the instant the network last
/// came back) is due at once, whatever its `nextAttemptAt`.
#[must_use]
pub fn waits_until(row: &Row, now: Millis, online_since: Option<Millis>) -> Option<Millis> {
    let at = row.next_attempt_at.filter(|at| *at > now)?;
    (!network_returned(row, online_since)).then_some(at)
}

/// §10: `row` is queued, its last attempt failed for the network, and it was deferred
/// before the network came back at `online_since`.
fn network_returned(row: &Row, online_since: Option<Millis>) -> bool {
    let Some(since) = online_since else { return false };
    let code = row.evidence.as_ref().and_then(|e| e.last_error_code.as_deref());
    row.state == RowState::Queued
        && row.deferred_at.is_some_and(|d| d < since)
        && code.is_some_and(|c| NETWORK_CODES.contains(&c))
}

/// Backoff options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Delay scale of the first retry, ms (default 1 s).
    pub base_ms: i64,
    /// Largest delay before jitter, ms (default 5 min).
    pub cap_ms: i64,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { base_ms: 1_000, cap_ms: 300_000 }
    }
}

impl Backoff {
    /// `random × min(cap, base × 2^(attempt − 1))`, then `retry_after_ms` as a floor.
    /// `random` is a draw in `[0, 1)`; values outside are clamped. `attempt` counts from 1.
    #[must_use]
    pub fn delay_ms(&self, attempt: u64, random: f64, retry_after_ms: Option<i64>) -> i64 {
        let exp = attempt.saturating_sub(1).min(62) as u32;
        let ceiling = self.base_ms.max(0).saturating_mul(1i64 << exp.min(40)).min(self.cap_ms.max(0));
        let r = if random.is_finite() { random.clamp(0.0, 1.0) } else { 0.0 };
        let jittered = (r * ceiling as f64).floor() as i64;
        jittered.max(retry_after_ms.unwrap_or(0).max(0))
    }

    /// The instant before which the row is not sent again.
    #[must_use]
    pub fn next_attempt_at(&self, now: Millis, attempt: u64, random: f64, retry_after_ms: Option<i64>) -> Millis {
        now.plus(self.delay_ms(attempt, random, retry_after_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_doubles_is_capped_and_jittered() {
        let b = Backoff::default();
        assert_eq!(b.delay_ms(1, 0.999_999, None), 999);
        assert_eq!(b.delay_ms(3, 0.5, None), 2_000);
        assert_eq!(b.delay_ms(40, 0.5, None), 150_000);
        assert_eq!(b.delay_ms(400, 1.0, None), 300_000);
        assert_eq!(b.delay_ms(2, 0.0, None), 0);
    }

    #[test]
    fn retry_after_is_a_floor_under_the_jittered_delay() {
        let b = Backoff::default();
        assert_eq!(b.delay_ms(1, 0.0, Some(7_000)), 7_000);
        assert_eq!(b.delay_ms(12, 0.5, Some(7_000)), 300_000 / 2);
        assert_eq!(b.next_attempt_at(Millis(100), 1, 0.0, Some(5)), Millis(105));
    }
}
