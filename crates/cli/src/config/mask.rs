//! Keeping secrets out of printed configuration and logs.

use std::fmt;

use serde::{Serialize, Serializer};

/// A secret value (an API key): prints and serialises masked.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The real value, for the one place that needs it (the provider client).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&mask_secret(&self.0))
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&mask_secret(&self.0))
    }
}

/// Masks a secret: long values keep their first three and last four characters (enough
/// to tell keys apart), short ones are hidden entirely.
pub fn mask_secret(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() < 16 {
        return "****".to_owned();
    }
    let head: String = chars.iter().take(3).collect();
    let tail: String = chars.iter().skip(chars.len() - 4).collect();
    format!("{head}****{tail}")
}

/// Masks the password of a URL's user info (`https://user:pw@host` → `https://user:****@host`).
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = user_info
        .split_once(':')
        .map_or(user_info, |(user, _)| user);
    format!("{scheme}://{user}:****@{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print_in_full() {
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz123456";
        assert_eq!(mask_secret(key), "sk-****3456");
        assert_eq!(mask_secret("short"), "****");
        let secret = Secret::new(key);
        assert!(!format!("{secret:?}").contains("abcdefgh"));
        assert_eq!(serde_json::to_string(&secret).unwrap(), "\"sk-****3456\"");
        assert_eq!(secret.expose(), key);
    }

    #[test]
    fn url_passwords_are_masked() {
        assert_eq!(
            mask_url("https://me:hunter2@host:8080/v1"),
            "https://me:****@host:8080/v1"
        );
        assert_eq!(
            mask_url("http://localhost:11434/v1"),
            "http://localhost:11434/v1"
        );
    }
}
