//! Where and how spans are exported: from the standard `OTEL_*` variables, or by hand.

use std::time::Duration;

use tracing::Level;
use tracing_subscriber::filter::Targets;

use crate::error::OtelError;

/// The base endpoint variable: `/v1/traces` is appended to it.
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The traces endpoint variable: used as it is, and before [`ENDPOINT_VAR`].
pub const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The service name variable.
pub const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";
/// `true` turns export off whatever else is set.
pub const SDK_DISABLED_VAR: &str = "OTEL_SDK_DISABLED";
const PROTOCOL_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
];
const TIMEOUT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
];

/// The service name when [`SERVICE_NAME_VAR`] is not set.
pub const DEFAULT_SERVICE_NAME: &str = "oxydra";
/// How long one export may take (the OTLP default): with retries, and again at
/// shutdown.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to export spans over OTLP/HTTP (protobuf bodies).
#[derive(Debug, Clone)]
pub struct OtelConfig {
    /// The full URL spans are posted to, `…/v1/traces` included.
    pub endpoint: String,
    /// The `service.name` of the resource.
    pub service_name: String,
    /// The most one export may take, retries included; shutdown waits about as long.
    pub timeout: Duration,
    /// Which spans are exported: by default those of Oxydra's crates at `INFO` and
    /// above (add the targets of your own spans with [`Targets::with_target`]).
    pub targets: Targets,
}

impl OtelConfig {
    /// Export to `traces_endpoint` (the full URL, e.g.
    /// `http://127.0.0.1:4318/v1/traces`) with the defaults. The URL is checked when
    /// the exporter is set up.
    pub fn new(traces_endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: traces_endpoint.into(),
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            timeout: DEFAULT_TIMEOUT,
            targets: default_targets(),
        }
    }

    /// The configuration the standard variables ask for, or `None` when neither
    /// [`TRACES_ENDPOINT_VAR`] nor [`ENDPOINT_VAR`] is set (or
    /// `OTEL_SDK_DISABLED=true`). Also read: [`SERVICE_NAME_VAR`], the protocol
    /// (`http/protobuf` is the only one accepted) and timeout variables; the exporter
    /// itself reads `OTEL_EXPORTER_OTLP_HEADERS` and the batch processor `OTEL_BSP_*`.
    ///
    /// A bad value is an error naming its variable.
    pub fn from_env() -> Result<Option<Self>, OtelError> {
        Self::from_lookup(|var| match std::env::var(var) {
            Ok(value) => Ok(Some(value)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(OtelError::Variable {
                var,
                message: "the value is not valid Unicode".to_owned(),
            }),
        })
    }

    /// [`OtelConfig::from_env`] over any source of variables.
    fn from_lookup(
        lookup: impl Fn(&'static str) -> Result<Option<String>, OtelError>,
    ) -> Result<Option<Self>, OtelError> {
        // An empty value counts as unset, as the OTel specification says.
        let get = |var: &'static str| -> Result<Option<String>, OtelError> {
            Ok(lookup(var)?.filter(|value| !value.trim().is_empty()))
        };
        if get(SDK_DISABLED_VAR)?.is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = match get(TRACES_ENDPOINT_VAR)? {
            Some(value) => checked_endpoint(TRACES_ENDPOINT_VAR, value.trim())?,
            None => match get(ENDPOINT_VAR)? {
                Some(value) => traces_url(&checked_endpoint(ENDPOINT_VAR, value.trim())?),
                None => return Ok(None),
            },
        };
        for var in PROTOCOL_VARS {
            if let Some(value) = get(var)?
                && value.trim() != "http/protobuf"
            {
                return Err(OtelError::Variable {
                    var,
                    message: format!(
                        "protocol `{value}` is not supported: Oxydra exports over `http/protobuf` only"
                    ),
                });
            }
        }
        let mut timeout = DEFAULT_TIMEOUT;
        for var in TIMEOUT_VARS {
            if let Some(value) = get(var)? {
                let millis: u64 = value.trim().parse().map_err(|_| OtelError::Variable {
                    var,
                    message: format!("`{value}` is not a whole number of milliseconds"),
                })?;
                timeout = Duration::from_millis(millis);
                break;
            }
        }
        let service_name = get(SERVICE_NAME_VAR)?
            .map(|name| name.trim().to_owned())
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        Ok(Some(Self {
            endpoint,
            service_name,
            timeout,
            targets: default_targets(),
        }))
    }
}

