//! The closing line of a text run: turns, tokens, cost and the model that answered.

use oxydra::types::Usage;

use crate::terminal_text::one_line;

/// Which models answered a task's calls: the one asked, and the fallback models that
/// took a call it failed (`model_fallback` events).
#[derive(Debug, Default)]
pub struct Answered {
    /// The model asked (the run's).
    pub asked: Option<String>,
    /// The fallback model answering the current call, if one took it.
    pub current: Option<String>,
    /// Every fallback model that answered a call, in order, once each.
    pub fallbacks: Vec<String>,
}

impl Answered {
    /// A new call: the model asked answers it, unless a fallback takes it.
    pub fn new_call(&mut self) {
        self.current = None;
    }

    /// A fallback model took the current call.
    pub fn fell_back(&mut self, to: &str) {
        self.current = Some(to.to_owned());
        if !self.fallbacks.iter().any(|model| model == to) {
            self.fallbacks.push(to.to_owned());
        }
    }

    /// A new task (in `chat`).
    pub fn reset(&mut self) {
        self.current = None;
        self.fallbacks.clear();
    }

    /// What the closing line says: `model gpt-4o`; `model claude-x (fallback; gpt-4o
    /// failed)` when a fallback wrote the answer; `model gpt-4o (fallback claude-x
    /// answered a call)` when one answered earlier. `None` with no model known.
    pub fn shown(&self) -> Option<String> {
        // A local model by its file name, as the header shows it.
        let asked = self
            .asked
            .as_deref()
            .map(|model| one_line(&super::run_header::short_model(model)).into_owned());
        let fallbacks = self
            .fallbacks
            .iter()
            .map(|model| one_line(model).into_owned())
            .collect::<Vec<_>>()
            .join(", ");
        Some(match (&self.current, asked) {
            (Some(last), asked) => format!(
                "model {} (fallback; {} failed)",
                one_line(last),
                asked.as_deref().unwrap_or("the model asked")
            ),
            (None, Some(asked)) if fallbacks.is_empty() => format!("model {asked}"),
            (None, Some(asked)) => format!("model {asked} (fallback {fallbacks} answered a call)"),
            (None, None) if fallbacks.is_empty() => return None,
            (None, None) => format!("fallback {fallbacks} answered a call"),
        })
    }
}

/// The closing line: `3 turns · 1,234 tokens (1,000 in, 234 out) · $0.0312 · model gpt-4o
/// · session ses_…`; `cost unknown` for a model whose price is not known (`cost` is
/// `None`); no model part when `model` is `None`.
pub fn summary_line(
    turns: usize,
    usage: &Usage,
    cost: Option<f64>,
    model: Option<&str>,
    session: &str,
) -> String {
    let plural = if turns == 1 { "" } else { "s" };
    let cost = cost.map_or_else(
        || "cost unknown".to_owned(),
        |cost| format!("${}", dollars(cost)),
    );
    let model = model.map_or_else(String::new, |model| format!(" · {model}"));
    format!(
        "— {turns} turn{plural} · {} tokens ({} in, {} out) · {cost}{model} · session {session}",
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

    #[test]
    fn the_closing_line_names_the_model_that_answered() {
        let mut answered = Answered {
            asked: Some("gpt-4o".into()),
            ..Answered::default()
        };
        assert_eq!(answered.shown().unwrap(), "model gpt-4o");
        answered.new_call();
        answered.fell_back("claude-x");
        assert_eq!(
            answered.shown().unwrap(),
            "model claude-x (fallback; gpt-4o failed)"
        );
        answered.new_call();
        assert_eq!(
            answered.shown().unwrap(),
            "model gpt-4o (fallback claude-x answered a call)"
        );
        // A local model file by its name, as in the header.
        let local = Answered {
            asked: Some("/home/me/models/qwen.gguf".into()),
            ..Answered::default()
        };
        assert_eq!(local.shown().unwrap(), "model qwen.gguf");
        // A model name cannot restyle the terminal.
        answered.reset();
        answered.fell_back("x\u{1b}[2Jy");
        assert!(!answered.shown().unwrap().contains('\u{1b}'));
        let line = summary_line(1, &Usage::new(3, 2, 0), Some(0.0), Some("model m"), "ses_1");
        assert!(
            line.ends_with("· $0.0000 · model m · session ses_1"),
            "{line}"
        );
    }
}
