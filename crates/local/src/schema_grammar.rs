//! JSON Schema to GBNF: the rules a tool's arguments must follow, for llama.cpp's
//! grammar sampler.
//!
//! The grammar reads as llama.cpp's own converter writes it (the same whitespace
//! rule, primitives and object layout: required properties first in the order of
//! `properties`, then any of the optional ones in that order), so a model sees the
//! same constraints; it is ours so that the binary does not link llama.cpp's `common`
//! library, whose static initialisers compile three `std::regex` in every process.
//!
//! A schema is never refused: what the grammar cannot say exactly is loosened, and the
//! tool's own schema check (the executor's) still holds the call to the schema —
//! a `pattern` becomes any string, a `not` or `if` is left out, a negative bound lets
//! in any negative number, a `$ref` outside the document or to nothing is any value,
//! an unknown `type` any value. Bounds written as repeats (`minLength`, `maxItems`)
//! above [`MAX_REPEAT`] are dropped, since llama.cpp's grammar parser copies the item
//! once per repeat, and schemas nested deeper than [`MAX_DEPTH`] or needing more than
//! [`MAX_RULES`] rules take any value there: the grammar of a hostile schema stays
//! small.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::gbnf_text::{PRIMITIVES, literal, repetition, rule_name};
use crate::integer_range::integer_rule;

/// Deepest nesting of schemas followed; deeper ones take any value.
pub(crate) const MAX_DEPTH: usize = 32;
/// Most rules a grammar gets; past it a schema takes any value.
pub(crate) const MAX_RULES: usize = 2_048;
/// Largest count written as a repeat.
pub(crate) const MAX_REPEAT: u64 = 256;

/// A grammar being built from schemas: its rules by name.
#[derive(Debug, Default)]
pub(crate) struct SchemaGrammar {
    rules: BTreeMap<String, String>,
    /// The `$ref` rules being built with nothing read since they started (no `{` or
    /// `[` of an object or array in between): a reference back to one of them would
    /// be a rule that calls itself before reading a character.
    unguarded: Vec<String>,
}

/// Where a schema sits: the document its `$ref`s point into, and how deep it is.
#[derive(Clone, Copy)]
struct At<'a> {
    document: &'a Value,
    depth: usize,
}

impl SchemaGrammar {
    /// The rules as GBNF text, one per line.
    pub(crate) fn gbnf(&self) -> String {
        self.rules
            .iter()
            .map(|(name, body)| format!("{name} ::= {body}\n"))
            .collect()
    }

    /// Sets rule `name` to `body`, replacing any rule of that name.
    pub(crate) fn set(&mut self, name: &str, body: String) {
        self.rules.insert(name.to_owned(), body);
    }

    /// The name of a rule for `schema` (with `$ref`s into `schema` itself), named
    /// after `name`.
    pub(crate) fn schema_rule(&mut self, schema: &Value, name: &str) -> String {
        self.visit(
            schema,
            name,
            At {
                document: schema,
                depth: 0,
            },
        )
    }

    /// The name of a rule for the object with `properties` in this order, each
    /// required, and no others: `(key, rule of its value)`.
    pub(crate) fn fixed_object_rule(
        &mut self,
        name: &str,
        properties: &[(&str, String)],
    ) -> String {
        let mut body = "\"{\" space ".to_owned();
        for (index, (key, value_rule)) in properties.iter().enumerate() {
            if index > 0 {
                body.push_str(" \",\" space ");
            }
            let kv = self.key_value_rule(name, key, value_rule);
            body.push_str(&kv);
        }
        body.push_str(" space \"}\"");
        self.primitive("space");
        self.add(name, body)
    }

    /// The name of a rule whose body is the JSON text of `value`.
    pub(crate) fn constant_rule(&mut self, name: &str, value: &Value) -> String {
        let body = literal(&value.to_string());
        self.add(name, body)
    }

    /// Adds a rule named after `name` (made a valid rule name; numbered when another
    /// rule has the name) and returns its name.
    fn add(&mut self, name: &str, body: String) -> String {
        let base = rule_name(name);
        let mut candidate = base.clone();
        let mut number = 1;
        loop {
            match self.rules.get(&candidate) {
                None => {
                    self.rules.insert(candidate.clone(), body);
                    return candidate;
                }
                Some(existing) if *existing == body => return candidate,
                Some(_) => {
                    candidate = format!("{base}-{number}");
                    number += 1;
                }
            }
        }
    }

    /// Adds the primitive `name` and those it uses; returns its name.
    fn primitive(&mut self, name: &str) -> String {
        if !self.rules.contains_key(name)
            && let Some((_, body, uses)) = PRIMITIVES.iter().find(|(n, _, _)| *n == name)
        {
            self.rules.insert(name.to_owned(), (*body).to_owned());
            for used in *uses {
                self.primitive(used);
            }
        }
        name.to_owned()
    }

