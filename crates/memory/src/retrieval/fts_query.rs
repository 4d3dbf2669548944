//! Turning a user's query into a safe FTS5 `MATCH` expression.

/// At most this many terms go into one `MATCH`.
const MAX_TERMS: usize = 32;

/// English words so common that matching them ranks nothing but costs a scan of most of
/// the index; left out of a query unless it has no other words.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "does", "for", "from", "has",
    "have", "how", "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "so", "that",
    "the", "their", "then", "there", "these", "this", "to", "was", "we", "were", "what", "when",
    "where", "which", "who", "why", "will", "with", "you", "your",
];

/// The query's distinct lowercase words, stopwords dropped unless nothing else is left,
/// at most 32.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if !word.is_empty() && !words.contains(&word) {
            words.push(word);
        }
    }
    if words.iter().any(|w| !STOPWORDS.contains(&w.as_str())) {
        words.retain(|w| !STOPWORDS.contains(&w.as_str()));
    }
    words.truncate(MAX_TERMS);
    words
}

/// `terms` each quoted (so FTS5 operators and punctuation mean nothing) and joined with
/// `OR`; BM25 ranks chunks matching more of them higher. `None` for no terms.
pub fn terms_expression(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

/// The FTS5 `MATCH` expression for a user's query: its [`query_terms`], quoted and
/// joined with `OR`. `None` when the query has no words, e.g. only punctuation.
pub fn match_expression(query: &str) -> Option<String> {
    terms_expression(&query_terms(query))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_words_and_drops_operators() {
        assert_eq!(
            match_expression("deploy AND \"cluster\"* NEAR(x)").unwrap(),
            "\"deploy\" OR \"cluster\" OR \"near\" OR \"x\""
        );
        assert_eq!(match_expression("a a A").unwrap(), "\"a\"");
        assert_eq!(match_expression("how is the ÉTÉ?").unwrap(), "\"été\"");
    }

    #[test]
    fn punctuation_only_is_none() {
        assert_eq!(match_expression("?!*\"()-:^"), None);
        assert_eq!(match_expression(""), None);
    }
}
