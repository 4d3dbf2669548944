//! The code `#[tool]` emits: the function as written, a unit struct implementing
//! `TypedTool`, and the struct of its arguments.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

use crate::tool_fn::{CallArg, ToolFn, pascal_case};

pub(crate) fn expand(tool: &ToolFn) -> TokenStream {
    let function = &tool.function;
    let vis = &function.vis;
    let fn_ident = &function.sig.ident;
    let fn_name = fn_ident.to_string();
    let fn_name = fn_name.trim_start_matches("r#");
    let tool_name = tool
        .attr
        .name
        .as_ref()
        .map_or_else(|| fn_name.to_owned(), syn::LitStr::value);
    let struct_ident = format_ident!("{}", pascal_case(fn_name), span = fn_ident.span());
    let args_ident = format_ident!("{}Args", struct_ident, span = fn_ident.span());
    let description = &tool.description;
    let tier = format_ident!("{}", tool.attr.tier.variant());
    let consent = tool.attr.consent.map(|scope| {
        let scope = format_ident!("{}", scope.variant());
        quote! {
            const CONSENT: ::std::option::Option<::oxydra::tools::PermissionScope> =
                ::std::option::Option::Some(::oxydra::tools::PermissionScope::#scope);
        }
    });
    let struct_doc = format!("The `{tool_name}` tool, made by `#[tool]` from `{fn_name}`.");
    let args_doc = format!("The arguments of the `{tool_name}` tool.");

    let fields = tool.params.iter().map(|param| {
        let ident = &param.ident;
        let ty = &param.ty;
        let attrs = &param.field_attrs;
        quote! { #(#attrs)* #ident: #ty }
    });
    let field_idents: Vec<_> = tool.params.iter().map(|param| &param.ident).collect();
    let call_args = tool.call_args.iter().map(|arg| match arg {
        CallArg::Param(ident) => quote!(#ident),
        CallArg::Context => quote!(ctx),
    });
    // Spanned at the return type, so a wrong `T` or `E` is reported there.
    let finish = quote_spanned! {tool.return_span=>
        ::oxydra::__macro_support::tool_result(#fn_ident(#(#call_args),*).await)
    };

    quote! {
        #function

        #[doc = #struct_doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #struct_ident;

        #[doc = #args_doc]
        #[derive(::oxydra::serde::Deserialize, ::oxydra::schemars::JsonSchema)]
        #[serde(crate = "::oxydra::serde", deny_unknown_fields)]
        #[schemars(crate = "::oxydra::schemars")]
        #vis struct #args_ident {
            #(#fields,)*
        }

        #[::oxydra::async_trait]
        impl ::oxydra::tools::TypedTool for #struct_ident {
            type Args = #args_ident;
            const NAME: &'static str = #tool_name;
            const TIER: ::oxydra::types::SafetyTier = ::oxydra::types::SafetyTier::#tier;
            #consent

            fn description(&self) -> ::std::string::String {
                ::std::string::String::from(#description)
            }

            async fn run(
                &self,
                args: #args_ident,
                ctx: &::oxydra::tools::ToolContext,
            ) -> ::std::result::Result<::oxydra::tools::ToolOutput, ::oxydra::tools::ToolError> {
                let _ = ctx;
                let #args_ident { #(#field_idents),* } = args;
                #finish
            }
        }
    }
}
