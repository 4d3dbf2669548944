//! The default caps on what a tool returns, shared by the built-in tools and any
//! other tool (an MCP server's, the executor's error messages).

/// Default cap on a tool's output: 16 KiB.
pub const DEFAULT_OUTPUT_LIMIT_BYTES: usize = 16 * 1024;

/// Default cap on an image or PDF a tool attaches (`file_read`, an MCP server's
/// image): 5 MiB, the most Anthropic takes for one image.
pub const DEFAULT_MAX_MEDIA_BYTES: usize = 5 * 1024 * 1024;
