//! Tool rules: the kinds there are ([`kinds`]), what a rule says ([`rule`]), the state
//! they are checked against ([`process_state`], [`run_state`]) and the index that checks
//! them ([`RuleSet`]).

pub mod kinds;
pub mod process_state;
pub mod rule;
pub mod rule_kind;
pub mod run_state;

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use oxydra_types::CallId;

use crate::error::ToolRuleViolation;
use crate::permission_scope::PermissionScope;
use process_state::ProcessToolState;
use rule::ToolRule;
use rule_kind::ToolRuleKind;
use run_state::RunConstraints;

/// Whether a tool takes part in dedupe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum DedupePolicy {
    /// The tier decides: read-only calls are deduped, others are not.
    #[default]
    ByTier,
    /// `never_dedupe`.
    Never,
    /// `dedupe`: side-effecting duplicates are refused.
    OptIn,
}

impl ToolRules {
    /// Whether any per-run rule (`max_calls`, `exclusive_group`) applies.
    pub(crate) fn has_run_rules(&self) -> bool {
        self.max_calls.is_some() || !self.groups.is_empty()
    }

    /// Whether an ordering rule relates this tool to others.
    pub(crate) fn has_ordering(&self) -> bool {
        !self.preceding.is_empty() || !self.following.is_empty()
    }
}

/// Every rule of one tool, merged.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolRules {
    pub(crate) max_calls: Option<u32>,
    pub(crate) groups: Vec<String>,
    pub(crate) start: bool,
    pub(crate) preceding: Vec<String>,
    pub(crate) following: Vec<String>,
    pub(crate) continue_loop: bool,
    pub(crate) exit_loop: bool,
    pub(crate) cooldown: Option<Duration>,
    pub(crate) consent: Option<PermissionScope>,
    pub(crate) dedupe: DedupePolicy,
}

/// The configured rules, indexed by tool.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleSet {
    rules: Vec<ToolRule>,
    per_tool: HashMap<String, ToolRules>,
    /// Group key → members, sorted.
    groups: HashMap<String, Vec<String>>,
    start_tools: Vec<String>,
    exit_tools: Vec<String>,
    longest_cooldown: Duration,
}

static NO_RULES: std::sync::LazyLock<ToolRules> = std::sync::LazyLock::new(ToolRules::default);

