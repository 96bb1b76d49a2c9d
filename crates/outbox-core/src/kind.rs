//! The kind of an operation (SPEC §3 `kind`): data the fingerprint and the row share.

/// What an operation does to its target record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Creates a record (target chosen by the app, or `pending:<id>`).
    Create,
    /// Changes a record.
    Update,
    /// Removes a record.
    Delete,
}

impl Kind {
    /// The stored string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Update => "update",
            Kind::Delete => "delete",
        }
    }

    /// Parses the stored string; unknown kinds give `None`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "create" => Some(Kind::Create),
            "update" => Some(Kind::Update),
            "delete" => Some(Kind::Delete),
            _ => None,
        }
    }
}
