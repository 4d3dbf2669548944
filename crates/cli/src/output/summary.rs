//! The closing line of a text run: turns, tokens and cost.

use oxydra::types::Usage;

/// The closing line: `3 turns · 1,234 tokens (1,000 in, 234 out) · $0.0312 · session ses_…`;
/// `cost unknown` for a model whose price is not known (`cost` is `None`).
pub fn summary_line(turns: usize, usage: &Usage, cost: Option<f64>, session: &str) -> String {
    let plural = if turns == 1 { "" } else { "s" };
    let cost = cost.map_or_else(
        || "cost unknown".to_owned(),
        |cost| format!("${}", dollars(cost)),
    );
    format!(
        "— {turns} turn{plural} · {} tokens ({} in, {} out) · {cost} · session {session}",
        usage.total_tokens(),
        usage.input_tokens,
        usage.output_tokens
    )
}

/// A cost for people: four decimals, six below a cent so that a small cost is not
/// shown as nothing (`0.000081`, never `0.0000` or `0.00008099999999999999`).
pub fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.01 {
        format!("{:.6}", super::round_cost(cost))
    } else {
        format!("{cost:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_costs_print_rounded_but_not_as_nothing() {
        assert_eq!(dollars(0.000_080_999_999_999_999_99), "0.000081");
        assert_eq!(dollars(0.0), "0.0000");
        assert_eq!(dollars(0.5), "0.5000");
        assert_eq!(dollars(0.123_456_7), "0.1235");
    }
}
