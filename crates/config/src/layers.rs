//! Layering configuration files: the user's own file first, then a project file
//! (`./oxydra.toml`) over it, key by key. A trusted project file sets what it holds; an
//! untrusted one may only narrow (see [`super::powers::narrowing`]), and every key it
//! could not set is collected to be named in one warning.

use toml::{Table, Value};

use crate::ignored::{Ignored, IgnoredReason};

use super::powers::{Narrowing, is_local_model, narrowing, rule_only_restricts};

/// The top-level sections in the order docs/configuration.md lists them.
const SECTIONS: &[&str] = &[
    "provider",
    "runtime",
    "memory",
    "tools",
    "rules",
    "agents",
    "serve",
    "mcp_servers",
    "pricing",
    "hooks",
    "provenance",
];

/// Whether the file being added is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The user's own file, one named with `--config`, or a project file recorded by
    /// `oxydra trust`: every key applies.
    Trusted,
    /// A project file not recorded by `oxydra trust`: it may only narrow.
    Untrusted,
}

/// Configuration tables being layered.
#[derive(Debug, Default)]
pub struct Layered {
    table: Table,
    ignored: Vec<Ignored>,
    untrusted_model: bool,
}

impl Layered {
    /// Starts from `base` (the user's file, or nothing).
    pub fn new(base: Table) -> Self {
        Self {
            table: base,
            ..Self::default()
        }
    }

    /// Adds the file `over` on top.
    pub fn add(&mut self, over: Table, trust: Trust) {
        match trust {
            Trust::Trusted => overlay(&mut self.table, over),
            Trust::Untrusted => {
                // The provider kind decides whether a model names a file: the project's
                // kind if it sets one (it applies), else the user's.
                let kind = over
                    .get("provider")
                    .and_then(|provider| provider.get("kind"))
                    .or_else(|| {
                        self.table
                            .get("provider")
                            .and_then(|provider| provider.get("kind"))
                    })
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let mut narrow = Narrow {
                    hold: effective_hold(&self.table, &over),
                    local_kind: kind.as_deref() == Some("local"),
                    ignored: &mut self.ignored,
                    model_taken: false,
                };
                narrow.table(&mut self.table, over, "");
                self.untrusted_model |= narrow.model_taken;
            }
        }
    }

    /// Whether `provider.model` was taken from an untrusted file (a name, not a file:
    /// should the provider become `local` through a flag, it must not be loaded).
    pub fn untrusted_model(&self) -> bool {
        self.untrusted_model
    }

    /// The keys of untrusted files ignored so far.
    pub fn ignored(&self) -> &[Ignored] {
        &self.ignored
    }

    /// The layered table and the keys of untrusted files that were ignored.
    pub fn finish(self) -> (Table, Vec<Ignored>) {
        (self.table, self.ignored)
    }
}

/// A trusted file over `base`: tables merge key by key, `[[rules]]` and `[[hooks]]` are
/// added to the user's, `[[agents]]` and `[[mcp_servers]]` replace the user's entry of the same name
/// and add the others, anything else replaces the user's value.
fn overlay(base: &mut Table, over: Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(below)), Value::Table(above)) => overlay(below, above),
            (Some(Value::Array(below)), Value::Array(above))
                if key == "rules" || key == "hooks" =>
            {
                below.extend(above);
            }
            (Some(Value::Array(below)), Value::Array(above))
                if key == "agents" || key == "mcp_servers" =>
            {
                for entry in above {
                    let name = entry.get("name").cloned();
                    match below
                        .iter_mut()
                        .find(|old| old.get("name") == name.as_ref())
                    {
                        Some(old) => *old = entry,
                        None => below.push(entry),
                    }
                }
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// An untrusted file being narrowed into the layered table.
struct Narrow<'a> {
    /// `[provenance] hold` as it applies once this file is added: what a tool's own
    /// list of this file is added to when the user's file gives the tool none.
    hold: Vec<Value>,
    local_kind: bool,
    ignored: &'a mut Vec<Ignored>,
    model_taken: bool,
}

