//! What `#[tool]` reads from the function: its description, parameters, the optional
//! context parameter and its return type — refusing the shapes a tool cannot have.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, ItemFn, Lit, Meta, Pat, ReturnType, Type};

use crate::tool_attr::ToolAttr;

/// One parameter the model fills in.
pub(crate) struct Param {
    pub ident: Ident,
    pub ty: Type,
    /// Doc comments and `#[serde]` / `#[schemars]` attributes, moved to the args field.
    pub field_attrs: Vec<Attribute>,
}

/// How the function is called: its parameters in order.
pub(crate) enum CallArg {
    /// A model-supplied argument, by name.
    Param(Ident),
    /// The `&ToolContext`.
    Context,
}

/// The function, analysed.
pub(crate) struct ToolFn {
    /// The function as it will be emitted (parameter attributes removed).
    pub function: ItemFn,
    pub attr: ToolAttr,
    pub description: String,
    pub params: Vec<Param>,
    pub call_args: Vec<CallArg>,
    /// The span of the return type, for errors about what it returns.
    pub return_span: Span,
}

impl ToolFn {
    pub(crate) fn analyse(mut function: ItemFn, attr: ToolAttr) -> syn::Result<Self> {
        let sig = &function.sig;
        if sig.asyncness.is_none() {
            return Err(syn::Error::new(
                sig.fn_token.span(),
                "`#[tool]` goes on an `async fn`",
            ));
        }
        if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
            return Err(syn::Error::new(
                sig.generics.span(),
                "a tool function cannot be generic: the model's arguments need one concrete type",
            ));
        }
        if let Some(variadic) = &sig.variadic {
            return Err(syn::Error::new(
                variadic.span(),
                "a tool function cannot be variadic",
            ));
        }
        let return_span = check_return(&sig.output)?;
        let description = doc_text(&function.attrs).ok_or_else(|| {
            syn::Error::new(
                sig.ident.span(),
                "document the tool: its doc comment (`/// What it does`) is the description the model reads",
            )
        })?;
        let mut params = Vec::new();
        let mut call_args = Vec::new();
        let mut context_seen = false;
        for input in &mut function.sig.inputs {
            let typed = match input {
                FnArg::Receiver(receiver) => {
                    return Err(syn::Error::new(
                        receiver.span(),
                        "a tool is a free `async fn`: it cannot take `self`",
                    ));
                }
                FnArg::Typed(typed) => typed,
            };
            if is_context(&typed.ty) {
                if context_seen {
                    return Err(syn::Error::new(
                        typed.ty.span(),
                        "only one parameter may be the `&ToolContext`",
                    ));
                }
                context_seen = true;
                call_args.push(CallArg::Context);
                continue;
            }
            let ident = match typed.pat.as_ref() {
                Pat::Ident(pat) if pat.subpat.is_none() && pat.by_ref.is_none() => {
                    pat.ident.clone()
                }
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "a tool parameter is a plain name (`city: String`): the name is the JSON property the model fills in",
                    ));
                }
            };
            if let Type::Reference(reference) = typed.ty.as_ref() {
                return Err(syn::Error::new(
                    reference.span(),
                    "tool arguments are deserialized from the model's JSON and owned: take `String` or `Vec<T>`, not a reference (only `&ToolContext` may be borrowed)",
                ));
            }
            let (field_attrs, kept) = typed.attrs.drain(..).partition(|attr| {
                ["doc", "serde", "schemars"]
                    .iter()
                    .any(|name| attr.path().is_ident(name))
            });
            typed.attrs = kept;
            call_args.push(CallArg::Param(ident.clone()));
            params.push(Param {
                ident,
                ty: (*typed.ty).clone(),
                field_attrs,
            });
        }
        Ok(Self {
            function,
            attr,
            description,
            params,
            call_args,
            return_span,
        })
    }
}

