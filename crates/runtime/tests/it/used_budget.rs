//! Budgets a run starts with already partly used (`RunRequest::already_used`) and the
//! ledger a run records its totals with (`RunRequest::usage_ledger`): what a run
//! continued by another process needs so that `max_turns` and `max_cost` hold over the
//! whole run.

use crate::common;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use oxydra_provider::{ModelPrice, PricingTable, ScriptedProvider, ScriptedTurn};
use oxydra_runtime::{
    AgentRuntimeBuilder, CancellationToken, CollectingEventSink, LedgerError, RuntimeError,
    UsageLedger, UsedBudget,
};
use oxydra_types::{Message, RuntimeEvent, SessionId, Usage};

/// Keeps every record; fails the `fail_at`-th (1-based) when set; cancels `cancel` at
/// the `cancel_at`-th.
#[derive(Default)]
struct Recorded {
    records: Mutex<Vec<UsedBudget>>,
    fail_at: Option<usize>,
    cancel_at: Option<(usize, CancellationToken)>,
}

#[async_trait]
impl UsageLedger for Recorded {
    async fn record(&self, used: &UsedBudget) -> Result<(), LedgerError> {
        let count = {
            let mut records = self.records.lock().unwrap();
            records.push(*used);
            records.len()
        };
        if let Some((at, cancel)) = &self.cancel_at
            && *at == count
        {
            cancel.cancel();
            // The run must not wait for a record once it is cancelled.
            std::future::pending::<()>().await;
        }
        if self.fail_at == Some(count) {
            return Err("the database is gone".into());
        }
        Ok(())
    }
}

impl Recorded {
    fn records(&self) -> Vec<UsedBudget> {
        self.records.lock().unwrap().clone()
    }
}

/// $1 per thousand tokens either way for `test-model`.
fn pricing() -> PricingTable {
    let mut pricing = PricingTable::empty();
    pricing.insert("test-model", ModelPrice::new(1_000.0, 1_000.0, 0.0));
    pricing
}