/// Oxydra's crates (`oxydra`, `oxydra_runtime`, …) at `INFO` and above: the session,
/// turn, provider-call and tool spans, not the debug-level storage ones.
pub fn default_targets() -> Targets {
    Targets::new().with_target("oxydra", Level::INFO)
}

/// `value` when it is an absolute `http` or `https` URL with a host.
pub(crate) fn checked_endpoint(var: &'static str, value: &str) -> Result<String, OtelError> {
    let error = |reason: String| OtelError::Endpoint {
        var,
        value: value.to_owned(),
        reason,
    };
    let url = url::Url::parse(value).map_err(|e| error(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(error(format!(
            "the scheme must be http or https, not `{}`",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(error("the URL has no host".to_owned()));
    }
    Ok(value.to_owned())
}

/// The traces URL under a base endpoint: `{base}/v1/traces`, one slash between.
fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn config(vars: &[(&'static str, &str)]) -> Result<Option<OtelConfig>, OtelError> {
        let vars: HashMap<&str, String> = vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        OtelConfig::from_lookup(|var| Ok(vars.get(var).cloned()))
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        assert!(config(&[]).unwrap().is_none());
        assert!(config(&[(ENDPOINT_VAR, "  ")]).unwrap().is_none());
        assert!(config(&[(SERVICE_NAME_VAR, "agent")]).unwrap().is_none());
    }

    #[test]
    fn the_base_endpoint_gets_the_traces_path() {
        let got = config(&[(ENDPOINT_VAR, "http://collector:4318")])
            .unwrap()
            .unwrap();
        assert_eq!(got.endpoint, "http://collector:4318/v1/traces");
        let got = config(&[(ENDPOINT_VAR, "https://otel.example/base/")])
            .unwrap()
            .unwrap();
        assert_eq!(got.endpoint, "https://otel.example/base/v1/traces");
        assert_eq!(got.service_name, "oxydra");
        assert_eq!(got.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn the_traces_endpoint_is_used_as_it_is_and_first() {
        let got = config(&[
            (ENDPOINT_VAR, "http://base:4318"),
            (TRACES_ENDPOINT_VAR, "http://traces:9999/custom"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(got.endpoint, "http://traces:9999/custom");
    }

    #[test]
    fn a_bad_endpoint_names_its_variable() {
        for (var, value) in [
            (ENDPOINT_VAR, "not a url"),
            (ENDPOINT_VAR, "localhost:4318"),
            (TRACES_ENDPOINT_VAR, "ftp://collector/v1/traces"),
            (TRACES_ENDPOINT_VAR, "http://"),
        ] {
            let error = config(&[(var, value)]).unwrap_err();
            assert!(
                matches!(&error, OtelError::Endpoint { var: named, .. } if *named == var),
                "{value}: {error:?}"
            );
            assert!(error.to_string().starts_with(var), "{error}");
            assert!(error.to_string().contains(value), "{error}");
        }
    }

    #[test]
    fn service_name_timeout_and_protocol_are_read() {
        let got = config(&[
            (ENDPOINT_VAR, "http://c:4318"),
            (SERVICE_NAME_VAR, "my-agent"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(got.service_name, "my-agent");
        assert_eq!(got.timeout, Duration::from_millis(2500));
        // The traces-specific timeout wins.
        let got = config(&[
            (ENDPOINT_VAR, "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "300"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(got.timeout, Duration::from_millis(300));
    }

    #[test]
    fn unsupported_protocols_and_bad_timeouts_are_errors_naming_the_variable() {
        let error = config(&[
            (ENDPOINT_VAR, "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("OTEL_EXPORTER_OTLP_PROTOCOL: protocol `grpc`"),
            "{error}"
        );
        let error = config(&[
            (ENDPOINT_VAR, "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "5s"),
        ])
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT:"),
            "{error}"
        );
    }

    #[test]
    fn the_sdk_can_be_switched_off() {
        assert!(
            config(&[(ENDPOINT_VAR, "http://c:4318"), (SDK_DISABLED_VAR, "TRUE")])
                .unwrap()
                .is_none()
        );
        assert!(
            config(&[(ENDPOINT_VAR, "http://c:4318"), (SDK_DISABLED_VAR, "false")])
                .unwrap()
                .is_some()
        );
    }
}