    fn visit(&mut self, schema: &Value, name: &str, at: At<'_>) -> String {
        if at.depth > MAX_DEPTH || self.rules.len() > MAX_RULES {
            return self.primitive("value");
        }
        let inner = At {
            depth: at.depth + 1,
            ..at
        };
        let Some(object) = schema.as_object() else {
            // `true`, `false` or not a schema: any value.
            return self.primitive("value");
        };
        if let Some(reference) = object.get("$ref") {
            return self.reference(reference, inner);
        }
        if let Some(alternatives) = object
            .get("oneOf")
            .or_else(|| object.get("anyOf"))
            .and_then(Value::as_array)
            .filter(|alternatives| !alternatives.is_empty())
        {
            return self.union(alternatives.iter(), name, inner);
        }
        if let Some(types) = object.get("type").and_then(Value::as_array) {
            // `{"type": ["string", "null"], …}` is one schema per type.
            let alternatives: Vec<Value> = types
                .iter()
                .map(|kind| {
                    let mut alternative = object.clone();
                    alternative.insert("type".into(), kind.clone());
                    Value::Object(alternative)
                })
                .collect();
            if !alternatives.is_empty() {
                return self.union(alternatives.iter(), name, inner);
            }
        }
        if let Some(value) = object.get("const") {
            return self.constant_rule(name, value);
        }
        if let Some(values) = object
            .get("enum")
            .and_then(Value::as_array)
            .filter(|values| !values.is_empty())
        {
            let body = values
                .iter()
                .map(|value| literal(&value.to_string()))
                .collect::<Vec<_>>()
                .join(" | ");
            return self.add(name, body);
        }
        let has_properties = object.contains_key("properties")
            || object
                .get("additionalProperties")
                .is_some_and(|additional| *additional != Value::Bool(true));
        match object.get("type").and_then(Value::as_str) {
            Some("object") if !has_properties && object.contains_key("allOf") => {
                self.guarded(|g| g.all_of(object, name, inner))
            }
            Some("object") => self.guarded(|g| g.object(object, name, inner)),
            Some("array") => self.guarded(|g| g.array(object, name, inner)),
            Some("string") => self.string(object, name),
            Some("integer") => self.integer(object, name),
            Some("number") => self.primitive("number"),
            Some("boolean") => self.primitive("boolean"),
            Some("null") => self.primitive("null"),
            Some(_) => self.primitive("value"),
            None if has_properties => self.guarded(|g| g.object(object, name, inner)),
            None if object.contains_key("allOf") => self.guarded(|g| g.all_of(object, name, inner)),
            None if object.contains_key("items") || object.contains_key("prefixItems") => {
                self.guarded(|g| g.array(object, name, inner))
            }
            None if ["pattern", "minLength", "maxLength", "format"]
                .iter()
                .any(|key| object.contains_key(*key)) =>
            {
                self.string(object, name)
            }
            None => self.primitive("value"),
        }
    }

