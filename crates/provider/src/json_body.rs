//! Request bodies as JSON bytes: the bytes serde_json writes, written faster.
//!
//! Every request of a conversation carries its whole history again (the APIs are
//! stateless), so writing the body is most of a client's own work per request, and
//! most of that is escaping strings: the tool results' text. serde_json looks at a
//! string one byte at a time (~8 instructions a byte); [sonic-rs]' serializer, a port
//! of serde_json's with the same escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
//! other control characters as `\u00xx`, nothing else: not `/`, not DEL, not U+2028)
//! and the same number formatting (itoa, zmij), scans 32 bytes at a time and copies
//! the runs that need no escape whole. The unit tests below check the two write the
//! same bytes, for every provider's bodies and for strings of every kind.
//!
//! [sonic-rs]: https://docs.rs/sonic-rs

use serde::Serialize;

/// `value` as compact JSON: byte for byte what `serde_json::to_vec` returns. `None`
/// for a value that cannot be written as JSON (a map whose keys are not strings, a
/// `Serialize` implementation that fails; none of the clients' bodies is such):
/// `serde_json::to_vec` of it says why.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    sonic_rs::to_vec(value).ok()
}

#[cfg(test)]
pub(crate) mod tests;
