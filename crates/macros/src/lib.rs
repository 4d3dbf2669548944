//! Procedural macros of Oxydra, used through the `oxydra` facade (`oxydra::tool`).
//!
//! The generated code names the facade's paths (`::oxydra::tools`, `::oxydra::serde`,
//! `::oxydra::schemars`), so a crate that uses these macros depends on `oxydra` alone.

// docs.rs (`--cfg docsrs`, Cargo.toml): each item shows the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod tool_attr;
mod tool_expand;
mod tool_fn;

use proc_macro::TokenStream;

/// Turns an `async fn` into a tool the model can call.
///
/// ```ignore
/// /// Tells the weather in a city.
/// #[oxydra::tool(read_only)]
/// async fn weather(
///     /// The city, e.g. "Paris".
///     city: String,
/// ) -> Result<String, std::convert::Infallible> {
///     Ok(format!("Sunny in {city}"))
/// }
/// // `Weather` is the tool: `AgentRuntime::builder().tool(Weather)`.
/// ```
///
/// - The function's doc comment is the tool's description (required).
/// - Each parameter becomes a property of the arguments' JSON Schema, its doc comment
///   the property's description; `Option<T>` parameters are optional. `#[serde(..)]`
///   and `#[schemars(..)]` attributes on a parameter are kept.
/// - Exactly one of `read_only`, `side_effecting`, `privileged` gives the safety tier.
///   `name = "other_name"` renames the tool (default: the function's name).
/// - `consent = "session"` (or `"tool"`, `"arguments"`) makes the executor ask the
///   permission broker before each call, unless a standing grant of that scope covers
///   it: the same as a `requires_consent` rule for the tool, which, if given, decides
///   instead.
/// - One parameter may be `&ToolContext` (the call id, workspace root and cancellation).
/// - The function returns `Result<T, E>` with `T: Into<ToolOutput>` (`String`, `&str`,
///   `serde_json::Value`, `ToolOutput`) and `E: Display`; an error goes to the model as
///   the call's failure.
///
/// The macro keeps the function as written and adds a unit struct named after it in
/// `PascalCase` (`get_weather` → `GetWeather`) that implements `TypedTool`, and that
/// struct's arguments type (`GetWeatherArgs`).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

fn expand(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let attr = tool_attr::ToolAttr::parse(attr)?;
    let function: syn::ItemFn = syn::parse2(item)?;
    let tool = tool_fn::ToolFn::analyse(function, attr)?;
    Ok(tool_expand::expand(&tool))
}