    /// A rule matching any of `alternatives`.
    fn union<'s>(
        &mut self,
        alternatives: impl Iterator<Item = &'s Value>,
        name: &str,
        at: At<'_>,
    ) -> String {
        let rules: Vec<String> = alternatives
            .enumerate()
            .map(|(index, alternative)| self.visit(alternative, &format!("{name}-{index}"), at))
            .collect();
        self.add(name, rules.join(" | "))
    }

    /// The rule of a `$ref` into the document (`#/$defs/point`): named after the
    /// reference and made once, so a schema that refers to itself is a recursive rule.
    fn reference(&mut self, reference: &Value, at: At<'_>) -> String {
        let Some((pointer, target)) = ref_target(reference, at.document) else {
            return self.primitive("value");
        };
        let name = format!("ref{pointer}");
        let rule = rule_name(&name);
        if self.unguarded.contains(&rule) {
            // `{"$ref": "#"}`, or `anyOf` of itself: any value, not a loop.
            return self.primitive("value");
        }
        if self.rules.contains_key(&rule) {
            return rule;
        }
        // Reserved before the visit, so a reference back to it stops here.
        self.rules.insert(rule.clone(), "value".into());
        self.primitive("value");
        self.unguarded.push(rule.clone());
        let body = self.visit(target, &format!("{name}-def"), at);
        self.unguarded.retain(|open| *open != rule);
        self.rules.insert(rule.clone(), body);
        rule
    }

    /// Runs `build` for what an object or array holds: after its `{` or `[`, a
    /// reference back is no longer a rule calling itself unread.
    fn guarded<T>(&mut self, build: impl FnOnce(&mut Self) -> T) -> T {
        let open = std::mem::take(&mut self.unguarded);
        let built = build(self);
        self.unguarded = open;
        built
    }

    /// `allOf`: the properties of every object part (through `$ref`s), required as the
    /// part requires them; any other part is not enforced.
    fn all_of(&mut self, object: &Map<String, Value>, name: &str, at: At<'_>) -> String {
        let mut merged = Map::new();
        let mut properties = Map::new();
        let mut required = Vec::new();
        let parts = object.get("allOf").and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            let part = resolve(part, at.document);
            if let Some(part_properties) = part.get("properties").and_then(Value::as_object) {
                for (key, value) in part_properties {
                    properties.insert(key.clone(), value.clone());
                }
            }
            if let Some(part_required) = part.get("required").and_then(Value::as_array) {
                required.extend(part_required.iter().cloned());
            }
        }
        if properties.is_empty() {
            return self.primitive("value");
        }
        merged.insert("properties".into(), Value::Object(properties));
        merged.insert("required".into(), Value::Array(required));
        self.object(&merged, name, at)
    }

    fn object(&mut self, object: &Map<String, Value>, name: &str, at: At<'_>) -> String {
        let empty = Map::new();
        let properties = object
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // Other keys: any value under `true` or a schema; none under `false`, or when
        // `properties` are given and `additionalProperties` is not.
        let any = Value::Bool(true);
        let additional = match object.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(schema @ Value::Object(_)) => Some(schema),
            Some(_) => Some(&any),
            None if object.contains_key("properties") => None,
            None => Some(&any),
        };
        // Too many properties for the grammar's budget: any object.
        let too_many = properties.len() > MAX_RULES.saturating_sub(self.rules.len()) / 2;
        if (properties.is_empty() && additional == Some(&any)) || too_many {
            return self.primitive("object");
        }
        self.primitive("space");
        let mut required_kvs = Vec::new();
        // Optional key-value rules, and whether each may repeat (other keys).
        let mut optional_kvs: Vec<(String, bool)> = Vec::new();
        for (key, schema) in properties {
            let value_rule = self.visit(schema, &format!("{name}-{key}"), at);
            let kv = self.key_value_rule(name, key, &value_rule);
            if required.contains(&key.as_str()) {
                required_kvs.push(kv);
            } else {
                optional_kvs.push((kv, false));
            }
        }
        if let Some(schema) = additional {
            let value_rule = self.visit(schema, &format!("{name}-additional-value"), at);
            let key_rule = self.primitive("string");
            let kv = self.add(
                &format!("{name}-additional-kv"),
                format!("{key_rule} \":\" space {value_rule}"),
            );
            optional_kvs.push((kv, true));
        }
        let mut body = "\"{\" space ".to_owned();
        body.push_str(&required_kvs.join(" \",\" space "));
        if !optional_kvs.is_empty() {
            let alternatives = self.optional_alternatives(&optional_kvs).join(" | ");
            if required_kvs.is_empty() {
                body.push_str(&format!("({alternatives})?"));
            } else {
                body.push_str(&format!(" (\",\" space ({alternatives}))?"));
            }
        }
        body.push_str(" space \"}\"");
        self.add(name, body)
    }

    /// One alternative per optional property, in which it is the first present: it,
    /// then each later one present or not, in order (a repeating one, other keys, any
    /// number of times). The tails are rules (`…-rest`), built from the last one back.
    fn optional_alternatives(&mut self, kvs: &[(String, bool)]) -> Vec<String> {
        let mut rests: Vec<Option<String>> = vec![None; kvs.len() + 1];
        for from in (1..kvs.len()).rev() {
            let (Some((kv, repeats)), Some(next)) = (kvs.get(from), rests.get(from + 1)) else {
                continue;
            };
            let mut body = format!("(\",\" space {kv}){}", if *repeats { "*" } else { "?" });
            if let Some(next) = next {
                body.push(' ');
                body.push_str(next);
            }
            let rest = self.add(&format!("{kv}-rest"), body);
            if let Some(slot) = rests.get_mut(from) {
                *slot = Some(rest);
            }
        }
        kvs.iter()
            .enumerate()
            .map(|(first, (kv, repeats))| {
                let mut run = kv.clone();
                if *repeats {
                    run.push_str(&format!(" (\",\" space {kv})*"));
                }
                if let Some(Some(rest)) = rests.get(first + 1) {
                    run.push(' ');
                    run.push_str(rest);
                }
                run
            })
            .collect()
    }

    /// The rule of one property: its key as a JSON string, `:`, its value.
    fn key_value_rule(&mut self, name: &str, key: &str, value_rule: &str) -> String {
        let key_text = Value::String(key.to_owned()).to_string();
        self.add(
            &format!("{name}-{key}-kv"),
            format!("{} space \":\" space {value_rule}", literal(&key_text)),
        )
    }

    fn array(&mut self, object: &Map<String, Value>, name: &str, at: At<'_>) -> String {
        let items = object.get("items").or_else(|| object.get("prefixItems"));
        if let Some(Value::Array(tuple)) = items {
            self.primitive("space");
            let rules: Vec<String> = tuple
                .iter()
                .enumerate()
                .map(|(index, item)| self.visit(item, &format!("{name}-tuple-{index}"), at))
                .collect();
            let body = format!("\"[\" space {} space \"]\"", rules.join(" \",\" space "));
            return self.add(name, body);
        }
        let (min, max) = counts(object, "minItems", "maxItems");
        let item = match items {
            Some(schema) => self.visit(schema, &format!("{name}-item"), at),
            None if min == 0 && max.is_none() => return self.primitive("array"),
            None => self.primitive("value"),
        };
        self.primitive("space");
        let body = format!(
            "\"[\" space {} space \"]\"",
            repetition(&item, min, max, Some("\",\" space"))
        );
        self.add(name, body)
    }

    fn string(&mut self, object: &Map<String, Value>, name: &str) -> String {
        let format = object.get("format").and_then(Value::as_str);
        let formatted = match format {
            Some("uuid") => Some("uuid"),
            Some("date") => Some("date-string"),
            Some("time") => Some("time-string"),
            Some("date-time") => Some("date-time-string"),
            _ => None,
        };
        // A `pattern` is loosened to any string (the module's doc).
        if let Some(rule) = formatted.filter(|_| !object.contains_key("pattern")) {
            return self.primitive(rule);
        }
        let (min, max) = counts(object, "minLength", "maxLength");
        if min == 0 && max.is_none() {
            return self.primitive("string");
        }
        let char_rule = self.primitive("char");
        let body = format!(
            "\"\\\"\" {} \"\\\"\"",
            repetition(&char_rule, min, max, None)
        );
        self.add(name, body)
    }

    fn integer(&mut self, object: &Map<String, Value>, name: &str) -> String {
        let min = bound(object, "minimum", "exclusiveMinimum", true);
        let max = bound(object, "maximum", "exclusiveMaximum", false);
        if min.is_none() && max.is_none() {
            return self.primitive("integer");
        }
        match integer_rule(min, max) {
            Some(body) => self.add(name, body),
            // No integer is allowed: any integer, and the tool's check says why not.
            None => self.primitive("integer"),
        }
    }
}

