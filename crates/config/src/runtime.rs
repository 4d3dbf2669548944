//! `[runtime]`: one flat table holding the runtime's own [`RuntimeLimits`] (its keys,
//! defaults and checks are the runtime's) and the keys of a run its caller decides
//! (`system_prompt`, `approve`, `session_wait_secs`, `tool_choice`, `project_instructions`).
//!
//! The table is read in one pass: each key of the run is taken here, every other key is
//! handed to `RuntimeLimits`' own deserializer, which refuses a key it does not know.
//! (serde's `flatten` would buffer the table: errors would lose the key, its line and
//! unknown keys.)

use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use oxydra::runtime::{DEFAULT_SESSION_WAIT, RuntimeLimits};
use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::ApproveMode;

/// `[runtime]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuntimeSection {
    /// `max_turns`, `max_cost`, `turn_timeout_secs`, `summary_trigger_ratio`,
    /// `context_window`, `max_output_tokens`: the runtime's budgets, defaults filled in.
    #[serde(flatten)]
    pub limits: RuntimeLimits,
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// How consent is answered (`ask`, `deny`, `allow`; the older `never` and `always`
    /// are read too); unset: the caller decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approve: Option<ApproveMode>,
    /// Most seconds a run waits for a session another run is writing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_wait_secs: Option<f64>,
    /// The tool choice of every turn (`auto`, `none`, `required` or a tool's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    /// Whether the `AGENTS.md` files of the workspace and its parents up to the
    /// repository root go into the system prompt; unset: they do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_instructions: Option<bool>,
}

/// The keys [`RuntimeSection`] reads itself; every other key is `RuntimeLimits`'.
const RUN_KEYS: &[&str] = &[
    "system_prompt",
    "approve",
    "session_wait_secs",
    "tool_choice",
    "project_instructions",
];

/// Every key of `[runtime]`: `RuntimeLimits`' (as its own deserializer names them),
/// then the run's.
fn keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        fields_of::<RuntimeLimits>()
            .iter()
            .chain(RUN_KEYS)
            .copied()
            .collect()
    })
}

/// The keys a derived `Deserialize` struct accepts: the field list it hands its
/// deserializer (renamed keys as written, skipped fields left out).
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    // The probe only records what it is asked; its error is expected.
    let _probe = T::deserialize(FieldProbe(&mut fields));
    fields
}

/// A deserializer that records the fields a struct asks for, and holds no data.
struct FieldProbe<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("a probe holds no data"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("a probe holds no data"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

impl RuntimeSection {
    /// How long a run waits for a session another run is writing (the runtime's
    /// default when unset).
    pub fn session_wait(&self) -> Duration {
        self.session_wait_secs
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .unwrap_or(DEFAULT_SESSION_WAIT)
    }

    /// Reads the value of the run's key `key` from `map`.
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "system_prompt" => self.system_prompt = Some(map.next_value()?),
            "approve" => self.approve = Some(map.next_value()?),
            "session_wait_secs" => self.session_wait_secs = Some(map.next_value()?),
            "tool_choice" => self.tool_choice = Some(map.next_value()?),
            "project_instructions" => self.project_instructions = Some(map.next_value()?),
            other => return Err(de::Error::unknown_field(other, keys())),
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for RuntimeSection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SectionVisitor)
    }
}

/// Visits the `[runtime]` table once.
struct SectionVisitor;

impl<'de> Visitor<'de> for SectionVisitor {
    type Value = RuntimeSection;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RuntimeSection, A::Error> {
        let mut section = RuntimeSection::default();
        let routed = Routed {
            map,
            section: &mut section,
        };
        section_limits(routed).map(|limits| RuntimeSection { limits, ..section })
    }
}

/// `RuntimeLimits` read from what `routed` passes on.
fn section_limits<'de, A: MapAccess<'de>>(
    routed: Routed<'_, A>,
) -> Result<RuntimeLimits, A::Error> {
    RuntimeLimits::deserialize(MapAccessDeserializer::new(routed))
}

