//! Tools of an MCP server: started as a child process over stdio, each of its tools
//! registered as `<server>__<tool>` beside the agent's own.
//!
//! `OPENAI_API_KEY=… cargo run --example mcp_tools` runs the reference server with
//! `npx -y @modelcontextprotocol/server-everything`; give another command after `--`.

use oxydra::mcp::{McpManager, McpServerConfig};
use oxydra::runtime::AgentRuntime;
use oxydra::tools::ToolRegistry;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut command: Vec<String> = std::env::args().skip(1).collect();
    if command.is_empty() {
        command = ["npx", "-y", "@modelcontextprotocol/server-everything"]
            .map(String::from)
            .to_vec();
    }
    let program = command.remove(0);
    let server = McpServerConfig::stdio("everything", program, command);
    let manager = McpManager::start(vec![server]).await?;
    let mut tools = ToolRegistry::new();
    let names = manager.register_tools(&mut tools)?;
    eprintln!("{} MCP tools", names.len());
    let agent = AgentRuntime::builder()
        .provider_from_env("openai", "gpt-4o-mini")
        .tools(tools)
        .build()?;
    let answer = agent.run("Use the echo tool to say hello.").await;
    // The servers are stopped whatever the run's outcome.
    manager.shutdown().await;
    println!("{}", answer?.final_text);
    Ok(())
}