/// What a `$ref` into `document` (`#/$defs/point`) points at, with its JSON pointer;
/// `None` for a reference outside the document or to nothing.
fn ref_target<'r, 'd>(reference: &'r Value, document: &'d Value) -> Option<(&'r str, &'d Value)> {
    let pointer = reference.as_str()?.strip_prefix('#')?;
    Some((pointer, document.pointer(pointer)?))
}

/// `schema`, or what its `$ref` into `document` points at.
fn resolve<'a>(schema: &'a Value, document: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(|reference| ref_target(reference, document))
        .map_or(schema, |(_, target)| target)
}

/// A pair of count keywords (`minItems`, `maxItems`): each when it is a whole number
/// no larger than [`MAX_REPEAT`] (larger counts are dropped); both dropped when they
/// contradict each other (the tool's check then says why no value fits).
fn counts(object: &Map<String, Value>, min_key: &str, max_key: &str) -> (u64, Option<u64>) {
    let count = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_u64)
            .filter(|n| *n <= MAX_REPEAT)
    };
    let (min, max) = (count(min_key).unwrap_or(0), count(max_key));
    if max.is_some_and(|max| max < min) {
        return (0, None);
    }
    (min, max)
}

/// An integer bound from an inclusive or an exclusive keyword, rounded inward.
fn bound(
    object: &Map<String, Value>,
    inclusive: &str,
    exclusive: &str,
    lower: bool,
) -> Option<i64> {
    let to_int = |value: f64| {
        (value.is_finite() && value.abs() < 9.0e18).then(|| {
            #[allow(clippy::cast_possible_truncation)]
            let rounded = if lower { value.ceil() } else { value.floor() } as i64;
            rounded
        })
    };
    if let Some(value) = object.get(inclusive).and_then(Value::as_f64) {
        return to_int(value);
    }
    let value = object.get(exclusive).and_then(Value::as_f64)?;
    let edge = to_int(value)?;
    // An exclusive bound on a whole number leaves that number out.
    let whole = value.fract() == 0.0;
    Some(match (whole, lower) {
        (true, true) => edge.saturating_add(1),
        (true, false) => edge.saturating_sub(1),
        (false, _) => edge,
    })
}