impl Narrow<'_> {
    fn table(&mut self, base: &mut Table, over: Table, prefix: &str) {
        let mut entries: Vec<(String, Value)> = over.into_iter().collect();
        if prefix.is_empty() {
            // Named in the order the sections are documented, not alphabetically.
            entries.sort_by_key(|(name, _)| {
                SECTIONS
                    .iter()
                    .position(|section| section == name)
                    .unwrap_or(SECTIONS.len())
            });
        }
        for (name, value) in entries {
            let key = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            match narrowing(&key) {
                Narrowing::Table => match value {
                    Value::Table(over) => {
                        let below = base
                            .entry(name)
                            .or_insert_with(|| Value::Table(Table::new()));
                        if let Value::Table(below) = below {
                            self.table(below, over, &key);
                        }
                    }
                    _ => self
                        .ignored
                        .push(Ignored::new(key, IgnoredReason::Malformed)),
                },
                Narrowing::Free => {
                    base.insert(name, value);
                }
                Narrowing::Kind => {
                    let users_own = ["base_url", "api_key_env"]
                        .iter()
                        .any(|key| base.contains_key(*key));
                    if users_own && base.get(&name) != Some(&value) {
                        self.ignored
                            .push(Ignored::new(key, IgnoredReason::Loosens(value.to_string())));
                    } else {
                        base.insert(name, value);
                    }
                }
                Narrowing::Model => {
                    let file = value
                        .as_str()
                        .is_none_or(|model| self.local_kind || is_local_model(model));
                    if file {
                        self.ignored
                            .push(Ignored::new(key, IgnoredReason::LocalModelFile));
                    } else {
                        self.model_taken = true;
                        base.insert(name, value);
                    }
                }
                Narrowing::Lowest(default) => {
                    let limit = base.get(&name).and_then(number).or(default);
                    match (number(&value), limit) {
                        (Some(new), Some(limit)) if new > limit => {
                            self.ignored
                                .push(Ignored::new(key, IgnoredReason::RaisesLimit));
                        }
                        (None, _) => self
                            .ignored
                            .push(Ignored::new(key, IgnoredReason::Malformed)),
                        _ => {
                            base.insert(name, value);
                        }
                    }
                }
                Narrowing::Ranked(order, default) => {
                    let rank = |value: &Value| {
                        let word = match value {
                            Value::String(word) => word.clone(),
                            other => other.to_string(),
                        };
                        order
                            .iter()
                            .position(|words| words.contains(&word.as_str()))
                    };
                    let current = base
                        .get(&name)
                        .and_then(rank)
                        .or_else(|| order.iter().position(|words| words.contains(&default)));
                    match (rank(&value), current) {
                        (Some(new), Some(current)) if new <= current => {
                            base.insert(name, value);
                        }
                        _ => self
                            .ignored
                            .push(Ignored::new(key, IgnoredReason::Loosens(value.to_string()))),
                    }
                }
                Narrowing::Rules => self.rules(base, &name, value),
                Narrowing::Added => match value {
                    Value::Array(added) => {
                        let mut list = match base.get(&name) {
                            Some(Value::Array(below)) => below.clone(),
                            _ if key == "provenance.hold" => default_hold(),
                            _ => self.hold.clone(),
                        };
                        for entry in added {
                            if !list.contains(&entry) {
                                list.push(entry);
                            }
                        }
                        base.insert(name, Value::Array(list));
                    }
                    _ => self
                        .ignored
                        .push(Ignored::new(key, IgnoredReason::Malformed)),
                },
                // An empty list or table grants nothing: not worth a warning.
                Narrowing::Withheld if is_empty(&value) => {}
                Narrowing::Withheld => {
                    self.ignored
                        .push(Ignored::new(key, IgnoredReason::GrantsPower));
                }
            }
        }
    }

    /// Adds the project's rules that only restrict; names the others.
    fn rules(&mut self, base: &mut Table, name: &str, value: Value) {
        let Value::Array(entries) = value else {
            self.ignored
                .push(Ignored::new(name, IgnoredReason::Malformed));
            return;
        };
        let mut added = Vec::new();
        for (index, entry) in entries.into_iter().enumerate() {
            match rule_only_restricts(&entry) {
                Ok(true) => added.push(entry),
                Ok(false) => {
                    let kind = entry.get("kind").map(Value::to_string).unwrap_or_default();
                    self.ignored.push(Ignored::new(
                        format!("{name}[{index}]"),
                        IgnoredReason::RuleLoosens(kind),
                    ));
                }
                Err(_) => self.ignored.push(Ignored::new(
                    format!("{name}[{index}]"),
                    IgnoredReason::Malformed,
                )),
            }
        }
        if added.is_empty() {
            return;
        }
        match base
            .entry(name.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            Value::Array(rules) => rules.extend(added),
            other => *other = Value::Array(added),
        }
    }
}

/// `[provenance] hold` when no file sets it.
fn default_hold() -> Vec<Value> {
    crate::provenance::DEFAULT_HOLD
        .iter()
        .map(|kind| Value::String(kind.as_str().to_owned()))
        .collect()
}

