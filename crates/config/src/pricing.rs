//! `[pricing."MODEL"]`: prices of models the built-in table does not know (local
//! models, router names), so that a cost budget can be enforced for them.

use std::collections::BTreeMap;

use oxydra::provider::{ModelPrice, PricingTable};
use serde::{Deserialize, Serialize};

/// The prices of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    /// Input tokens.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
    /// Input tokens served from the provider's prompt cache (default the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    /// Input tokens written to the provider's prompt cache (default the input price;
    /// Anthropic charges 1.25 times it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
}

/// Prices by model name (a name also prices its dated or tagged variants).
pub type Prices = BTreeMap<String, PriceEntry>;

/// The built-in table with the configured prices added (they win over built-in ones).
pub fn table(prices: &Prices) -> PricingTable {
    let mut table = PricingTable::builtin();
    for (model, entry) in prices {
        let cached = entry.cached_input_per_mtok.unwrap_or(entry.input_per_mtok);
        let written = entry.cache_write_per_mtok.unwrap_or(entry.input_per_mtok);
        table.insert(
            model.clone(),
            ModelPrice::new(entry.input_per_mtok, entry.output_per_mtok, cached)
                .with_cache_write(written),
        );
    }
    table
}

/// Checks every price is a finite, non-negative number: `Err((key, message))`.
pub fn validate(prices: &Prices) -> Result<(), (String, String)> {
    for (model, entry) in prices {
        let rates = [
            ("input_per_mtok", Some(entry.input_per_mtok)),
            ("output_per_mtok", Some(entry.output_per_mtok)),
            ("cached_input_per_mtok", entry.cached_input_per_mtok),
            ("cache_write_per_mtok", entry.cache_write_per_mtok),
        ];
        for (name, value) in rates {
            if let Some(value) = value
                && !(value.is_finite() && value >= 0.0)
            {
                return Err((
                    format!("pricing.\"{model}\".{name}"),
                    format!(
                        "expected a price in US dollars per million tokens (0 or more), found {value}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The error when a cost budget is asked for a model whose price is unknown.
pub fn unknown_price_message(model: &str, kind: super::ProviderKind) -> String {
    let why = if kind == super::ProviderKind::Local {
        "a local model has no price, so a cost budget cannot be enforced; bound the run with \
         --max-turns or --turn-timeout instead, or, to count a cost anyway, give it a price"
            .to_owned()
    } else {
        format!(
            "the price of model `{model}` is unknown, so a cost budget cannot be enforced; give \
             it"
        )
    };
    format!(
        "{why} in your configuration file: [pricing.\"{model}\"] input_per_mtok = …, \
         output_per_mtok = … (US dollars per million tokens; optional cached_input_per_mtok, \
         cache_write_per_mtok)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(input: f64, output: f64) -> PriceEntry {
        PriceEntry {
            input_per_mtok: input,
            output_per_mtok: output,
            cached_input_per_mtok: None,
            cache_write_per_mtok: None,
        }
    }

    #[test]
    fn configured_prices_extend_and_override_the_builtin_table() {
        let mut prices = Prices::new();
        prices.insert("llama3.2".into(), entry(1.0, 2.0));
        prices.insert("gpt-4o".into(), entry(100.0, 100.0));
        let table = table(&prices);
        let price = table.price("llama3.2:3b").unwrap();
        assert_eq!(price, ModelPrice::new(1.0, 2.0, 1.0));
        assert_eq!(table.price("gpt-4o").unwrap().input_per_mtok, 100.0);
        assert!(table.price("gpt-4o-mini").is_some());
        assert!(table.price("mistral").is_none());
    }

    #[test]
    fn cache_rates_are_configurable_and_default_to_the_input_price() {
        let mut prices = Prices::new();
        let mut cached = entry(2.0, 8.0);
        cached.cached_input_per_mtok = Some(0.2);
        cached.cache_write_per_mtok = Some(2.5);
        prices.insert("my-model".into(), cached);
        prices.insert("plain".into(), entry(1.0, 1.0));
        let table = table(&prices);
        let price = table.price("my-model").unwrap();
        assert_eq!(price, ModelPrice::new(2.0, 8.0, 0.2).with_cache_write(2.5));
        assert_eq!(table.price("plain").unwrap().cache_write_per_mtok, 1.0);
        let parsed: Prices = toml::from_str(
            "[\"m\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\ncache_write_per_mtok = 1.25\n",
        )
        .unwrap();
        assert_eq!(parsed["m"].cache_write_per_mtok, Some(1.25));
        prices.insert(
            "bad".into(),
            PriceEntry {
                cache_write_per_mtok: Some(-1.0),
                ..entry(1.0, 1.0)
            },
        );
        let (key, _) = validate(&prices).unwrap_err();
        assert_eq!(key, "pricing.\"bad\".cache_write_per_mtok");
    }

    #[test]
    fn negative_or_non_finite_prices_are_refused_naming_the_key() {
        let mut prices = Prices::new();
        prices.insert("m".into(), entry(-1.0, 2.0));
        let (key, _) = validate(&prices).unwrap_err();
        assert_eq!(key, "pricing.\"m\".input_per_mtok");
        prices.insert("m".into(), entry(1.0, f64::NAN));
        let (key, _) = validate(&prices).unwrap_err();
        assert_eq!(key, "pricing.\"m\".output_per_mtok");
        prices.insert("m".into(), entry(0.0, 0.0));
        assert!(validate(&prices).is_ok());
    }
}
