//! Time as data: the planner never reads a clock, every caller passes `now`.

use std::fmt;

/// Milliseconds since the Unix epoch, as the injected clock reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub i64);

impl Millis {
    /// This instant moved forward by `ms` milliseconds (saturating).
    #[must_use]
    pub fn plus(self, ms: i64) -> Millis {
        Millis(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self` (negative if `earlier` is later).
    #[must_use]
    pub fn since(self, earlier: Millis) -> i64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Reads a JSON number as milliseconds. An integer stored as a float (`5.0e3`, as a
    /// JavaScript round trip may write it) is that integer; a fraction of a millisecond is
    /// truncated (a `performance.now()`-based clock gives them; they change no decision).
    /// Non-numbers and numbers outside the `i64` range give `None`, never a clamped time.
    #[must_use]
    pub fn from_json(value: &serde_json::Value) -> Option<Millis> {
        if let Some(i) = value.as_i64() {
            return Some(Millis(i));
        }
        let f = value.as_f64()?.trunc();
        // 2^63 is exact as an f64; every f64 in [-2^63, 2^63) converts without clamping.
        const LIMIT: f64 = 9_223_372_036_854_775_808.0;
        (f.is_finite() && (-LIMIT..LIMIT).contains(&f)).then_some(Millis(f as i64))
    }

    /// The JSON form stored in rows.
    #[must_use]
    pub fn to_json(self) -> serde_json::Value {
        serde_json::Value::from(self.0)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}
