//! A webhook's URL is its credential: whoever has it can post. Slack's, Discord's and
//! Teams' current formats are gitleaks rules; a webhook URL of any other service, or
//! an older format (Teams' `outlook.office.com/webhook/…@…/IncomingWebhook/…`,
//! Mattermost's `/hooks/<id>`), is found by its shape: the host or a path segment says
//! `hook` (`hooks.example.com`, `/webhooks/`, `/webhookb2/`, `/IncomingWebhook/`), and
//! a later segment looks random. From that segment to the end of the path is the
//! secret; the host and the path's words before it stay readable.

use std::ops::Range;

use crate::shannon::shannon_entropy;
use crate::word_shape::is_words;

/// The shortest segment that can be a webhook's secret part.
const MIN_SECRET_SEGMENT: usize = 16;
/// The least entropy of such a segment, in bits a byte (a UUID has ~3.5, a 32-digit
/// hex ~3.8; `aaaaaaaaaaaaaaaaaaaa` 0).
const MIN_SEGMENT_ENTROPY: f64 = 3.0;

/// The secret part of a URL with `host` and `path` (from its first `/`, without query
/// or fragment), as a range of `path`: from the first random-looking segment after
/// the word `hook` (in the host, or in an earlier segment) to the end of the path, less
/// trailing punctuation. `None` when the URL names no hook or holds no such segment.
pub(crate) fn secret_in_path(host: &str, path: &str) -> Option<Range<usize>> {
    let mut after_hook = says_hook(host);
    let mut offset = 0;
    for segment in path.split('/') {
        let start = offset;
        offset += segment.len() + 1;
        if segment.is_empty() {
            continue;
        }
        if !after_hook {
            after_hook = says_hook(segment);
            continue;
        }
        if looks_random(segment) {
            let end = path.trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '>', '!']);
            return (start < end.len()).then_some(start..end.len());
        }
    }
    None
}

fn says_hook(text: &str) -> bool {
    text.as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"hook"))
}

/// A segment of 16 or more characters with a letter and a digit, spread enough, not
/// made of words (`7bcd7b4c-…@72f988bf-…`, a 32-digit hex, a token), as against
/// `github-events`, `v1`, `12345`.
fn looks_random(segment: &str) -> bool {
    segment.len() >= MIN_SECRET_SEGMENT
        && segment.bytes().any(|b| b.is_ascii_digit())
        && segment.bytes().any(|b| b.is_ascii_alphabetic())
        && shannon_entropy(segment) >= MIN_SEGMENT_ENTROPY
        && !is_words(segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(url: &str) -> Option<&str> {
        let rest = url.split_once("://")?.1;
        let slash = rest.find('/')?;
        let (host, path) = rest.split_at(slash);
        secret_in_path(host, path).map(|r| &path[r])
    }

    #[test]
    fn the_random_tail_of_a_hook_url_is_the_secret() {
        assert_eq!(
            secret(
                "https://outlook.office.com/webhook/7bcd7b4c-5f8b-4a6c-8d3e-4c2b1a0f9e8d@72f988bf-86f1-41af-91ab-2d7cd011db47/IncomingWebhook/9f8e7d6c5b4a39281706f5e4d3c2b1a0/1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
            ),
            Some(
                "7bcd7b4c-5f8b-4a6c-8d3e-4c2b1a0f9e8d@72f988bf-86f1-41af-91ab-2d7cd011db47/IncomingWebhook/9f8e7d6c5b4a39281706f5e4d3c2b1a0/1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
            )
        );
        assert_eq!(
            secret("https://chat.example.com/hooks/xq3z8k1m5n7p9r2t4v6w8y0a1b."),
            Some("xq3z8k1m5n7p9r2t4v6w8y0a1b")
        );
        assert_eq!(
            secret("https://hooks.example.net/services/abc/Zx9qL2mN8vB4kR7tY1wE"),
            Some("Zx9qL2mN8vB4kR7tY1wE")
        );
    }

    #[test]
    fn hook_urls_without_a_secret_and_other_urls_stay() {
        for url in [
            "https://example.com/webhooks/github",
            "https://api.github.com/repos/o/r/hooks/12345678",
            "https://docs.example.com/guides/webhook-security-best-practices",
            "https://ci.example.com/github-webhook/",
            "https://example.com/api/v1/Zx9qL2mN8vB4kR7tY1wE",
            "https://example.com/hooks/aaaaaaaaaaaaaaaaaaaaaaaa1",
        ] {
            assert_eq!(secret(url), None, "{url}");
        }
    }
}
