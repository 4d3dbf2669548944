//! How the next token is picked: temperature, top-k, top-p, min-p, a repetition
//! penalty over the last tokens, a cap on output tokens and an optional seed.
//!
//! Each setting comes from, in order: the configuration (`[provider.sampling]`), the
//! model's own recommendation in its GGUF (`general.sampling.*`, the keys llama.cpp
//! reads), and llama.cpp server's defaults (`common_params_sampling`: temperature
//! 0.8, top-k 40, top-p 0.95, min-p 0.05, last 64 tokens). The repetition penalty
//! is Ollama's 1.1 rather than llama.cpp's 1.0 (off): small models loop without it.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;

use crate::error::LocalError;

/// llama.cpp server's default temperature.
pub const DEFAULT_TEMPERATURE: f32 = 0.8;
/// llama.cpp server's default top-k.
pub const DEFAULT_TOP_K: i32 = 40;
/// llama.cpp server's default top-p.
pub const DEFAULT_TOP_P: f32 = 0.95;
/// llama.cpp server's default min-p.
pub const DEFAULT_MIN_P: f32 = 0.05;
/// Ollama's default repetition penalty (llama.cpp's, 1.0, turns it off).
pub const DEFAULT_REPEAT_PENALTY: f32 = 1.1;
/// The tokens the repetition penalty looks back over (llama.cpp and Ollama).
pub const DEFAULT_REPEAT_LAST_N: i32 = 64;
/// The most tokens one answer of a local model may have, unless the request or the
/// configuration says otherwise (the provider crate's [`DEFAULT_LOCAL_MAX_TOKENS`]).
///
/// [`DEFAULT_LOCAL_MAX_TOKENS`]: oxydra_provider::DEFAULT_LOCAL_MAX_TOKENS
pub const DEFAULT_MAX_TOKENS: u32 = oxydra_provider::DEFAULT_LOCAL_MAX_TOKENS;

/// The temperature of a small model (under
/// [`SMALL_MODEL_PARAMETERS`](crate::SMALL_MODEL_PARAMETERS)) whose configuration and
/// GGUF set none: SmolLM2's model card samples at 0.2. At llama.cpp's 0.8 a 135M
/// model paraphrases what it read ("a lighter shade of tan" for "teal").
pub const SMALL_MODEL_TEMPERATURE: f32 = 0.2;
/// The top-p of a small model whose configuration and GGUF set none (SmolLM2's
/// model card).
pub const SMALL_MODEL_TOP_P: f32 = 0.9;

pub use oxydra_provider::SamplingOverrides;

/// What the local provider does with [`SamplingOverrides`] (the type is the provider
/// crate's, the file format of `[provider.sampling]`): a small model's defaults, the
/// GGUF's recommendation, and the settings resolved and checked.
pub trait LocalSampling: Sized {
    /// The defaults of a small model: [`SMALL_MODEL_TEMPERATURE`] and
    /// [`SMALL_MODEL_TOP_P`], the rest unset.
    fn small_model() -> Self;

    /// Every setting, the defaults filling what is not set; an out-of-range value is
    /// an error naming its key (llama.cpp would abort on some of them).
    fn resolve(self) -> Result<Sampling, LocalError>;

    /// The recommendation in a model's GGUF metadata (`general.sampling.temp`,
    /// `top_k`, `top_p`, `min_p`, `penalty_repeat`, `penalty_last_n`); keys that are
    /// missing or unreadable are left unset.
    fn from_model(model: &LlamaModel) -> Self;
}

impl LocalSampling for SamplingOverrides {
    fn small_model() -> Self {
        Self {
            temperature: Some(SMALL_MODEL_TEMPERATURE),
            top_p: Some(SMALL_MODEL_TOP_P),
            ..Self::default()
        }
    }

    fn resolve(self) -> Result<Sampling, LocalError> {
        let sampling = Sampling {
            temperature: self.temperature.unwrap_or(DEFAULT_TEMPERATURE),
            top_k: self.top_k.unwrap_or(DEFAULT_TOP_K),
            top_p: self.top_p.unwrap_or(DEFAULT_TOP_P),
            min_p: self.min_p.unwrap_or(DEFAULT_MIN_P),
            repeat_penalty: self.repeat_penalty.unwrap_or(DEFAULT_REPEAT_PENALTY),
            repeat_last_n: self.repeat_last_n.unwrap_or(DEFAULT_REPEAT_LAST_N),
            max_tokens: self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            seed: self.seed,
        };
        sampling.check()?;
        Ok(sampling)
    }

    fn from_model(model: &LlamaModel) -> Self {
        let read = |key: &str| model.meta_val_str(&format!("general.sampling.{key}")).ok();
        let float = |key: &str| read(key).and_then(|v| v.trim().parse::<f32>().ok());
        let int = |key: &str| read(key).and_then(|v| v.trim().parse::<i32>().ok());
        Self {
            temperature: float("temp"),
            top_k: int("top_k"),
            top_p: float("top_p"),
            min_p: float("min_p"),
            repeat_penalty: float("penalty_repeat"),
            repeat_last_n: int("penalty_last_n"),
            max_tokens: None,
            seed: None,
        }
    }
}

