//! The `Host` and `Origin` values of requests and of the `allowed_hosts` /
//! `allowed_origins` entries, reduced to what identifies them: the HTTP guard compares
//! them, and the coordinator checks its configuration's entries with them.

use std::str::FromStr;

use axum::http::uri::{Authority, Uri};

/// An origin reduced to what identifies it: scheme, host and port (explicit or the
/// scheme's default), all lower-case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    pub(crate) scheme: String,
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

impl Origin {
    /// The origin `text` names, if it is one (no user info, no path).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let uri = Uri::from_str(text.trim()).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        if authority.as_str().contains('@') {
            return None;
        }
        if uri
            .path_and_query()
            .is_some_and(|path| path.as_str() != "/")
        {
            return None;
        }
        let default_port = match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        };
        Some(Self {
            scheme,
            host: authority.host().to_ascii_lowercase(),
            port: authority.port_u16().or(default_port),
        })
    }
}

/// One `allowed_hosts` entry: a name, with a port when only that port is meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostEntry {
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

impl HostEntry {
    /// The host (and port) `text` names, if it is one (no user info).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let authority = Authority::from_str(text.trim()).ok()?;
        if authority.as_str().contains('@') {
            return None;
        }
        Some(Self {
            host: authority.host().to_ascii_lowercase(),
            port: authority.port_u16(),
        })
    }

    /// Whether `host` (a request's `Host`) is this entry: the same name, and the same
    /// port when the entry names one.
    pub(crate) fn matches(&self, host: &HostEntry) -> bool {
        self.host == host.host && self.port.is_none_or(|port| host.port == Some(port))
    }
}

/// Whether `entry` is usable in `allowed_hosts`: a host name, maybe with a port.
pub fn is_allowed_host_entry(entry: &str) -> bool {
    !entry.contains('/') && HostEntry::parse(entry).is_some()
}

/// Whether `entry` is usable in `allowed_origins`: `http` or `https`, a host, maybe a
/// port, no path.
pub fn is_allowed_origin_entry(entry: &str) -> bool {
    Origin::parse(entry).is_some_and(|origin| matches!(origin.scheme.as_str(), "http" | "https"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_entries_are_checked() {
        for ok in ["oxydra.lan", "oxydra.lan:8080", "10.0.0.5", "[fe80::1]:80"] {
            assert!(is_allowed_host_entry(ok), "{ok}");
        }
        for bad in ["", "a b", "user@host", "http://x", "x/y"] {
            assert!(!is_allowed_host_entry(bad), "{bad}");
        }
        for ok in [
            "https://dash.example.lan",
            "http://localhost:3000",
            "http://a.lan/",
        ] {
            assert!(is_allowed_origin_entry(ok), "{ok}");
        }
        for bad in [
            "dash.example.lan",
            "ftp://a.lan",
            "https://a.lan/path",
            "null",
            "*",
        ] {
            assert!(!is_allowed_origin_entry(bad), "{bad}");
        }
    }
}
