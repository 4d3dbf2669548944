//! `[pricing."MODEL"]`: prices of models the built-in table does not know (local
//! models, router names), so that a cost budget can be enforced for them.

use std::collections::BTreeMap;

use oxydra::provider::{ModelPrice, PricingTable};

/// Prices by model name (a name also prices its dated or tagged variants): the
/// provider crate's own [`ModelPrice`] is the table's format (the cache rates default
/// to the input price).
pub type Prices = BTreeMap<String, ModelPrice>;

/// The built-in table with the configured prices added (they win over built-in ones).
pub fn table(prices: &Prices) -> PricingTable {
    let mut table = PricingTable::builtin();
    for (model, price) in prices {
        table.insert(model.clone(), *price);
    }
    table
}

/// Checks every price is a finite, non-negative number: `Err((key, message))`.
pub fn validate(prices: &Prices) -> Result<(), (String, String)> {
    for (model, price) in prices {
        let rates = [
            ("input_per_mtok", price.input_per_mtok),
            ("output_per_mtok", price.output_per_mtok),
            ("cached_input_per_mtok", price.cached_input_per_mtok),
            ("cache_write_per_mtok", price.cache_write_per_mtok),
        ];
        for (name, value) in rates {
            if !(value.is_finite() && value >= 0.0) {
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
    use std::path::Path;

    use super::*;

    fn entry(input: f64, output: f64) -> ModelPrice {
        ModelPrice::new(input, output, input)
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
    fn the_table_round_trips_through_model_price() {
        let parsed: Prices = toml::from_str(
            "[\"m\"]\ninput_per_mtok = 2.0\noutput_per_mtok = 8.0\ncached_input_per_mtok = 0.2\n\
             cache_write_per_mtok = 2.5\n[plain]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n",
        )
        .unwrap();
        assert_eq!(
            parsed["m"],
            ModelPrice::new(2.0, 8.0, 0.2).with_cache_write(2.5)
        );
        // The cache rates default to the input price.
        assert_eq!(parsed["plain"], entry(1.0, 1.0));
        let printed = toml::to_string(&parsed).unwrap();
        assert_eq!(toml::from_str::<Prices>(&printed).unwrap(), parsed);
    }

    #[test]
    fn a_bad_key_or_value_names_the_key() {
        let parse_err = |text: &str| {
            crate::parse(Path::new("/cfg/oxydra.toml"), text)
                .unwrap_err()
                .to_string()
        };
        let unknown =
            parse_err("[pricing.m]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\ncache = 1\n");
        assert!(
            unknown.contains("unknown key `cache` in [pricing.m]"),
            "{unknown}"
        );
        assert!(unknown.contains("at line 4"), "{unknown}");
        let missing = parse_err("[pricing.m]\ninput_per_mtok = 1.0\n");
        assert!(missing.contains("output_per_mtok"), "{missing}");
        let mistyped = parse_err("[pricing.m]\ninput_per_mtok = \"1\"\noutput_per_mtok = 1.0\n");
        assert!(mistyped.contains("pricing.m.input_per_mtok"), "{mistyped}");
        let negative = parse_err(
            "[pricing.m]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\ncache_write_per_mtok = -1.0\n",
        );
        assert!(
            negative.contains("pricing.\"m\".cache_write_per_mtok"),
            "{negative}"
        );
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
