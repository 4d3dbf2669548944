//! How a local model picks its tokens, as settings each of which may be unset: the
//! `[provider.sampling]` table of an `oxydra.toml`. The type lives here, below the
//! local provider (`oxydra-local`, which resolves and applies it), so that a reader of
//! the file format needs no llama.cpp.

use serde::{Deserialize, Serialize};

/// Sampling settings, each `None` where it is not set: what the configuration
/// (`[provider.sampling]`) or a GGUF's `general.sampling.*` metadata says. Read from a
/// file, an unknown key is an error naming it.
///
/// ```
/// use oxydra_provider::SamplingOverrides;
/// let sampling: SamplingOverrides = serde_json::from_str(r#"{"temperature": 0.2, "top_k": 20}"#).unwrap();
/// assert_eq!(sampling.temperature, Some(0.2));
/// assert!(serde_json::from_str::<SamplingOverrides>(r#"{"temp": 0.2}"#).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingOverrides {
    /// Temperature; `0`: greedy.
    #[serde(with = "short_float", skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Top-k; `0` or less: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i32>,
    /// Top-p (nucleus); `1`: off.
    #[serde(with = "short_float", skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Min-p; `0`: off.
    #[serde(with = "short_float", skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f32>,
    /// Repetition penalty; `1`: off.
    #[serde(with = "short_float", skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f32>,
    /// The tokens the repetition penalty looks back over; `0`: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_last_n: Option<i32>,
    /// The most output tokens per answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The random seed; `None`: a new one for each answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
}

impl SamplingOverrides {
    /// Settings where `self` has none taken from `fallback`.
    pub fn or(self, fallback: Self) -> Self {
        Self {
            temperature: self.temperature.or(fallback.temperature),
            top_k: self.top_k.or(fallback.top_k),
            top_p: self.top_p.or(fallback.top_p),
            min_p: self.min_p.or(fallback.min_p),
            repeat_penalty: self.repeat_penalty.or(fallback.repeat_penalty),
            repeat_last_n: self.repeat_last_n.or(fallback.repeat_last_n),
            max_tokens: self.max_tokens.or(fallback.max_tokens),
            seed: self.seed.or(fallback.seed),
        }
    }
}

/// An `f32` written as its shortest decimal (`0.2`, not `0.20000000298023224`), so a
/// setting prints back as it was written.
mod short_float {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<f32>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => {
                let wide = value
                    .to_string()
                    .parse::<f64>()
                    .unwrap_or(f64::from(*value));
                serializer.serialize_some(&wide)
            }
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<f32>, D::Error> {
        Option::<f32>::deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_round_trips_and_prints_as_written() {
        let text = r#"{"temperature":0.2,"top_k":20,"top_p":0.9,"min_p":0.1,"repeat_penalty":1.2,"repeat_last_n":128,"max_tokens":300,"seed":7}"#;
        let sampling: SamplingOverrides = serde_json::from_str(text).unwrap();
        assert_eq!(sampling.top_k, Some(20));
        assert_eq!(sampling.seed, Some(7));
        assert_eq!(serde_json::to_string(&sampling).unwrap(), text);
        assert_eq!(
            serde_json::to_string(&SamplingOverrides::default()).unwrap(),
            "{}"
        );
    }

    #[test]
    fn a_bad_key_or_value_is_named() {
        let unknown = serde_json::from_str::<SamplingOverrides>(r#"{"temp": 0.2}"#).unwrap_err();
        assert!(unknown.to_string().contains("`temp`"), "{unknown}");
        let mistyped = serde_json::from_str::<SamplingOverrides>(r#"{"seed": -1}"#).unwrap_err();
        assert!(mistyped.to_string().contains("u32"), "{mistyped}");
    }

    #[test]
    fn a_setting_falls_back_only_where_unset() {
        let mine = SamplingOverrides {
            temperature: Some(0.2),
            ..SamplingOverrides::default()
        };
        let model = SamplingOverrides {
            temperature: Some(0.6),
            top_k: Some(20),
            ..SamplingOverrides::default()
        };
        let both = mine.or(model);
        // The configuration wins over the model; what neither sets stays unset (the
        // provider's defaults fill it).
        assert_eq!((both.temperature, both.top_k), (Some(0.2), Some(20)));
        assert_eq!(
            SamplingOverrides {
                temperature: None,
                top_k: None,
                ..both
            },
            SamplingOverrides::default()
        );
    }
}
