//! Batch planning: contiguous read-only calls form a concurrent
//! group; a side-effecting or privileged call is a barrier that runs alone.

use oxydra_types::SafetyTier;

use crate::rules::RuleSet;

/// What the planner needs to know about one runnable call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlanItem<'a> {
    /// Index of the call in the request.
    pub(crate) index: usize,
    pub(crate) tool: &'a str,
    pub(crate) tier: SafetyTier,
    /// The dedupe key, when the call takes part in dedupe.
    pub(crate) key: Option<&'a str>,
}

/// One step of a plan, by request index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Read-only calls that run concurrently.
    Concurrent(Vec<usize>),
    /// A side-effecting or privileged call that runs alone.
    Alone(usize),
}

/// Split runnable calls (in request order) into steps. A read-only call also starts a
/// new group when it repeats a call of the current group (so it can reuse that call's
/// output) or when an ordering rule relates it to one.
pub(crate) fn plan(items: &[PlanItem<'_>], rules: &RuleSet) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut group: Vec<PlanItem<'_>> = Vec::new();
    let flush = |group: &mut Vec<PlanItem<'_>>, steps: &mut Vec<Step>| {
        if !group.is_empty() {
            steps.push(Step::Concurrent(
                group.drain(..).map(|item| item.index).collect(),
            ));
        }
    };
    for item in items {
        if item.tier != SafetyTier::ReadOnly {
            flush(&mut group, &mut steps);
            steps.push(Step::Alone(item.index));
            continue;
        }
        let ordered = rules.for_tool(item.tool).has_ordering();
        let conflicts = group.iter().any(|earlier| {
            (item.key.is_some() && item.key == earlier.key)
                || (ordered && rules.orders_after(item.tool, earlier.tool))
        });
        if conflicts {
            flush(&mut group, &mut steps);
        }
        group.push(*item);
    }
    flush(&mut group, &mut steps);
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::rule::ToolRule;
    use crate::rules::rule_kind::ToolRuleKind;
    use SafetyTier::{Privileged, ReadOnly, SideEffecting};

    fn item(
        index: usize,
        tool: &'static str,
        tier: SafetyTier,
        key: Option<&'static str>,
    ) -> PlanItem<'static> {
        PlanItem {
            index,
            tool,
            tier,
            key,
        }
    }

    #[test]
    fn barriers_split_read_only_groups() {
        let items = [
            item(0, "r", ReadOnly, None),
            item(1, "r", ReadOnly, None),
            item(2, "w", SideEffecting, None),
            item(3, "r", ReadOnly, None),
            item(4, "s", Privileged, None),
            item(5, "s", Privileged, None),
        ];
        assert_eq!(
            plan(&items, &RuleSet::default()),
            vec![
                Step::Concurrent(vec![0, 1]),
                Step::Alone(2),
                Step::Concurrent(vec![3]),
                Step::Alone(4),
                Step::Alone(5)
            ]
        );
    }

    #[test]
    fn duplicates_and_ordering_rules_split_a_group() {
        let rules = RuleSet::new(vec![ToolRule::new(
            "b",
            ToolRuleKind::RequiresPrecedingTools(vec!["a".into()]),
        )]);
        let items = [
            item(0, "a", ReadOnly, Some("a|{}")),
            item(1, "c", ReadOnly, Some("c|{}")),
            item(2, "a", ReadOnly, Some("a|{}")),
            item(3, "b", ReadOnly, Some("b|{}")),
        ];
        assert_eq!(
            plan(&items, &rules),
            vec![
                Step::Concurrent(vec![0, 1]),
                Step::Concurrent(vec![2]),
                Step::Concurrent(vec![3])
            ]
        );
    }
}