/// The return type must be spelled `Result<..>` (any path ending in `Result`); what
/// it holds is checked by the compiler against `Into<ToolOutput>` and `Display`.
fn check_return(output: &ReturnType) -> syn::Result<Span> {
    const EXPECTED: &str = "a tool returns `Result<T, E>` where `T: Into<ToolOutput>` (e.g. `String`) and `E: Display`";
    match output {
        ReturnType::Default => Err(syn::Error::new(output.span(), EXPECTED)),
        ReturnType::Type(_, ty) => match ty.as_ref() {
            Type::Path(path)
                if path.qself.is_none()
                    && path
                        .path
                        .segments
                        .last()
                        .is_some_and(|segment| segment.ident == "Result") =>
            {
                Ok(ty.span())
            }
            other => Err(syn::Error::new(other.span(), EXPECTED)),
        },
    }
}

/// `&ToolContext` (under any path).
fn is_context(ty: &Type) -> bool {
    let Type::Reference(reference) = ty else {
        return false;
    };
    reference.mutability.is_none()
        && matches!(reference.elem.as_ref(), Type::Path(path)
            if path.path.segments.last().is_some_and(|segment| segment.ident == "ToolContext"))
}

/// The text of the doc comments among `attrs`, lines joined, or `None` when empty.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(text) => Some(text.value()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// `get_weather` → `GetWeather` (a raw identifier loses its `r#`).
pub(crate) fn pascal_case(name: &str) -> String {
    name.trim_start_matches("r#")
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn analyse(tokens: proc_macro2::TokenStream) -> syn::Result<ToolFn> {
        let attr = ToolAttr::parse(quote!(read_only)).unwrap();
        ToolFn::analyse(syn::parse2(tokens).unwrap(), attr)
    }

    fn message(tokens: proc_macro2::TokenStream) -> String {
        match analyse(tokens) {
            Ok(_) => panic!("accepted"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn parameters_context_and_docs_are_read() {
        let tool = analyse(quote! {
            /// Adds.
            ///
            /// Two numbers.
            async fn add(
                /// The first.
                a: i64,
                ctx: &oxydra::tools::ToolContext,
                #[serde(default)] mut b: i64,
            ) -> Result<String, String> { Ok(String::new()) }
        })
        .unwrap();
        assert_eq!(tool.description, "Adds.\n\nTwo numbers.");
        assert_eq!(tool.params.len(), 2);
        assert_eq!(tool.params[0].field_attrs.len(), 1);
        assert_eq!(tool.params[1].field_attrs.len(), 1);
        assert!(matches!(tool.call_args[1], CallArg::Context));
        // The attributes moved to the args struct are gone from the function.
        let function = &tool.function;
        let emitted = quote!(#function).to_string();
        assert!(!emitted.contains("serde"));
    }

    #[test]
    fn the_shapes_a_tool_cannot_have_are_refused() {
        assert!(
            message(quote! { /// D.
            fn f() -> Result<String, String> { Ok(String::new()) } })
            .contains("async fn")
        );
        assert!(
            message(quote! { async fn f() -> Result<String, String> { Ok(String::new()) } })
                .contains("doc comment")
        );
        assert!(
            message(quote! { /// D.
            async fn f() -> String { String::new() } })
            .contains("returns `Result")
        );
        assert!(
            message(quote! { /// D.
            async fn f() { } })
            .contains("returns `Result")
        );
        assert!(
            message(quote! { /// D.
            async fn f<T>(t: T) -> Result<String, String> { Ok(String::new()) } })
            .contains("generic")
        );
        assert!(
            message(quote! { /// D.
            async fn f(&self) -> Result<String, String> { Ok(String::new()) } })
            .contains("self")
        );
        assert!(
            message(quote! { /// D.
            async fn f(city: &str) -> Result<String, String> { Ok(String::new()) } })
            .contains("reference")
        );
        assert!(
            message(quote! { /// D.
            async fn f((a, b): (u8, u8)) -> Result<String, String> { Ok(String::new()) } })
            .contains("plain name")
        );
        assert!(message(quote! { /// D.
            async fn f(a: &ToolContext, b: &ToolContext) -> Result<String, String> { Ok(String::new()) } })
        .contains("only one"));
    }

    #[test]
    fn names_become_pascal_case() {
        assert_eq!(pascal_case("get_weather"), "GetWeather");
        assert_eq!(pascal_case("add"), "Add");
        assert_eq!(pascal_case("r#type"), "Type");
        assert_eq!(pascal_case("_leading__double"), "LeadingDouble");
    }
}
