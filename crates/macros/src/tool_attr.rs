//! The arguments of `#[tool(...)]`: the safety tier, an optional name and an optional
//! consent scope.

use proc_macro2::{Span, TokenStream};
use syn::LitStr;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;

/// The safety tiers a tool can declare, as the attribute spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tier {
    ReadOnly,
    SideEffecting,
    Privileged,
}

impl Tier {
    fn from_word(word: &str) -> Option<Self> {
        match word {
            "read_only" => Some(Self::ReadOnly),
            "side_effecting" => Some(Self::SideEffecting),
            "privileged" => Some(Self::Privileged),
            _ => None,
        }
    }

    /// The `SafetyTier` variant it stands for.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Self::ReadOnly => "ReadOnly",
            Self::SideEffecting => "SideEffecting",
            Self::Privileged => "Privileged",
        }
    }
}

/// The consent scopes a tool can declare (`consent = "..."`), as the executor's
/// `PermissionScope` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Consent {
    Tool,
    Session,
    Arguments,
}

impl Consent {
    fn from_word(word: &str) -> Option<Self> {
        match word {
            "tool" => Some(Self::Tool),
            "session" => Some(Self::Session),
            "arguments" => Some(Self::Arguments),
            _ => None,
        }
    }

    /// The `PermissionScope` variant it stands for.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Self::Tool => "Tool",
            Self::Session => "Session",
            Self::Arguments => "Arguments",
        }
    }
}

/// What `#[tool(...)]` said.
pub(crate) struct ToolAttr {
    pub tier: Tier,
    pub name: Option<LitStr>,
    pub consent: Option<Consent>,
}

impl ToolAttr {
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let mut tier: Option<Tier> = None;
        let mut name: Option<LitStr> = None;
        let mut consent: Option<Consent> = None;
        let parser = syn::meta::parser(|meta: ParseNestedMeta<'_>| {
            if meta.path.is_ident("consent") {
                if consent.is_some() {
                    return Err(meta.error("`consent` is given twice"));
                }
                let value: LitStr = meta.value()?.parse()?;
                let scope = Consent::from_word(&value.value()).ok_or_else(|| {
                    syn::Error::new(
                        value.span(),
                        "a consent scope is `\"session\"` (every call of the tool in the session, once approved), `\"tool\"` (in any session) or `\"arguments\"` (only calls with the same arguments)",
                    )
                })?;
                consent = Some(scope);
                return Ok(());
            }
            if meta.path.is_ident("name") {
                if name.is_some() {
                    return Err(meta.error("`name` is given twice"));
                }
                let value: LitStr = meta.value()?.parse()?;
                if !is_valid_tool_name(&value.value()) {
                    return Err(syn::Error::new(
                        value.span(),
                        "a tool name is 1 to 64 characters of `a-z`, `A-Z`, `0-9`, `_` and `-`",
                    ));
                }
                name = Some(value);
                return Ok(());
            }
            let word = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match Tier::from_word(&word) {
                Some(found) => {
                    if tier.is_some() {
                        return Err(meta.error(
                            "a tool has one safety tier: keep one of `read_only`, `side_effecting`, `privileged`",
                        ));
                    }
                    tier = Some(found);
                    Ok(())
                }
                None => Err(meta.error(
                    "unknown `tool` argument: expected `read_only`, `side_effecting`, `privileged`, `name = \"...\"` or `consent = \"session\"`",
                )),
            }
        });
        parser.parse2(tokens)?;
        let tier = tier.ok_or_else(|| {
            syn::Error::new(
                Span::call_site(),
                "say how the tool may be scheduled: `#[tool(read_only)]`, `#[tool(side_effecting)]` or `#[tool(privileged)]`",
            )
        })?;
        Ok(Self {
            tier,
            name,
            consent,
        })
    }
}

/// The names every provider accepts for a function tool.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn one_tier_and_an_optional_name() {
        let attr = ToolAttr::parse(quote!(side_effecting, name = "write_it")).unwrap();
        assert_eq!(attr.tier, Tier::SideEffecting);
        assert_eq!(attr.name.unwrap().value(), "write_it");
        assert!(ToolAttr::parse(quote!(read_only, privileged)).is_err());
        assert!(ToolAttr::parse(quote!()).is_err());
        assert!(ToolAttr::parse(quote!(readonly)).is_err());
        assert!(ToolAttr::parse(quote!(read_only, name = "has space")).is_err());
    }

    #[test]
    fn an_optional_consent_scope() {
        let attr = ToolAttr::parse(quote!(side_effecting, consent = "session")).unwrap();
        assert_eq!(attr.consent, Some(Consent::Session));
        let attr = ToolAttr::parse(quote!(consent = "arguments", privileged)).unwrap();
        assert_eq!(attr.consent, Some(Consent::Arguments));
        assert_eq!(ToolAttr::parse(quote!(read_only)).unwrap().consent, None);
        assert!(ToolAttr::parse(quote!(side_effecting, consent = "forever")).is_err());
        assert!(
            ToolAttr::parse(quote!(side_effecting, consent = "tool", consent = "tool")).is_err()
        );
    }

    #[test]
    fn tool_names_are_what_providers_accept() {
        assert!(is_valid_tool_name("get_weather-2"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
        assert!(!is_valid_tool_name("dot.name"));
    }
}
