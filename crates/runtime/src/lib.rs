//! The agent runtime of Oxydra.
//!
//! `oxydra-runtime` owns `AgentRuntime`: the turn loop that sends the context to a
//! provider, runs the tool calls the model returns through the executor, scrubs and
//! stores every result, and loops until a final answer — under turn, cost and time
//! budgets, cancellable at every await. It also owns context budgeting with real token
//! counts, the rolling summary, retrieval injection and progress and lifecycle events.