fn echo_turn(id: &str) -> ScriptedTurn {
    ScriptedTurn::tool_call(id, "echo", r#"{"text":"x"}"#).with_usage(Usage::new(100, 10, 0))
}

/// A model that calls `echo` ten times (`c0` to `c9`, each 100 + 10 tokens), the event
/// sink, and a builder of a runtime with the echo tool around both.
fn echo_loop() -> (
    Arc<ScriptedProvider>,
    Arc<CollectingEventSink>,
    AgentRuntimeBuilder,
) {
    let provider = scripted((0..10).map(|i| echo_turn(&format!("c{i}"))).collect());
    let events = Arc::new(CollectingEventSink::new());
    let builder = echo_builder(provider.clone(), events.clone());
    (provider, events, builder)
}

fn budget_name(error: &RuntimeError) -> &str {
    match error {
        RuntimeError::BudgetExceeded { budget, .. } => budget.as_str(),
        other => panic!("expected a budget error, got {other:?}"),
    }
}

#[tokio::test]
async fn turns_already_used_count_against_max_turns() {
    let (provider, _events, builder) = echo_loop();
    let runtime = builder
        .limits({
            let mut custom = limits();
            custom.max_turns = 5;
            custom
        })
        .build()
        .unwrap();
    let ledger = Arc::new(Recorded::default());
    let error = runtime
        .session(&SessionId::generate())
        .prompt("loop")
        .already_used(UsedBudget {
            turns: 3,
            ..UsedBudget::default()
        })
        .usage_ledger(ledger.clone())
        .await
        .unwrap_err();
    assert_eq!(budget_name(&error), "max_turns");
    // Two calls were left of five.
    assert_eq!(provider.requests().len(), 2);
    let records = ledger.records();
    // Each call counted before it is made, then its usage added after it answered.
    let turns: Vec<usize> = records.iter().map(|used| used.turns).collect();
    assert_eq!(turns, [4, 4, 5, 5]);
    assert_eq!(records[0].usage, Usage::default());
    assert_eq!(records[1].usage, Usage::new(100, 10, 0));
    assert_eq!(records[3].usage, Usage::new(200, 20, 0));
}

#[tokio::test]
async fn a_run_whose_turns_are_all_used_makes_no_call() {
    let provider = scripted(vec![ScriptedTurn::text("never")]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone())
        .limits({
            let mut custom = limits();
            custom.max_turns = 2;
            custom
        })
        .build()
        .unwrap();
    for turns in [2, 3, usize::MAX] {
        let error = runtime
            .session(&SessionId::generate())
            .prompt("q")
            .already_used(UsedBudget {
                turns,
                ..UsedBudget::default()
            })
            .await
            .unwrap_err();
        assert_eq!(budget_name(&error), "max_turns", "{turns}");
    }
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn cost_already_used_counts_against_max_cost() {
    // Each call costs $0.11; $0.30 were spent before; the budget is $0.60; a call may
    // cost up to its prompt (about 150 tokens) and 100 output tokens: about $0.25.
    let (provider, _events, builder) = echo_loop();
    let runtime = builder
        .pricing(pricing())
        .limits({
            let mut custom = limits();
            custom.max_cost = Some(0.6);
            custom.max_output_tokens = Some(100);
            custom
        })
        .build()
        .unwrap();
    let ledger = Arc::new(Recorded::default());
    let error = runtime
        .session(&SessionId::generate())
        .prompt("spend")
        .already_used(UsedBudget {
            turns: 1,
            usage: Usage::new(1_000, 0, 0),
            cost: 0.3,
        })
        .usage_ledger(ledger.clone())
        .await
        .unwrap_err();
    assert_eq!(budget_name(&error), "max_cost");
    // $0.41 spent: the second call could have crossed the budget, so it was not made.
    assert!(error.to_string().contains("spent $0.410000"), "{error}");
    assert_eq!(provider.requests().len(), 1);
    // The last record holds what was spent over the whole run; the call not made is
    // not counted.
    let last = *ledger.records().last().unwrap();
    assert_eq!(last.turns, 2);
    assert_eq!(last.usage, Usage::new(1_100, 10, 0));
    assert!((last.cost - 0.41).abs() < 1e-9, "{last:?}");

    // A run whose cost is already above the budget makes no call.
    let spent = runtime
        .session(&SessionId::generate())
        .prompt("spend")
        .already_used(UsedBudget {
            cost: 0.61,
            ..UsedBudget::default()
        })
        .await
        .unwrap_err();
    assert_eq!(budget_name(&spent), "max_cost");
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn the_outcome_and_final_event_report_the_whole_run() {
    let provider = scripted(vec![
        echo_turn("c1"),
        ScriptedTurn::text("done").with_usage(Usage::new(100, 10, 0)),
    ]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = echo_builder(provider, events.clone())
        .pricing(pricing())
        .build()
        .unwrap();
    let ledger = Arc::new(Recorded::default());
    let outcome = runtime
        .session(&SessionId::generate())
        .prompt("q")
        .already_used(UsedBudget {
            turns: 2,
            usage: Usage::new(500, 50, 0),
            cost: 0.25,
        })
        .usage_ledger(ledger.clone())
        .await
        .unwrap();
    assert_eq!(outcome.turns, 4);
    assert_eq!(outcome.usage, Usage::new(700, 70, 0));
    assert!((outcome.cost - 0.47).abs() < 1e-9, "{}", outcome.cost);
    let last = *ledger.records().last().unwrap();
    assert_eq!(
        (last.turns, last.usage),
        (outcome.turns, outcome.usage),
        "the ledger's last record is the outcome"
    );
    match events.events().last() {
        Some(RuntimeEvent::Final {
            turns, usage, cost, ..
        }) => {
            assert_eq!((*turns, *usage), (4, Usage::new(700, 70, 0)));
            assert!((cost - 0.47).abs() < 1e-9);
        }
        other => panic!("expected the final event, got {other:?}"),
    }
}

#[tokio::test]
async fn resuming_an_answered_conversation_reports_what_was_used() {
    let provider = scripted(vec![]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events).build().unwrap();
    let session = SessionId::generate();
    runtime
        .append_messages(&session, vec![Message::user("q"), Message::assistant("a")])
        .await
        .unwrap();
    let used = UsedBudget {
        turns: 3,
        usage: Usage::new(9, 8, 0),
        cost: 0.75,
    };
    let outcome = runtime.session(&session).already_used(used).await.unwrap();
    assert_eq!(outcome.final_text, "a");
    assert_eq!(
        (outcome.turns, outcome.usage, outcome.cost),
        (3, used.usage, 0.75)
    );
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn a_failing_ledger_stops_the_run_before_the_next_step() {
    let (provider, events, builder) = echo_loop();
    let runtime = builder.build().unwrap();
    // The third record: the second call counted before it is made.
    let ledger = Arc::new(Recorded {
        fail_at: Some(3),
        ..Recorded::default()
    });
    let error = runtime
        .session(&SessionId::generate())
        .prompt("loop")
        .usage_ledger(ledger.clone())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "usage_ledger", "{error}");
    assert!(
        error.to_string().contains("the database is gone"),
        "{error}"
    );
    assert_eq!(
        provider.requests().len(),
        1,
        "no call after the failed record"
    );
    assert!(matches!(
        events.events().last(),
        Some(RuntimeEvent::Error { kind, .. }) if kind == "usage_ledger"
    ));
}

#[tokio::test]
async fn a_record_that_hangs_is_cancelled_with_the_run() {
    let (provider, _events, builder) = echo_loop();
    let runtime = builder.build().unwrap();
    let cancel = CancellationToken::new();
    let ledger = Arc::new(Recorded {
        cancel_at: Some((2, cancel.clone())),
        ..Recorded::default()
    });
    let run = runtime
        .session(&SessionId::generate())
        .prompt("loop")
        .cancel(&cancel)
        .usage_ledger(ledger);
    let error = tokio::time::timeout(std::time::Duration::from_secs(5), run)
        .await
        .expect("the run waited on a cancelled record")
        .unwrap_err();
    assert!(matches!(error, RuntimeError::Cancelled), "{error:?}");
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn a_nonsense_cost_already_used_is_refused_before_anything_runs() {
    let provider = scripted(vec![ScriptedTurn::text("never")]);
    let events = Arc::new(CollectingEventSink::new());
    let runtime = builder(provider.clone(), events.clone()).build().unwrap();
    let session = SessionId::generate();
    for cost in [f64::NAN, -1.0, f64::INFINITY] {
        let error = runtime
            .session(&session)
            .prompt("q")
            .already_used(UsedBudget {
                cost,
                ..UsedBudget::default()
            })
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "config", "{cost}: {error}");
    }
    assert!(provider.requests().is_empty());
    assert!(runtime.session_messages(&session).await.unwrap().is_empty());
}
