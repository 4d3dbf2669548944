//! What a standing grant of consent covers besides the tool. The type lives in
//! `oxydra-tools`, since a tool declares the consent it needs
//! ([`Tool::consent`](oxydra_tools::Tool::consent)); it is re-exported here, where the
//! brokers, rules and errors use it.

pub use oxydra_tools::PermissionScope;
