//! [`Caller`]: who acts, and in which part of the app — what the gate keys a record by,
//! with the `Idempotency-Key`.

/// Who acts (`actor`, from the app's authentication) and in which part of the app
/// (`scope`: a tenant, a host, anything the app tells apart), as the app sets them. The
/// gate keys a record by `(scope, actor, key)`: two callers that differ in either never
/// share a record, so a request is never answered with another tenant's receipt, and a
/// receipt lookup never finds another tenant's answer.
///
/// An app with one tenant passes the actor alone: `gate.run(&user.id, ...)` is
/// `Caller::new(&user.id)`, in the empty scope. An app with several builds the scope from
/// what it trusts (its routing, its authentication), never from a header it did not check:
///
/// ```text
/// gate.run(Caller::scoped(&tenant.id, &user.id), req, handler).await
/// gate.receipt(Caller::scoped(&tenant.id, &user.id), &op_id).await
/// ```
///
/// Both are at most 255 bytes (the gate answers `400` beyond, nothing written); the actor
/// is not empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caller<'a> {
    /// The part of the app; empty for an app with one.
    pub scope: &'a str,
    /// Who acts.
    pub actor: &'a str,
}

impl<'a> Caller<'a> {
    /// `actor` in the empty scope.
    #[must_use]
    pub fn new(actor: &'a str) -> Caller<'a> {
        Caller { scope: "", actor }
    }

    /// `actor` in `scope`.
    #[must_use]
    pub fn scoped(scope: &'a str, actor: &'a str) -> Caller<'a> {
        Caller { scope, actor }
    }
}

impl<'a> From<&'a str> for Caller<'a> {
    fn from(actor: &'a str) -> Caller<'a> {
        Caller::new(actor)
    }
}

impl<'a> From<&'a String> for Caller<'a> {
    fn from(actor: &'a String) -> Caller<'a> {
        Caller::new(actor)
    }
}