/// The table as `RuntimeLimits` sees it: the run's keys are read into `section` on the
/// way and never reach it.
struct Routed<'s, A> {
    map: A,
    section: &'s mut RuntimeSection,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Routed<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let mut seed = Some(seed);
        loop {
            match self.map.next_key_seed(Route { seed: &mut seed })? {
                None => return Ok(None),
                Some(Key::Limits(value)) => return Ok(Some(value)),
                Some(Key::Run(key)) => self.section.read(&key, &mut self.map)?,
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key of the table: one of the run's, or `RuntimeLimits`' (already read by its seed,
/// inside the file's key, so that an unknown key's error carries the key's line).
enum Key<T> {
    Run(String),
    Limits(T),
}

/// Reads a key and sends it where it belongs.
struct Route<'s, K> {
    seed: &'s mut Option<K>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for Route<'_, K> {
    type Value = Key<K::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        let key = String::deserialize(deserializer)?;
        if RUN_KEYS.contains(&key.as_str()) {
            return Ok(Key::Run(key));
        }
        if !keys().contains(&key.as_str()) {
            return Err(de::Error::unknown_field(&key, keys()));
        }
        let seed = self
            .seed
            .take()
            .ok_or_else(|| de::Error::custom("a key was read twice"))?;
        seed.deserialize(StringDeserializer::<D::Error>::new(key))
            .map(Key::Limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_round_trips_through_the_runtimes_limits() {
        let text = "max_turns = 3\nsystem_prompt = \"Be brief.\"\nturn_timeout_secs = 30\n\
                    approve = \"never\"\nmax_cost = 0.5\nsession_wait_secs = 1.5\n\
                    tool_choice = \"auto\"\n";
        let section: RuntimeSection = toml::from_str(text).unwrap();
        assert_eq!(section.limits.max_turns, 3);
        assert_eq!(section.limits.turn_timeout, Duration::from_secs(30));
        assert_eq!(section.limits.max_cost, Some(0.5));
        assert_eq!(
            section.limits.summary_trigger_ratio,
            oxydra::runtime::DEFAULT_SUMMARY_TRIGGER_RATIO
        );
        assert_eq!(section.system_prompt.as_deref(), Some("Be brief."));
        assert_eq!(section.approve, Some(ApproveMode::Deny));
        assert_eq!(section.session_wait(), Duration::from_millis(1500));
        assert_eq!(section.tool_choice.as_deref(), Some("auto"));
        let printed = toml::to_string(&section).unwrap();
        assert_eq!(toml::from_str::<RuntimeSection>(&printed).unwrap(), section);
        let empty: RuntimeSection = toml::from_str("").unwrap();
        assert_eq!(empty, RuntimeSection::default());
        assert_eq!(empty.session_wait(), DEFAULT_SESSION_WAIT);
    }

    #[test]
    fn an_unknown_key_is_named_with_every_key_of_the_table() {
        let error = toml::from_str::<RuntimeSection>("max_turns = 2\nmax_turn = 3\n").unwrap_err();
        let message = error.to_string();
        assert!(message.contains("unknown field `max_turn`"), "{message}");
        for key in ["max_turns", "turn_timeout_secs", "tool_choice", "approve"] {
            assert!(message.contains(key), "{key}: {message}");
        }
        assert!(!message.contains("safety_buffer_tokens"), "{message}");
        assert_eq!(error.span().map(|span| span.start), Some(14), "{message}");
        let mistyped =
            toml::from_str::<RuntimeSection>("turn_timeout_secs = \"2m\"\n").unwrap_err();
        assert!(mistyped.to_string().contains("u64"), "{mistyped}");
    }

    #[test]
    fn every_run_key_is_read_here() {
        for key in RUN_KEYS {
            // A number is the wrong type for some of them, never an unknown key.
            if let Err(error) = toml::from_str::<RuntimeSection>(&format!("{key} = 1\n")) {
                assert!(
                    !error.to_string().contains("unknown field"),
                    "{key}: {error}"
                );
            }
        }
    }
}
