//! The coordinator embedded in an axum app: the agents' HTTP API (`GET /agents`,
//! `POST /runs`, `GET /runs/{id}`, `DELETE /runs/{id}`) under `/api`, beside the
//! app's own routes.
//!
//! `OPENAI_API_KEY=… cargo run --example coordinator_axum`, then
//! `curl -H 'Content-Type: application/json' -d '{"agent_name":"haiku","parameters":{"prompt":"rain"}}' http://127.0.0.1:3000/api/runs`

use axum::Router;
use axum::routing::get;
use oxydra::coordinator::{
    BlueprintConfig, Coordinator, CoordinatorConfig, RunnerDeps, shutdown_signal,
};
use oxydra::provider::from_env;
use oxydra::tools::ToolRegistry;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let blueprints = vec![BlueprintConfig::agent(
        "haiku",
        "Writes a haiku about the prompt",
        "You answer with one haiku about what you are given.",
    )];
    let deps =
        RunnerDeps::new(ToolRegistry::new(), ".").with_provider(from_env("openai")?, "gpt-4o-mini");
    let coordinator = Coordinator::new(CoordinatorConfig::default(), blueprints, deps).await?;
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest("/api", coordinator.router());
    let addr = std::env::var("ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    // Runs still going end `failed` / `interrupted`.
    coordinator.shutdown().await;
    Ok(())
}
