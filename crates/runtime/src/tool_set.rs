//! What [`AgentRuntimeBuilder::tools`](crate::AgentRuntimeBuilder::tools) accepts: a
//! registry, a list of tools, or a tuple of tools.

use std::sync::Arc;

use oxydra_tools::{Tool, ToolRegistry};

use crate::error::RuntimeError;

/// Tools given to the builder, before they are gathered into one registry.
#[derive(Clone)]
pub enum ToolSet {
    /// A whole registry (shared as is when it is the only thing given).
    Registry(Arc<ToolRegistry>),
    /// Single tools.
    List(Vec<Arc<dyn Tool>>),
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Registry(registry) => f.debug_tuple("Registry").field(registry).finish(),
            Self::List(tools) => f
                .debug_tuple("List")
                .field(&tools.iter().map(|t| t.schema().name).collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Anything [`AgentRuntimeBuilder::tools`](crate::AgentRuntimeBuilder::tools) takes:
/// a [`ToolRegistry`] (or an `Arc` of one), a `Vec<Arc<dyn Tool>>`, or a tuple of up
/// to eight tools (`.tools((Weather, Search))`).
pub trait IntoToolSet {
    /// The tools.
    fn into_tool_set(self) -> ToolSet;
}

impl IntoToolSet for ToolSet {
    fn into_tool_set(self) -> ToolSet {
        self
    }
}

impl IntoToolSet for ToolRegistry {
    fn into_tool_set(self) -> ToolSet {
        ToolSet::Registry(Arc::new(self))
    }
}

impl IntoToolSet for Arc<ToolRegistry> {
    fn into_tool_set(self) -> ToolSet {
        ToolSet::Registry(self)
    }
}

impl IntoToolSet for Vec<Arc<dyn Tool>> {
    fn into_tool_set(self) -> ToolSet {
        ToolSet::List(self)
    }
}

macro_rules! tuple_tool_set {
    ($($name:ident),+) => {
        impl<$($name: Tool + 'static),+> IntoToolSet for ($($name,)+) {
            #[allow(non_snake_case)]
            fn into_tool_set(self) -> ToolSet {
                let ($($name,)+) = self;
                ToolSet::List(vec![$(Arc::new($name) as Arc<dyn Tool>),+])
            }
        }
    };
}

tuple_tool_set!(A);
tuple_tool_set!(A, B);
tuple_tool_set!(A, B, C);
tuple_tool_set!(A, B, C, D);
tuple_tool_set!(A, B, C, D, E);
tuple_tool_set!(A, B, C, D, E, F);
tuple_tool_set!(A, B, C, D, E, F, G);
tuple_tool_set!(A, B, C, D, E, F, G, H);

/// The sets gathered into one registry; a lone registry is kept as it is. Two tools
/// of one name are a configuration error naming it.
pub(crate) fn gather(sets: Vec<ToolSet>) -> Result<Arc<ToolRegistry>, RuntimeError> {
    if let [ToolSet::Registry(registry)] = sets.as_slice() {
        return Ok(Arc::clone(registry));
    }
    let mut registry = ToolRegistry::new();
    let tool_error =
        |error: oxydra_tools::ToolError| RuntimeError::Config(format!("tools: {error}"));
    for set in sets {
        match set {
            ToolSet::Registry(other) => {
                for name in other.names() {
                    if let Some(tool) = other.get(&name) {
                        registry.register_arc(tool).map_err(tool_error)?;
                    }
                }
            }
            ToolSet::List(tools) => {
                for tool in tools {
                    registry.register_arc(tool).map_err(tool_error)?;
                }
            }
        }
    }
    Ok(Arc::new(registry))
}
