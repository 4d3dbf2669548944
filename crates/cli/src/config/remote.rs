//! Where a running `oxydra serve` is for `oxydra runs` and `oxydra approvals`:
//! `--server URL`, else `OXYDRA_SERVER`, else `http://127.0.0.1:8080`; its bearer
//! token `OXYDRA_TOKEN`, else `OXYDRA_SERVE_TOKEN` (the variable `serve` reads its
//! own from). The client itself is the library's (`oxydra::coordinator::client`);
//! here its failures become [`CliError::Api`] (the server answered) or
//! [`CliError::Server`] (it did not).

use oxydra::coordinator::CoordinatorError;
use oxydra::coordinator::client::Client;

use crate::error::CliError;

/// The server when neither `--server` nor `OXYDRA_SERVER` says.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";

/// The first of `names` set in the environment to a non-empty value.
fn env(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
}

/// The client of the server of `--server` (`flag`), `OXYDRA_SERVER` or the default,
/// with the token of `OXYDRA_TOKEN` / `OXYDRA_SERVE_TOKEN`.
pub fn server_client(flag: Option<&str>) -> Result<Client, CliError> {
    let text = flag
        .map(str::to_owned)
        .or_else(|| env(&["OXYDRA_SERVER"]))
        .unwrap_or_else(|| DEFAULT_SERVER.to_owned());
    Client::new(&text, env(&["OXYDRA_TOKEN", "OXYDRA_SERVE_TOKEN"])).map_err(|_| CliError::Flag {
        flag: "--server",
        message: format!(
            "expected the URL of an `oxydra serve`, like {DEFAULT_SERVER}, found `{text}`"
        ),
    })
}

/// The error of a client request as the CLI reports it: the server's status, code and
/// message (the field it named; for a 401, which variable holds the token), or that
/// the server gave no answer.
pub fn remote_error(error: CoordinatorError) -> CliError {
    let CoordinatorError::Client {
        server,
        status,
        code,
        mut message,
        field,
    } = error
    else {
        return CliError::Coordinator(error.to_string());
    };
    let Some(status) = status else {
        return CliError::Server { server, message };
    };
    if status == 401 {
        message.push_str(" (set OXYDRA_TOKEN to the token `oxydra serve` was started with)");
    }
    if let Some(field) = field {
        message = format!("{message} (field `{field}`)");
    }
    CliError::Api {
        server,
        status,
        code,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_must_be_an_http_url() {
        for bad in ["localhost:8080", "ftp://x", "", "http://"] {
            let error = server_client(Some(bad)).unwrap_err();
            assert_eq!(error.exit(), crate::exit_code::Exit::Usage, "{bad}");
        }
        let client = server_client(Some("http://127.0.0.1:9/")).unwrap();
        assert_eq!(client.base(), "http://127.0.0.1:9");
    }

    #[test]
    fn an_error_keeps_the_servers_code_and_field_and_no_answer_is_a_runtime_failure() {
        let answered = |status, field: Option<&str>| CoordinatorError::Client {
            server: "http://x".into(),
            status,
            code: "invalid_query".into(),
            message: "bad".into(),
            field: field.map(str::to_owned),
        };
        let error = remote_error(answered(Some(400), Some("since")));
        assert_eq!(error.kind(), "invalid_query");
        assert!(error.to_string().contains("field `since`"), "{error}");
        assert_eq!(error.exit(), crate::exit_code::Exit::Usage);
        let error = remote_error(answered(Some(401), None));
        assert!(error.to_string().contains("OXYDRA_TOKEN"), "{error}");
        let error = remote_error(answered(None, None));
        assert_eq!(error.exit(), crate::exit_code::Exit::Runtime);
        assert_eq!(error.kind(), "server");
    }
}
