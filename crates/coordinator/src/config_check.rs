//! Checking a [`CoordinatorConfig`]: each setting's bounds, written once, for the
//! coordinator at start and for whoever reads the `[serve]` table of a file first.

use crate::config::{CoordinatorConfig, MAX_APPROVAL_SWEEP, MAX_APPROVAL_TTL};
use crate::error::CoordinatorError;
use crate::host_origin::{is_allowed_host_entry, is_allowed_origin_entry};

impl CoordinatorConfig {
    /// Checks every setting; the error names the first one at fault by its `[serve]`
    /// key and says what was expected.
    ///
    /// ```
    /// use oxydra_coordinator::{CoordinatorConfig, CoordinatorError};
    ///
    /// let config = CoordinatorConfig { max_concurrent_runs: 0, ..CoordinatorConfig::default() };
    /// let Err(CoordinatorError::InvalidConfig { key, .. }) = config.validate() else { panic!() };
    /// assert_eq!(key, "max_concurrent_runs");
    /// ```
    pub fn validate(&self) -> Result<(), CoordinatorError> {
        let invalid = |key: &str, reason: String| {
            Err(CoordinatorError::InvalidConfig {
                key: key.to_owned(),
                reason,
            })
        };
        if !is_listen_address(&self.addr) {
            return invalid(
                "addr",
                format!(
                    "expected an address like 127.0.0.1:8080 or localhost:0, found `{}`",
                    self.addr
                ),
            );
        }
        let at_least_one = [
            ("max_concurrent_runs", self.max_concurrent_runs as u64),
            ("body_limit_bytes", self.body_limit_bytes as u64),
            ("max_connections", self.max_connections as u64),
            ("header_read_timeout_ms", self.header_read_timeout_ms),
            ("body_read_timeout_ms", self.body_read_timeout_ms),
            ("idle_timeout_ms", self.idle_timeout_ms),
        ];
        for (key, value) in at_least_one {
            if value == 0 {
                return invalid(key, "expected at least 1, found 0".to_owned());
            }
        }
        if self.run_lease_ttl_ms < 100 {
            return invalid(
                "run_lease_ttl_ms",
                format!(
                    "expected at least 100 (milliseconds), found {}",
                    self.run_lease_ttl_ms
                ),
            );
        }
        let max_ttl = MAX_APPROVAL_TTL.as_secs();
        if !(1..=max_ttl).contains(&self.approval_ttl_secs) {
            return invalid(
                "approval_ttl_secs",
                format!(
                    "expected a number of seconds in [1, {max_ttl}], found {}",
                    self.approval_ttl_secs
                ),
            );
        }
        if self.approval_sweep_ms == 0 || self.approval_sweep() > MAX_APPROVAL_SWEEP {
            return invalid(
                "approval_sweep_ms",
                format!(
                    "expected between 1 and {} (a lapsed request is denied within it), found {}",
                    MAX_APPROVAL_SWEEP.as_millis(),
                    self.approval_sweep_ms
                ),
            );
        }
        if let Some(token) = &self.auth_token
            && (token.trim().is_empty() || token.trim() != token)
        {
            return invalid(
                "auth_token",
                "expected a non-empty token without surrounding whitespace".to_owned(),
            );
        }
        if let Some(name) = &self.auth_token_env
            && name.trim().is_empty()
        {
            return invalid(
                "auth_token_env",
                "expected the name of an environment variable".to_owned(),
            );
        }
        for (index, host) in self.allowed_hosts.iter().enumerate() {
            if !is_allowed_host_entry(host) {
                return invalid(
                    &format!("allowed_hosts[{index}]"),
                    format!(
                        "expected a host name like `oxydra.lan` or `oxydra.lan:8080`, found `{host}`"
                    ),
                );
            }
        }
        for (index, origin) in self.allowed_origins.iter().enumerate() {
            if !is_allowed_origin_entry(origin) {
                return invalid(
                    &format!("allowed_origins[{index}]"),
                    format!(
                        "expected an origin like `https://dash.example.lan` or \
                         `http://localhost:3000`, found `{origin}`"
                    ),
                );
            }
        }
        Ok(())
    }
}

/// Whether `addr` can be listened on: an IP address and port, or `host:port` with a
/// host name of letters, digits, `-` and `.` (to be looked up by whoever binds it).
pub fn is_listen_address(addr: &str) -> bool {
    if addr.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    match addr.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && port.parse::<u16>().is_ok()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(config: CoordinatorConfig) -> String {
        match config.validate() {
            Err(CoordinatorError::InvalidConfig { key, .. }) => key,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_defaults_are_valid() {
        assert!(CoordinatorConfig::default().validate().is_ok());
    }

    #[test]
    fn each_bad_setting_is_named_by_its_key() {
        let base = CoordinatorConfig::default;
        let cases = [
            (
                CoordinatorConfig {
                    addr: "nowhere".into(),
                    ..base()
                },
                "addr",
            ),
            (
                CoordinatorConfig {
                    addr: "evil host:80".into(),
                    ..base()
                },
                "addr",
            ),
            (
                CoordinatorConfig {
                    idle_timeout_ms: 0,
                    ..base()
                },
                "idle_timeout_ms",
            ),
            (
                CoordinatorConfig {
                    run_lease_ttl_ms: 50,
                    ..base()
                },
                "run_lease_ttl_ms",
            ),
            (
                CoordinatorConfig {
                    approval_ttl_secs: MAX_APPROVAL_TTL.as_secs() + 1,
                    ..base()
                },
                "approval_ttl_secs",
            ),
            (
                CoordinatorConfig {
                    auth_token: Some(" x ".into()),
                    ..base()
                },
                "auth_token",
            ),
            (
                CoordinatorConfig {
                    allowed_hosts: vec!["ok.lan".into(), "http://bad".into()],
                    ..base()
                },
                "allowed_hosts[1]",
            ),
        ];
        for (config, key) in cases {
            assert_eq!(key_of(config), key);
        }
        let host = CoordinatorConfig {
            addr: "localhost:0".into(),
            ..base()
        };
        assert!(host.validate().is_ok());
    }
}
