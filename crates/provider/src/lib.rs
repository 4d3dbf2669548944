//! LLM providers for Oxydra.
//!
//! `oxydra-provider` owns the [`Provider`] trait — `complete` and `stream` a
//! [`ProviderRequest`], report [`ProviderCapabilities`] — and the errors a provider
//! call can end in ([`ProviderError`]).
//!
//! ```
//! use oxydra_provider::{ProviderRequest, ToolChoice};
//! use oxydra_types::Message;
//!
//! let request = ProviderRequest::new("gpt-4o-mini", vec![Message::user("Hello")]);
//! assert_eq!(request.tool_choice, ToolChoice::Auto);
//! ```

mod error;
mod provider;
mod request;

pub use error::ProviderError;
pub use provider::{Provider, ProviderCapabilities, ProviderStream};
pub use request::{ProviderRequest, ProviderResponse, ToolChoice};
