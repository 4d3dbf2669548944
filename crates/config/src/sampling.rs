//! `[provider.sampling]`: how the local model picks its tokens (docs/configuration.md).
//! Each key left out comes from the model's GGUF recommendation, else from llama.cpp
//! server's defaults. Only the local provider uses it.

use serde::{Deserialize, Serialize};

/// `[provider.sampling]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingSection {
    /// Temperature; `0`: greedy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Top-k; `0`: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Top-p; `1`: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Min-p; `0`: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f64>,
    /// Repetition penalty; `1`: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f64>,
    /// The tokens the repetition penalty looks back over; `0`: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_last_n: Option<u32>,
    /// The most output tokens per answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The random seed: the same seed, prompt and model give the same answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_parses_and_unknown_ones_are_refused() {
        let section: SamplingSection = toml::from_str(
            "temperature = 0.2\ntop_k = 20\ntop_p = 0.9\nmin_p = 0.1\nrepeat_penalty = 1.2\n\
             repeat_last_n = 128\nmax_tokens = 300\nseed = 7\n",
        )
        .unwrap();
        assert_eq!(section.top_k, Some(20));
        assert_eq!(section.seed, Some(7));
        assert_eq!(section.temperature, Some(0.2));
        let error = toml::from_str::<SamplingSection>("temp = 0.2\n").unwrap_err();
        assert!(error.to_string().contains("temp"), "{error}");
    }
}