/// The sampling settings a local model decodes with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// Temperature; `0`: greedy.
    pub temperature: f32,
    /// Top-k; `0` or less: off.
    pub top_k: i32,
    /// Top-p (nucleus); `1`: off.
    pub top_p: f32,
    /// Min-p; `0`: off.
    pub min_p: f32,
    /// Repetition penalty; `1`: off.
    pub repeat_penalty: f32,
    /// The tokens the repetition penalty looks back over; `0`: off.
    pub repeat_last_n: i32,
    /// The most output tokens per answer (a request's own `max_tokens` wins).
    pub max_tokens: u32,
    /// The random seed; `None`: a new one for each answer.
    pub seed: Option<u32>,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            temperature: DEFAULT_TEMPERATURE,
            top_k: DEFAULT_TOP_K,
            top_p: DEFAULT_TOP_P,
            min_p: DEFAULT_MIN_P,
            repeat_penalty: DEFAULT_REPEAT_PENALTY,
            repeat_last_n: DEFAULT_REPEAT_LAST_N,
            max_tokens: DEFAULT_MAX_TOKENS,
            seed: None,
        }
    }
}

impl Sampling {
    fn check(&self) -> Result<(), LocalError> {
        let invalid = |key: &'static str, message: String| LocalError::Sampling { key, message };
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(invalid(
                "temperature",
                format!("expected 0 or more, found {}", self.temperature),
            ));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(invalid(
                "top_p",
                format!("expected above 0 and at most 1, found {}", self.top_p),
            ));
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return Err(invalid(
                "min_p",
                format!("expected 0 to 1, found {}", self.min_p),
            ));
        }
        if !(self.repeat_penalty.is_finite() && self.repeat_penalty > 0.0) {
            return Err(invalid(
                "repeat_penalty",
                format!("expected above 0 (1: off), found {}", self.repeat_penalty),
            ));
        }
        if self.repeat_last_n < 0 {
            return Err(invalid(
                "repeat_last_n",
                format!("expected 0 or more, found {}", self.repeat_last_n),
            ));
        }
        if self.max_tokens == 0 {
            return Err(invalid("max_tokens", "expected 1 or more, found 0".into()));
        }
        Ok(())
    }

    /// The sampler chain after any grammar: the penalty, then top-k, top-p, min-p
    /// and temperature before the random pick (llama.cpp's order); greedy at
    /// temperature 0.
    pub fn samplers(&self, model: &LlamaModel, seed: u32) -> Vec<LlamaSampler> {
        let mut chain = Vec::new();
        if self.repeat_last_n > 0 && (self.repeat_penalty - 1.0).abs() > f32::EPSILON {
            chain.push(LlamaSampler::penalties(
                model.n_vocab(),
                self.repeat_last_n,
                self.repeat_penalty,
                0.0,
                0.0,
            ));
        }
        if self.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
            return chain;
        }
        if self.top_k > 0 {
            chain.push(LlamaSampler::top_k(self.top_k));
        }
        chain.push(LlamaSampler::top_p(self.top_p, 1));
        chain.push(LlamaSampler::min_p(self.min_p, 1));
        chain.push(LlamaSampler::temp(self.temperature));
        chain.push(LlamaSampler::dist(self.seed.unwrap_or(seed)));
        chain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration over the model is `SamplingOverrides::or`'s, tested beside it
    /// in the provider crate; here, what is still unset after it takes the defaults.
    #[test]
    fn what_is_set_is_kept_and_the_defaults_fill_the_rest() {
        let set = SamplingOverrides {
            temperature: Some(0.2),
            top_k: Some(20),
            ..SamplingOverrides::default()
        };
        let sampling = set.resolve().unwrap();
        assert_eq!(sampling.temperature, 0.2);
        assert_eq!(sampling.top_k, 20);
        assert_eq!(sampling.top_p, DEFAULT_TOP_P);
        assert_eq!(sampling.repeat_penalty, DEFAULT_REPEAT_PENALTY);
        assert_eq!(sampling.max_tokens, DEFAULT_MAX_TOKENS);
        assert_eq!(sampling.seed, None);
    }

    #[test]
    fn values_llama_cpp_would_abort_on_are_refused_with_their_key() {
        for (overrides, key) in [
            (
                SamplingOverrides {
                    repeat_penalty: Some(0.0),
                    ..SamplingOverrides::default()
                },
                "repeat_penalty",
            ),
            (
                SamplingOverrides {
                    top_p: Some(1.5),
                    ..SamplingOverrides::default()
                },
                "top_p",
            ),
            (
                SamplingOverrides {
                    temperature: Some(f32::NAN),
                    ..SamplingOverrides::default()
                },
                "temperature",
            ),
            (
                SamplingOverrides {
                    max_tokens: Some(0),
                    ..SamplingOverrides::default()
                },
                "max_tokens",
            ),
            (
                SamplingOverrides {
                    repeat_last_n: Some(-1),
                    ..SamplingOverrides::default()
                },
                "repeat_last_n",
            ),
        ] {
            let error = overrides.resolve().unwrap_err();
            assert!(error.to_string().contains(key), "{error}");
        }
    }
}
