//! What a planner needs to know about the tab it plans for.

/// Default lease: 10 000 ms.
pub const DEFAULT_LEASE_MS: i64 = 10_000;

/// The longest lease a tab may take: one hour (`leaseMs` is refused above it). A lease is
/// one request's time; no honest claim ends further than this from the reader's own clock.
pub const MAX_LEASE_MS: i64 = 3_600_000;

/// The library version written into `writer.bundle` on every claim.
pub const BUNDLE: &str = concat!("outbox-core@", env!("CARGO_PKG_VERSION"));

/// One running instance of the library (a page or a worker).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tab {
    /// This tab's id (UUID, injectable).
    pub tab_id: String,
    /// How long a claim of this tab is valid; also the lease of the older-writer rule.
    pub lease_ms: i64,
    /// Library version written into `writer.bundle`.
    pub bundle: String,
}

impl Tab {
    /// A tab with the default lease and this crate's bundle name.
    #[must_use]
    pub fn new(tab_id: impl Into<String>) -> Tab {
        Tab { tab_id: tab_id.into(), lease_ms: DEFAULT_LEASE_MS, bundle: BUNDLE.to_owned() }
    }

    /// The same tab with another lease.
    #[must_use]
    pub fn with_lease(mut self, lease_ms: i64) -> Tab {
        self.lease_ms = lease_ms;
        self
    }
}
