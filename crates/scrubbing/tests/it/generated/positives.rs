//! Positive cases: each format combined with many generated secret values.

use super::values::{Rng, SHAPES, secret};
use super::{Case, formats_config, formats_wire};

/// Formats that quote their values (so a value may contain blanks).
const QUOTED: &[&str] = &[
    "dotenv-quoted",
    "dotenv-single",
    "quoted",
    "k8s-env",
    "key-value",
    "name-value",
    "escaped",
    "table",
    "literal",
    "element",
    "appsettings",
    "attribute",
    "input-password",
    "input-hidden",
    "input-value-first",
];

/// Every format with every value shape, `per_format` cases each.
pub fn cases(per_format: usize) -> Vec<Case> {
    let mut rng = Rng::new(0x0c5d_1a7e);
    let mut out = Vec::new();
    for (family, name, url_safe, generate) in formats_config::formats()
        .into_iter()
        .chain(formats_wire::formats())
    {
        for i in 0..per_format {
            let shape = SHAPES[i % SHAPES.len()];
            let value = secret(&mut rng, shape, url_safe, QUOTED.contains(&name));
            out.push(generate(&mut rng, &value).case(family, name));
        }
    }
    out
}
