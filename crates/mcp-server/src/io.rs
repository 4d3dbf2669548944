//! MCP over a byte stream: newline-delimited JSON-RPC on stdin/stdout (the way MCP
//! clients launch a server) or on any reader and writer (a pipe, a socket, an
//! in-memory duplex).

use std::future::Future;

use rmcp::ServiceExt;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use rmcp::transport::stdio_pipes;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::McpServer;
use crate::error::McpServerError;

impl McpServer {
    /// Serves one MCP session on `read` / `write` until the client closes its end or
    /// `shutdown` completes. Lines up to [`max_message_bytes`](Self::max_message_bytes)
    /// (at least rmcp's default) reach the handler; a longer line is dropped unread, so
    /// memory stays bounded.
    pub async fn serve_io<R, W, F>(
        self,
        read: R,
        write: W,
        shutdown: F,
    ) -> Result<(), McpServerError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
        F: Future<Output = ()>,
    {
        let max_line = self.max_message_bytes().max(DEFAULT_MAX_LINE_LENGTH);
        let transport = AsyncRwTransport::new_server(read, write).with_max_line_length(max_line);
        let running = self
            .serve(transport)
            .await
            .map_err(|error| McpServerError::SessionStart(error.to_string()))?;
        let stop = running.cancellation_token();
        tokio::select! {
            quit = running.waiting() => {
                quit.map_err(|error| McpServerError::Session(error.to_string()))?;
            }
            () = shutdown => stop.cancel(),
        }
        Ok(())
    }

    /// Serves one MCP session on this process's stdin and stdout (see
    /// [`serve_io`](Self::serve_io)). Stdout then carries only JSON-RPC messages:
    /// write anything else to stderr.
    pub async fn serve_stdio<F>(self, shutdown: F) -> Result<(), McpServerError>
    where
        F: Future<Output = ()>,
    {
        let (read, write) = stdio_pipes();
        self.serve_io(read, write, shutdown).await
    }
}
