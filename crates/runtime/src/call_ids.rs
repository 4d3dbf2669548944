//! Making the call ids of one assistant message unique before its calls run.
//!
//! A model can repeat a call id within a turn (or leave one empty). Both calls would
//! run and their results would be stored under one id, which providers reject on the
//! next request. So before the message is stored, a repeated id gets a suffix
//! (`call_1`, `call_1_2`, `call_1_3`, …, never an id another call of the message
//! has) and an empty id a fresh one; the stored assistant message and its results
//! then carry the same, unique ids, and every call runs.

use std::collections::HashSet;

use oxydra_types::{CallId, ToolCall};

/// Renames the calls in `calls` whose id is empty or already taken by an earlier call;
/// returns how many were renamed.
pub(crate) fn make_unique(calls: &mut [ToolCall]) -> usize {
    let mut taken: HashSet<String> = calls.iter().map(|call| call.id.to_string()).collect();
    if taken.len() == calls.len() && !taken.contains("") {
        return 0;
    }
    let mut kept: HashSet<String> = HashSet::with_capacity(calls.len());
    let mut renamed = 0;
    for call in calls.iter_mut() {
        let id = call.id.as_str();
        if !id.is_empty() && kept.insert(id.to_owned()) {
            continue;
        }
        let fresh = fresh_id(id, &taken);
        tracing::warn!(id = %call.id, new_id = %fresh, tool = %call.name, "repeated or empty tool call id renamed");
        taken.insert(fresh.clone());
        kept.insert(fresh.clone());
        call.id = CallId::from(fresh);
        renamed += 1;
    }
    renamed
}

/// A new id for a call whose id was `id`: the first of `id_2`, `id_3`, … not in
/// `taken`, or a generated one when `id` is empty.
fn fresh_id(id: &str, taken: &HashSet<String>) -> String {
    if id.is_empty() {
        return CallId::generate().into_string();
    }
    (2_usize..)
        .map(|n| format!("{id}_{n}"))
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_else(|| CallId::generate().into_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(ids: &[&str]) -> Vec<ToolCall> {
        ids.iter()
            .map(|id| ToolCall::new(CallId::from(*id), "t", "{}"))
            .collect()
    }

    fn ids(calls: &[ToolCall]) -> Vec<&str> {
        calls.iter().map(|call| call.id.as_str()).collect()
    }

    #[test]
    fn unique_ids_are_left_alone() {
        let mut list = calls(&["a", "b"]);
        assert_eq!(make_unique(&mut list), 0);
        assert_eq!(ids(&list), ["a", "b"]);
    }

    #[test]
    fn repeats_get_a_suffix_that_no_other_call_has() {
        let mut list = calls(&["a", "a", "a_2", "a"]);
        assert_eq!(make_unique(&mut list), 2);
        assert_eq!(ids(&list), ["a", "a_3", "a_2", "a_4"]);
    }

    #[test]
    fn empty_ids_get_fresh_ones() {
        let mut list = calls(&["", ""]);
        assert_eq!(make_unique(&mut list), 2);
        let got = ids(&list);
        assert!(got.iter().all(|id| id.starts_with("call_")), "{got:?}");
        assert_ne!(got[0], got[1]);
    }
}
