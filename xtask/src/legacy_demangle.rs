//! Rust's legacy symbol mangling (`_ZN…E`, the default of rustc 1.95 for our crates),
//! read back into a path without its hash: what callgrind prints with
//! `--demangle=yes` once [`crate::callgrind::stable_name`] has cut the `::h<hash>`,
//! so that the names of `crates/cli/symbol-order.txt` can be compared with those of a
//! demangled profile ([`crate::symbol_coverage`]).
//!
//! The scheme (Itanium's nested name, Rust's escapes): `_ZN`, then each path element
//! as its length in decimal and its bytes, then `E`; the last element is `h` and 16 hex
//! digits, a hash of the crate's build and of the instance. Inside an element `..` is
//! `::`, `$LT$` `<`, `$GT$` `>`, `$RF$` `&`, `$BP$` `*`, `$LP$` `(`, `$RP$` `)`, `$C$`
//! `,`, `$SP$` `@` and `$uXX$` the character of hex code XX; an element that would
//! begin with `$` is written with a `_` before it.

/// The demangled path of a legacy Rust symbol without its hash, or `None` for a name
/// that is not one (a v0 `_R…` symbol, a C function).
pub(crate) fn demangle(symbol: &str) -> Option<String> {
    // A symbol may carry an LLVM suffix (`.llvm.123`) after the `E`.
    let mut rest = symbol.strip_prefix("_ZN")?;
    let mut elements = Vec::new();
    while !rest.starts_with('E') {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (length, tail) = rest.split_at_checked(digits)?;
        let length: usize = length.parse().ok()?;
        let (element, tail) = tail.split_at_checked(length)?;
        elements.push(element);
        rest = tail;
    }
    if let Some(last) = elements.last()
        && last.len() == 17
        && last.starts_with('h')
        && last.bytes().skip(1).all(|b| b.is_ascii_hexdigit())
    {
        elements.pop();
    }
    let parts: Option<Vec<String>> = elements.into_iter().map(unescape).collect();
    Some(parts?.join("::"))
}

/// One element with its escapes read.
fn unescape(element: &str) -> Option<String> {
    // `_$LT$…`: the `_` only keeps the element from starting with `$`.
    let mut rest = if element.starts_with("_$") {
        element.get(1..)?
    } else {
        element
    };
    let mut out = String::with_capacity(rest.len());
    while let Some(c) = rest.chars().next() {
        if let Some(tail) = rest.strip_prefix("..") {
            out.push_str("::");
            rest = tail;
        } else if c == '$' {
            let end = rest.get(1..)?.find('$')? + 1;
            let code = rest.get(1..end)?;
            out.push(match code {
                "LT" => '<',
                "GT" => '>',
                "RF" => '&',
                "BP" => '*',
                "LP" => '(',
                "RP" => ')',
                "C" => ',',
                "SP" => '@',
                _ => {
                    let hex = code.strip_prefix('u')?;
                    char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
                }
            });
            rest = rest.get(end + 1..)?;
        } else {
            out.push(c);
            rest = rest.get(c.len_utf8()..)?;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_back_without_their_hash() {
        assert_eq!(
            demangle("_ZN6oxydra4main17h0123456789abcdefE").as_deref(),
            Some("oxydra::main")
        );
        // From crates/cli/symbol-order.txt: an impl of a trait, with its escapes.
        assert_eq!(
            demangle(
                "_ZN102_$LT$oxydra_provider..request..ToolChoice$u20$as$u20$oxydra_runtime..\
                 tool_choice..ToolChoicePolicy$GT$6choose17hb51115a6e21ade9dE"
            )
            .as_deref(),
            Some(
                "<oxydra_provider::request::ToolChoice as \
                 oxydra_runtime::tool_choice::ToolChoicePolicy>::choose"
            )
        );
        assert_eq!(
            demangle(
                "_ZN4core3ptr45drop_in_place$LT$$RF$mut$u20$$u5b$u8$u5d$$GT$17h1111111111111111E"
            )
            .as_deref(),
            Some("core::ptr::drop_in_place<&mut [u8]>")
        );
        assert_eq!(
            demangle("_ZN6oxydra3run28_$u7b$$u7b$closure$u7d$$u7d$17h3776eb02e8b84635E.llvm.42")
                .as_deref(),
            Some("oxydra::run::{{closure}}")
        );
    }

    #[test]
    fn what_is_not_a_legacy_symbol_is_none() {
        assert_eq!(demangle("memcpy"), None);
        assert_eq!(demangle("_RNvCs1234_6oxydra4main"), None);
        assert_eq!(demangle("(below main)"), None);
        // A length running past the end, an escape never closed.
        assert_eq!(demangle("_ZN40oxydraE"), None);
        assert_eq!(demangle("_ZN5a$LTbE"), None);
    }
}