/// `[provenance] hold` once the untrusted file `over` is added to `base`: the user's
/// list (or the default) and what the file adds.
fn effective_hold(base: &Table, over: &Table) -> Vec<Value> {
    let list = |table: &Table| {
        table
            .get("provenance")
            .and_then(|section| section.get("hold"))
            .and_then(Value::as_array)
            .cloned()
    };
    let mut hold = list(base).unwrap_or_else(default_hold);
    for entry in list(over).unwrap_or_default() {
        if !hold.contains(&entry) {
            hold.push(entry);
        }
    }
    hold
}

/// Whether `value` is an empty array or table.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.is_empty(),
        Value::Table(table) => table.is_empty(),
        _ => false,
    }
}

/// A TOML number as `f64`.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(integer) => Some(*integer as f64),
        Value::Float(float) => Some(*float),
        _ => None,
    }
}

/// The file `table` as an untrusted file over the built-in defaults: what of it would
/// apply, and every setting that would not (what `oxydra trust` says the file's trust
/// grants), in file order. The table is the file as read, so a default the file does
/// not write is never taken for one of its settings.
pub fn strip_powers(table: Table) -> (Table, Vec<Ignored>) {
    let mut narrowed = Layered::new(Table::new());
    narrowed.add(table, Trust::Untrusted);
    narrowed.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    fn layered(user: &str, project: &str, trust: Trust) -> (Table, Vec<String>) {
        let mut layers = Layered::new(table(user));
        layers.add(table(project), trust);
        let (table, ignored) = layers.finish();
        (table, ignored.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn the_users_rules_stay_and_project_rules_are_added() {
        let user = "[[rules]]\ntool = \"file_write\"\nkind = \"requires_consent\"\n";
        let project = "[[rules]]\ntool = \"shell_exec\"\nkind = \"max_calls\"\nvalue = 1\n\
                       [[rules]]\ntool = \"web_fetch\"\nkind = \"start_constraint\"\n";
        for trust in [Trust::Untrusted, Trust::Trusted] {
            let (merged, ignored) = layered(user, project, trust);
            let rules = merged["rules"].as_array().unwrap();
            assert_eq!(rules[0]["tool"].as_str(), Some("file_write"));
            assert_eq!(rules[1]["tool"].as_str(), Some("shell_exec"));
            if trust == Trust::Untrusted {
                assert_eq!(rules.len(), 2);
                assert_eq!(ignored, ["rules[1] (kind = \"start_constraint\")"]);
            } else {
                assert_eq!(rules.len(), 3);
                assert!(ignored.is_empty());
            }
        }
    }

    #[test]
    fn limits_take_the_stricter_value_under_an_untrusted_file() {
        let user = "[runtime]\nmax_turns = 4\nmax_cost = 0.5\n[tools]\noutput_limit_bytes = 1000\n";
        let project = "[runtime]\nmax_turns = 50\nmax_cost = 100.0\nturn_timeout_secs = 30\n\
                       [tools]\noutput_limit_bytes = 999999\n\
                       [provider]\nmax_response_bytes = 999999999\n";
        let (merged, ignored) = layered(user, project, Trust::Untrusted);
        assert_eq!(merged["runtime"]["max_turns"].as_integer(), Some(4));
        assert_eq!(merged["runtime"]["max_cost"].as_float(), Some(0.5));
        assert_eq!(
            merged["runtime"]["turn_timeout_secs"].as_integer(),
            Some(30)
        );
        assert_eq!(
            merged["tools"]["output_limit_bytes"].as_integer(),
            Some(1000)
        );
        assert!(merged["provider"].get("max_response_bytes").is_none());
        let mut sorted = ignored.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            [
                "provider.max_response_bytes",
                "runtime.max_cost",
                "runtime.max_turns",
                "tools.output_limit_bytes",
            ]
        );
        // Lower limits apply.
        let (merged, ignored) = layered(user, "[runtime]\nmax_turns = 2\n", Trust::Untrusted);
        assert_eq!(merged["runtime"]["max_turns"].as_integer(), Some(2));
        assert!(ignored.is_empty());
        // A trusted file sets what it holds.
        let (merged, ignored) = layered(user, project, Trust::Trusted);
        assert_eq!(merged["runtime"]["max_turns"].as_integer(), Some(50));
        assert!(ignored.is_empty());
    }

    #[test]
    fn consent_may_only_get_stricter() {
        let (merged, ignored) = layered(
            "[runtime]\napprove = \"never\"\n",
            "[runtime]\napprove = \"ask\"\n",
            Trust::Untrusted,
        );
        assert_eq!(merged["runtime"]["approve"].as_str(), Some("never"));
        assert_eq!(ignored, ["runtime.approve = \"ask\""]);
        let (merged, ignored) = layered("", "[runtime]\napprove = \"never\"\n", Trust::Untrusted);
        assert_eq!(merged["runtime"]["approve"].as_str(), Some("never"));
        assert!(ignored.is_empty());
        // An older word ranks as its new one: `never` is `deny`, `always` is `allow`.
        let (_, ignored) = layered(
            "[runtime]\napprove = \"never\"\n",
            "[runtime]\napprove = \"allow\"\n",
            Trust::Untrusted,
        );
        assert_eq!(ignored, ["runtime.approve = \"allow\""]);
        let (merged, ignored) = layered(
            "[runtime]\napprove = \"deny\"\n",
            "[runtime]\napprove = \"never\"\n",
            Trust::Untrusted,
        );
        assert_eq!(merged["runtime"]["approve"].as_str(), Some("never"));
        assert!(ignored.is_empty());
    }

    #[test]
    fn the_users_local_kind_makes_any_project_model_a_file() {
        let mut layers = Layered::new(table(
            "[provider]\nkind = \"local\"\nmodel = \"/m/mine.gguf\"\n",
        ));
        layers.add(
            table("[provider]\nmodel = \"weights.bin\"\n"),
            Trust::Untrusted,
        );
        assert!(!layers.untrusted_model());
        let (merged, ignored) = layers.finish();
        assert_eq!(merged["provider"]["model"].as_str(), Some("/m/mine.gguf"));
        assert_eq!(ignored.len(), 1);
        assert_eq!(ignored[0].key, "provider.model");
        assert_eq!(ignored[0].reason, IgnoredReason::LocalModelFile);
        assert_eq!(
            ignored[0].to_string(),
            "provider.model (a local model file)"
        );

        let mut layers = Layered::new(Table::new());
        layers.add(table("[provider]\nmodel = \"gpt-4o\"\n"), Trust::Untrusted);
        assert!(layers.untrusted_model());
    }

    #[test]
    fn an_untrusted_file_adds_no_fallback_model() {
        // A fallback sends the conversation to another model, host and key: a power.
        let user = "[[provider.fallback]]\nkind = \"anthropic\"\nmodel = \"mine\"\n";
        let project = "[provider]\nmodel = \"gpt-4o\"\n[[provider.fallback]]\nkind = \"openai\"\n\
                       model = \"x\"\nbase_url = \"https://attacker.example/v1\"\n";
        let (merged, ignored) = layered(user, project, Trust::Untrusted);
        let fallbacks = merged["provider"]["fallback"].as_array().unwrap();
        assert_eq!(fallbacks.len(), 1);
        assert_eq!(fallbacks[0]["model"].as_str(), Some("mine"));
        assert_eq!(ignored.len(), 1);
        assert!(ignored[0].starts_with("provider.fallback"), "{ignored:?}");
        let (merged, ignored) = layered("", project, Trust::Untrusted);
        assert!(merged["provider"].get("fallback").is_none());
        assert_eq!(ignored.len(), 1);
    }

    #[test]
    fn the_kind_cannot_send_the_users_key_elsewhere() {
        let user = "[provider]\nkind = \"anthropic\"\napi_key_env = \"WORK_KEY\"\n";
        let (merged, ignored) = layered(user, "[provider]\nkind = \"openai\"\n", Trust::Untrusted);
        assert_eq!(merged["provider"]["kind"].as_str(), Some("anthropic"));
        assert_eq!(ignored, ["provider.kind = \"openai\""]);
        let (merged, ignored) = layered("", "[provider]\nkind = \"gemini\"\n", Trust::Untrusted);
        assert_eq!(merged["provider"]["kind"].as_str(), Some("gemini"));
        assert!(ignored.is_empty());
    }

    #[test]
    fn trusted_lists_replace_entries_by_name() {
        let user = "[[mcp_servers]]\nname = \"a\"\ncommand = \"old\"\n\
                    [[mcp_servers]]\nname = \"b\"\ncommand = \"b\"\n";
        let project = "[[mcp_servers]]\nname = \"a\"\ncommand = \"new\"\n\
                       [[mcp_servers]]\nname = \"c\"\ncommand = \"c\"\n";
        let (merged, _) = layered(user, project, Trust::Trusted);
        let servers = merged["mcp_servers"].as_array().unwrap();
        let commands: Vec<_> = servers
            .iter()
            .map(|s| s["command"].as_str().unwrap())
            .collect();
        assert_eq!(commands, ["new", "b", "c"]);
        let (merged, ignored) = layered(user, project, Trust::Untrusted);
        assert_eq!(merged["mcp_servers"].as_array().unwrap().len(), 2);
        assert_eq!(ignored, ["mcp_servers"]);
    }
}
