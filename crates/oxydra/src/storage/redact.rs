//! A database URL as it may be shown: without the password of its user info or of a
//! `password=` parameter.

/// `url` with the password of its user info and any `password=` parameter replaced by
/// `***`; anything without `://` as it is.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => param.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords_and_paths_stay() {
        assert_eq!(
            redact_url("postgres://alice:s3cret@db.lan:5432/oxydra"),
            "postgres://alice:***@db.lan:5432/oxydra"
        );
        assert_eq!(
            redact_url("postgresql://db.lan/x?user=a&password=s3cret&sslmode=disable"),
            "postgresql://db.lan/x?user=a&password=***&sslmode=disable"
        );
        assert_eq!(redact_url("postgres://bob@h/db"), "postgres://bob@h/db");
        assert_eq!(redact_url("/tmp/o.db"), "/tmp/o.db");
    }

    #[test]
    fn a_password_holding_at_signs_and_a_query_is_still_hidden() {
        let shown = redact_url("postgres://u:p@ss@h/db?PASSWORD=x@y&a=b");
        assert_eq!(shown, "postgres://u:***@h/db?PASSWORD=***&a=b");
    }
}
