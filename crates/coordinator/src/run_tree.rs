//! Run trees: runs started by runs (docs/coordinator.md, "Run trees").
//!
//! A run started through the API is the root of a tree. While a run executes, its
//! [`RunScope`] is a task-local of the task executing it, so whatever that run calls —
//! `start_agent_run`, a provider — knows which run and tree it serves without being
//! told. From it:
//! - a new run is a child of the run executing now: its lineage (root, parent, depth)
//!   is stored with it, and it is refused (a tool error the model sees) when the tree
//!   is already `max_run_depth` deep, has started `max_runs_per_root` runs, has spent
//!   its root's `max_cost`, or already runs the blueprint, unless that blueprint sets
//!   `allow_recursion`;
//! - every provider call of every run in the tree is charged to the root's
//!   `tree_cost` ([`crate::tree_meter`]), and no call is made once it reached the
//!   root's `max_cost`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use crate::blueprint::Blueprint;
use crate::error::{CoordinatorError, RunTreeBound};
use crate::run::{RunError, RunLineage};
use crate::runners::{RunExecutor, RunOutcome, RunRequest};
use crate::store::{RunStore, TreeReservation};

tokio::task_local! {
    static CURRENT: Arc<RunScope>;
}

/// The run a task executes, as what it calls sees it.
pub(crate) struct RunScope {
    /// The run.
    pub(crate) run_id: String,
    /// Where it sits in its tree.
    pub(crate) lineage: RunLineage,
    /// The tree's cost cap, when its root has one.
    budget: Option<TreeBudget>,
    /// The store holding the tree's account.
    store: Arc<dyn RunStore>,
    /// Whether a provider call was refused because the tree's budget was spent.
    budget_refused: AtomicBool,
}

/// The cost cap of a tree: its root's `max_cost`.
#[derive(Debug, Clone, Copy)]
struct TreeBudget {
    max_cost: f64,
}

/// The scope of the run the current task executes, if it executes one.
pub(crate) fn current() -> Option<Arc<RunScope>> {
    CURRENT.try_with(Arc::clone).ok()
}

impl RunScope {
    /// `Err` with what to tell the model when the tree has spent its budget.
    pub(crate) async fn check_budget(&self) -> Result<(), String> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let root = &self.lineage.root_run_id;
        let spent = match self.store.get_run(root).await {
            Ok(Some(run)) => run.tree.tree_cost,
            Ok(None) => 0.0,
            // Fail closed: without the account no call is made.
            Err(error) => {
                return Err(format!(
                    "cannot read the budget of run tree `{root}`: {error}"
                ));
            }
        };
        if spent >= budget.max_cost {
            self.budget_refused.store(true, Ordering::SeqCst);
            return Err(format!(
                "budget `max_cost` of run tree `{root}` exceeded: its runs spent ${spent:.6} \
                 of its root's ${:.6}",
                budget.max_cost
            ));
        }
        Ok(())
    }

    /// Charges `cost` to the tree's account (logged, never failing the call).
    pub(crate) async fn charge(&self, cost: f64) {
        if cost <= 0.0 || !cost.is_finite() {
            return;
        }
        if let Err(error) = self
            .store
            .charge_tree(&self.lineage.root_run_id, cost)
            .await
        {
            tracing::error!(%error, root_run_id = %self.lineage.root_run_id, "cannot charge a run tree");
        }
    }
}

/// The bounds of run trees and what they are checked against.
pub(crate) struct RunTrees {
    store: Arc<dyn RunStore>,
    blueprints: HashMap<String, Arc<Blueprint>>,
    default_max_cost: Option<f64>,
    max_depth: u32,
    max_runs: u32,
}