fn push_unique(list: &mut Vec<String>, items: impl IntoIterator<Item = String>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

impl RuleSet {
    pub(crate) fn new(rules: Vec<ToolRule>) -> Self {
        let mut set = Self::default();
        let mut named: HashMap<String, BTreeSet<String>> = HashMap::new();
        for rule in &rules {
            let entry = set.per_tool.entry(rule.tool.clone()).or_default();
            match &rule.kind {
                ToolRuleKind::MaxCalls(limit) => {
                    entry.max_calls = Some(entry.max_calls.map_or(*limit, |old| old.min(*limit)));
                }
                ToolRuleKind::ExclusiveGroup(members) => {
                    let mut all: BTreeSet<String> = members.iter().cloned().collect();
                    all.insert(rule.tool.clone());
                    let all: Vec<String> = all.into_iter().collect();
                    let key = all.join(",");
                    for member in &all {
                        push_unique(
                            &mut set.per_tool.entry(member.clone()).or_default().groups,
                            [key.clone()],
                        );
                    }
                    set.groups.insert(key, all);
                }
                ToolRuleKind::NamedExclusiveGroup { name, tools } => {
                    let members = named.entry(name.clone()).or_default();
                    members.insert(rule.tool.clone());
                    members.extend(tools.iter().cloned());
                }
                ToolRuleKind::StartConstraint => {
                    entry.start = true;
                    push_unique(&mut set.start_tools, [rule.tool.clone()]);
                }
                ToolRuleKind::RequiresPrecedingTools(tools) => {
                    push_unique(&mut entry.preceding, tools.iter().cloned());
                }
                ToolRuleKind::RequiresFollowingTools(tools) => {
                    push_unique(&mut entry.following, tools.iter().cloned());
                }
                ToolRuleKind::RequiredBeforeExit => {
                    push_unique(&mut set.exit_tools, [rule.tool.clone()]);
                }
                ToolRuleKind::ContinueLoop => entry.continue_loop = true,
                ToolRuleKind::ExitLoop => entry.exit_loop = true,
                ToolRuleKind::Cooldown(cooldown) => {
                    let longest = entry.cooldown.map_or(*cooldown, |old| old.max(*cooldown));
                    entry.cooldown = Some(longest);
                    set.longest_cooldown = set.longest_cooldown.max(longest);
                }
                ToolRuleKind::RequiresConsent { scope } => entry.consent = Some(*scope),
                ToolRuleKind::NeverDedupe => entry.dedupe = DedupePolicy::Never,
                ToolRuleKind::Dedupe => {
                    if entry.dedupe != DedupePolicy::Never {
                        entry.dedupe = DedupePolicy::OptIn;
                    }
                }
            }
        }
        for (name, members) in named {
            let key = format!("group:{name}");
            for member in &members {
                push_unique(
                    &mut set.per_tool.entry(member.clone()).or_default().groups,
                    [key.clone()],
                );
            }
            set.groups.insert(key, members.into_iter().collect());
        }
        set.rules = rules;
        set
    }

    pub(crate) fn rules(&self) -> &[ToolRule] {
        &self.rules
    }

    pub(crate) fn for_tool(&self, tool: &str) -> &ToolRules {
        self.per_tool.get(tool).unwrap_or(&NO_RULES)
    }

    pub(crate) fn start_tools(&self) -> &[String] {
        &self.start_tools
    }

    pub(crate) fn exit_tools(&self) -> &[String] {
        &self.exit_tools
    }

    pub(crate) fn longest_cooldown(&self) -> Duration {
        self.longest_cooldown
    }

    /// Whether every start tool has run in `process`.
    pub(crate) fn start_satisfied(&self, process: &ProcessToolState) -> bool {
        self.start_tools.iter().all(|tool| process.has_run(tool))
    }

    /// Record in `process` that a call of `tool_name` produced output (it ran
    /// successfully, or dedupe gave it an earlier call's output), and note when that
    /// meets the start constraints.
    pub(crate) fn record_run(
        &self,
        process: &mut ProcessToolState,
        tool_name: &str,
        call_id: CallId,
        finished_at: Instant,
    ) {
        process.record(tool_name, call_id, finished_at);
        self.note_start_constraints(process);
    }

    /// Set `process.start_constraints_done` once every start tool has run (at once when
    /// there are none); it is never cleared. The only writer of the flag.
    pub(crate) fn note_start_constraints(&self, process: &mut ProcessToolState) {
        if !process.start_constraints_done && self.start_satisfied(process) {
            process.start_constraints_done = true;
        }
    }

    /// Check every rule for one call of `tool`. `bypass_start` is set when the
    /// executor itself runs start or exit tools.
    pub(crate) fn check(
        &self,
        tool: &str,
        process: &ProcessToolState,
        run: Option<&RunConstraints>,
        last_run: Option<Instant>,
        now: Instant,
        bypass_start: bool,
    ) -> Result<(), ToolRuleViolation> {
        let rules = self.for_tool(tool);
        if !bypass_start && !rules.start && !process.start_constraints_done {
            let pending: Vec<String> = self
                .start_tools
                .iter()
                .filter(|t| !process.has_run(t))
                .cloned()
                .collect();
            if !pending.is_empty() {
                return Err(ToolRuleViolation::StartConstraint {
                    tool_name: tool.to_owned(),
                    pending,
                });
            }
        }
        let missing: Vec<String> = rules
            .preceding
            .iter()
            .filter(|t| !process.has_run(t))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(ToolRuleViolation::RequiresPrecedingTools {
                tool_name: tool.to_owned(),
                missing,
            });
        }
        let already_called: Vec<String> = rules
            .following
            .iter()
            .filter(|t| process.has_run(t))
            .cloned()
            .collect();
        if !already_called.is_empty() {
            return Err(ToolRuleViolation::RequiresFollowingTools {
                tool_name: tool.to_owned(),
                already_called,
            });
        }
        if let (Some(limit), Some(run)) = (rules.max_calls, run)
            && run.call_counts.get(tool).copied().unwrap_or(0) >= limit
        {
            return Err(ToolRuleViolation::MaxCalls {
                tool_name: tool.to_owned(),
                limit,
            });
        }
        if let Some(run) = run {
            for group in &rules.groups {
                match run.exclusive_group_selections.get(group) {
                    Some(used_by) if used_by != tool => {
                        return Err(ToolRuleViolation::ExclusiveGroup {
                            tool_name: tool.to_owned(),
                            members: self.groups.get(group).cloned().unwrap_or_default(),
                            used_by: used_by.clone(),
                        });
                    }
                    _ => {}
                }
            }
        }
        if let (Some(cooldown), Some(last)) = (rules.cooldown, last_run) {
            let since = now.saturating_duration_since(last);
            if since < cooldown {
                return Err(ToolRuleViolation::Cooldown {
                    tool_name: tool.to_owned(),
                    cooldown,
                    remaining: cooldown - since,
                });
            }
        }
        Ok(())
    }

    /// Count an admitted call of `tool` in its session run (reserving a `max_calls` slot, and
    /// taking its exclusive groups). Returns whether a `max_calls` slot was taken.
    pub(crate) fn commit(&self, tool: &str, run: &mut RunConstraints) -> bool {
        let rules = self.for_tool(tool);
        for group in &rules.groups {
            run.exclusive_group_selections
                .entry(group.clone())
                .or_insert_with(|| tool.to_owned());
        }
        if rules.max_calls.is_some() {
            let count = run.call_counts.entry(tool.to_owned()).or_insert(0);
            *count = count.saturating_add(1);
            true
        } else {
            false
        }
    }

    /// Give back a `max_calls` slot taken by [`commit`](Self::commit) for a call that
    /// failed: only executed calls count.
    pub(crate) fn uncount(&self, tool: &str, run: &mut RunConstraints) {
        if let Some(count) = run.call_counts.get_mut(tool) {
            *count = count.saturating_sub(1);
        }
    }

    /// Whether `tool` must not share a concurrent group with `other` that precedes it
    /// (an ordering rule relates them).
    pub(crate) fn orders_after(&self, tool: &str, other: &str) -> bool {
        let rules = self.for_tool(tool);
        rules.preceding.iter().any(|t| t == other) || rules.following.iter().any(|t| t == other)
    }
}
