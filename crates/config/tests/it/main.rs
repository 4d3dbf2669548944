//! Integration tests of `oxydra-config`.

mod docs_keys;