impl RunTrees {
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        blueprints: HashMap<String, Arc<Blueprint>>,
        default_max_cost: Option<f64>,
        max_depth: u32,
        max_runs: u32,
    ) -> Self {
        Self {
            store,
            blueprints,
            default_max_cost,
            max_depth,
            max_runs,
        }
    }

    /// The `max_cost` of the tree rooted at `root_run_id`: its blueprint's, else the
    /// default budget's.
    async fn tree_max_cost(&self, root_run_id: &str) -> Option<f64> {
        let root = self.store.get_run(root_run_id).await.ok().flatten()?;
        self.blueprints
            .get(&root.agent_name)
            .and_then(|blueprint| blueprint.max_cost())
            .or(self.default_max_cost)
    }

    /// The scope of run `run_id`, read from the store.
    async fn scope(&self, run_id: &str) -> Arc<RunScope> {
        let lineage = match self.store.get_run(run_id).await {
            Ok(Some(run)) => run.lineage,
            Ok(None) => RunLineage::root(run_id),
            Err(error) => {
                tracing::error!(%error, "cannot read the run's lineage");
                RunLineage::root(run_id)
            }
        };
        let budget = self
            .tree_max_cost(&lineage.root_run_id)
            .await
            .map(|max_cost| TreeBudget { max_cost });
        Arc::new(RunScope {
            run_id: run_id.to_owned(),
            lineage,
            budget,
            store: Arc::clone(&self.store),
            budget_refused: AtomicBool::new(false),
        })
    }

    /// The lineage of new run `run_id` of `blueprint`: a root, or, when the current
    /// task executes a run, a child of it, counted in its tree. Refused when a bound of
    /// the tree says so.
    pub(crate) async fn lineage_for(
        &self,
        run_id: &str,
        blueprint: &Blueprint,
    ) -> Result<RunLineage, CoordinatorError> {
        let Some(parent) = current() else {
            return Ok(RunLineage::root(run_id));
        };
        let root = parent.lineage.root_run_id.clone();
        let refuse = |bound: RunTreeBound, message: String| CoordinatorError::RunTreeLimit {
            bound,
            root_run_id: root.clone(),
            message,
        };
        let depth = parent.lineage.depth.saturating_add(1);
        if depth > self.max_depth {
            return Err(refuse(
                RunTreeBound::Depth,
                format!(
                    "cannot start `{}`: it would run at depth {depth}, deeper than max_run_depth \
                     {}; do the work in this run instead",
                    blueprint.name(),
                    self.max_depth
                ),
            ));
        }
        if !blueprint.allows_recursion() {
            self.refuse_recursion(&parent, blueprint)
                .await
                .map_err(|message| refuse(RunTreeBound::Recursion, message))?;
        }
        let max_cost = parent.budget.map(|budget| budget.max_cost);
        match self
            .store
            .reserve_tree_run(&root, self.max_runs, max_cost)
            .await?
        {
            TreeReservation::Reserved => Ok(RunLineage {
                root_run_id: root,
                parent_run_id: Some(parent.run_id.clone()),
                depth,
            }),
            TreeReservation::TooManyRuns(usage) => Err(refuse(
                RunTreeBound::RunsPerRoot,
                format!(
                    "cannot start `{}`: the tree has started {} runs, the max_runs_per_root",
                    blueprint.name(),
                    usage.tree_runs
                ),
            )),
            TreeReservation::BudgetSpent(usage) => Err(refuse(
                RunTreeBound::Cost,
                format!(
                    "cannot start `{}`: the tree spent ${:.6} of its root's max_cost ${:.6}",
                    blueprint.name(),
                    usage.tree_cost,
                    max_cost.unwrap_or_default()
                ),
            )),
            // The executing run belongs to another coordinator's store: this run starts
            // a tree of its own here.
            TreeReservation::NoRoot => Ok(RunLineage::root(run_id)),
        }
    }

    /// `Err` when `blueprint` already runs in the chain from `parent` up to the root.
    async fn refuse_recursion(
        &self,
        parent: &RunScope,
        blueprint: &Blueprint,
    ) -> Result<(), String> {
        let mut next = Some(parent.run_id.clone());
        // The chain is at most `depth + 1` runs long; bounded even if rows disagree.
        let mut left = parent.lineage.depth.saturating_add(1);
        while let Some(run_id) = next.take()
            && left > 0
        {
            left -= 1;
            let Ok(Some(run)) = self.store.get_run(&run_id).await else {
                break;
            };
            if run.agent_name == blueprint.name() {
                return Err(format!(
                    "cannot start `{}`: it already runs in this run tree (run `{run_id}`) and \
                     does not set allow_recursion",
                    blueprint.name()
                ));
            }
            next = run.lineage.parent_run_id;
        }
        Ok(())
    }
}

/// An executor that runs each run inside its [`RunScope`].
pub(crate) struct TreeScoped {
    inner: Arc<dyn RunExecutor>,
    trees: Arc<RunTrees>,
}

impl TreeScoped {
    pub(crate) fn new(inner: Arc<dyn RunExecutor>, trees: Arc<RunTrees>) -> Self {
        Self { inner, trees }
    }

    /// Runs `execution` in `scope`; a failure after the tree's budget refused a call
    /// is `budget_exceeded`, whatever the runner made of the refusal.
    pub(crate) async fn in_scope<F, T>(scope: Arc<RunScope>, execution: F) -> Result<T, RunError>
    where
        F: Future<Output = Result<T, RunError>>,
    {
        let outcome = CURRENT.scope(Arc::clone(&scope), execution).await;
        match outcome {
            Err(error)
                if scope.budget_refused.load(Ordering::SeqCst) && error.kind != "cancelled" =>
            {
                Err(RunError::new(
                    "budget_exceeded",
                    format!(
                        "budget `max_cost` of run tree `{}` exceeded ({})",
                        scope.lineage.root_run_id, error.message
                    ),
                ))
            }
            other => other,
        }
    }
}

#[async_trait]
impl RunExecutor for TreeScoped {
    async fn execute(&self, run: RunRequest) -> Result<RunOutcome, RunError> {
        let scope = self.trees.scope(run.run_id.as_str()).await;
        if let Err(message) = scope.check_budget().await {
            // The tree spent its budget while this run waited: it never starts.
            return Err(RunError::new("budget_exceeded", message));
        }
        Self::in_scope(scope, self.inner.execute(run)).await
    }
}
