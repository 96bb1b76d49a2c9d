//! What a flush does with an intent once the app's port answered (§7 converting intents):
//! ask again, convert it, or quarantine it; and the replace each of those is.

use crate::input::Prepared;
use crate::intent::{block_scopes, convert_scopes, plan_block_intent, plan_convert, SUCCESSOR_UNPREPARED};
use crate::plan::{ReplacePlan, Scope};
use crate::row::{Row, Ticket};
use crate::time::Millis;
use serde_json::Value;

/// What to do with an intent once the port answered.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum IntentAction {
    /// Not decided yet: ask `prepareSuccessor`.
    Ask,
    /// Write the prepared request in place of the intent.
    Convert(Prepared),
    /// Quarantine the intent with this code.
    Block(&'static str),
}

/// What writing an intent's outcome re-reads: a conversion, its record's scope too.
pub(super) fn intent_scopes(intent: &Row, create_id: Option<&str>, action: &IntentAction) -> Vec<Scope> {
    match action {
        IntentAction::Convert(p) => convert_scopes(intent, create_id, p),
        IntentAction::Ask | IntentAction::Block(_) => block_scopes(intent),
    }
}

pub(super) fn plan_intent(
    raw: &Value,
    create: Option<(&String, &Ticket)>,
    current: &[Value],
    action: &IntentAction,
    now: Millis,
) -> Option<ReplacePlan> {
    match action {
        // A write is asked for an undecided intent only when the app gave no port.
        IntentAction::Ask => plan_block_intent(raw, current, SUCCESSOR_UNPREPARED, now),
        IntentAction::Convert(p) => {
            // Skipped (intent replaced, or the create no longer mine): the answer re-plans.
            plan_convert(raw, create.map(|(id, t)| (id.as_str(), t)), current, p).ok()
        }
        IntentAction::Block(code) => plan_block_intent(raw, current, code, now),
    }
}
