//! Blueprints: validated, compiled forms of the `[[agents]]` entries.

use std::collections::BTreeSet;

use oxydra_executor::ToolRule;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{BlueprintConfig, BlueprintKind, BlueprintLimits};
use crate::error::CoordinatorError;
use crate::template::ArgsTemplate;
use crate::validation::{ParameterValidationFailure, ParameterValidator, implicit_prompt_schema};

/// A blueprint as listed by `GET /agents`, `list_agent_blueprints` and the store.
/// AI agents carry no `parameters_schema` (the implicit `{prompt}` schema applies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BlueprintSummary {
    /// Its name.
    pub name: String,
    /// `agent` or `deterministic`.
    #[serde(rename = "type")]
    pub kind: BlueprintKind,
    /// What it does.
    pub description: String,
    /// The schema of a deterministic blueprint's parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters_schema: Option<Value>,
}

/// What an AI agent blueprint runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// A named provider instead of the default one.
    pub provider: Option<String>,
    /// A model instead of the default one.
    pub model: Option<String>,
    /// The tools it may call (`None`: every tool of the registry).
    pub tools: Option<Vec<String>>,
    /// Budget overrides.
    pub limits: BlueprintLimits,
}

/// One step of a deterministic blueprint.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The tool it calls.
    pub tool: String,
    /// Its argument template.
    pub args: ArgsTemplate,
}

/// The body of a blueprint: an AI agent or a list of steps.
#[derive(Debug, Clone, PartialEq)]
pub enum BlueprintBody {
    /// An AI agent.
    Agent(AgentSpec),
    /// A deterministic pipeline.
    Deterministic(Vec<Step>),
}

/// A loaded blueprint, its parameters validator compiled once.
#[derive(Debug)]
pub struct Blueprint {
    name: String,
    description: String,
    declared_schema: Option<Value>,
    schema: Value,
    validator: ParameterValidator,
    rules: Vec<ToolRule>,
    allow_privileged: Vec<String>,
    allow_recursion: bool,
    body: BlueprintBody,
}

fn invalid(name: &str, reason: impl Into<String>) -> CoordinatorError {
    CoordinatorError::InvalidBlueprint {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

impl Blueprint {
    /// Checks and compiles a config entry: fields must fit the type, a deterministic
    /// blueprint needs a valid Draft 7 `parameters_schema` and at least one step, and
    /// every placeholder must name a property of that schema.
    pub fn from_config(config: BlueprintConfig) -> Result<Self, CoordinatorError> {
        let name = config.name.trim().to_owned();
        if name.is_empty() || name != config.name || name.chars().any(char::is_control) {
            return Err(invalid(
                &config.name,
                "a name must be non-empty, without surrounding spaces or control characters",
            ));
        }
        let (schema, body) = match config.kind {
            BlueprintKind::Agent => {
                if config.parameters_schema.is_some() {
                    return Err(invalid(
                        &name,
                        "an AI agent takes the implicit {\"prompt\": string} parameters; remove parameters_schema",
                    ));
                }
                if !config.steps.is_empty() {
                    return Err(invalid(&name, "only deterministic blueprints have steps"));
                }
                let spec = AgentSpec {
                    system_prompt: config.system_prompt,
                    provider: config.provider,
                    model: config.model,
                    tools: config.tools,
                    limits: config.limits.unwrap_or_default(),
                };
                (implicit_prompt_schema().clone(), BlueprintBody::Agent(spec))
            }
            BlueprintKind::Deterministic => {
                for (field, present) in [
                    ("system_prompt", config.system_prompt.is_some()),
                    ("provider", config.provider.is_some()),
                    ("model", config.model.is_some()),
                    ("tools", config.tools.is_some()),
                    ("limits", config.limits.is_some()),
                ] {
                    if present {
                        return Err(invalid(
                            &name,
                            format!(
                                "`{field}` applies to AI agents only, not to a deterministic blueprint"
                            ),
                        ));
                    }
                }
                let schema = config.parameters_schema.ok_or_else(|| {
                    invalid(&name, "a deterministic blueprint needs a parameters_schema")
                })?;
                if config.steps.is_empty() {
                    return Err(invalid(
                        &name,
                        "a deterministic blueprint needs at least one step",
                    ));
                }
                (schema, BlueprintBody::Deterministic(Vec::new()))
            }
        };
        let validator = ParameterValidator::compile(&schema).map_err(|problem| {
            CoordinatorError::InvalidSchema {
                name: name.clone(),
                message: problem.message,
                location: problem.location,
            }
        })?;
        let body = match body {
            BlueprintBody::Deterministic(_) => {
                BlueprintBody::Deterministic(compile_steps(&name, &schema, config.steps)?)
            }
            agent => agent,
        };
        let declared_schema = match config.kind {
            BlueprintKind::Agent => None,
            BlueprintKind::Deterministic => Some(schema.clone()),
        };
        Ok(Self {
            name,
            description: config.description,
            declared_schema,
            schema,
            validator,
            rules: config.rules,
            allow_privileged: config.allow_privileged,
            allow_recursion: config.allow_recursion,
            body,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `agent` or `deterministic`.
    pub fn kind(&self) -> BlueprintKind {
        match self.body {
            BlueprintBody::Agent(_) => BlueprintKind::Agent,
            BlueprintBody::Deterministic(_) => BlueprintKind::Deterministic,
        }
    }

    /// What it does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The schema run parameters are validated against (the implicit `{prompt}`
    /// schema for AI agents).
    pub fn parameters_schema(&self) -> &Value {
        &self.schema
    }

    /// Its tool rules.
    pub fn rules(&self) -> &[ToolRule] {
        &self.rules
    }

    /// The Privileged tools it declares it may use (`allow_privileged`).
    pub fn allow_privileged(&self) -> &[String] {
        &self.allow_privileged
    }

    /// Whether it declares the Privileged tool `tool`.
    pub fn allows_privileged(&self, tool: &str) -> bool {
        self.allow_privileged.iter().any(|name| name == tool)
    }

    /// Whether a run tree that already runs it may start it again
    /// (`allow_recursion`).
    pub fn allows_recursion(&self) -> bool {
        self.allow_recursion
    }

    /// Its `max_cost` (AI agents that set one), which bounds a run tree it is the
    /// root of.
    pub fn max_cost(&self) -> Option<f64> {
        match &self.body {
            BlueprintBody::Agent(spec) => spec.limits.max_cost,
            BlueprintBody::Deterministic(_) => None,
        }
    }

    /// An AI agent's or a pipeline's specifics.
    pub fn body(&self) -> &BlueprintBody {
        &self.body
    }

    /// The tools the blueprint names (steps' tools, or an agent's allow-list).
    pub fn named_tools(&self) -> Vec<&str> {
        match &self.body {
            BlueprintBody::Agent(spec) => spec.tools.iter().flatten().map(String::as_str).collect(),
            BlueprintBody::Deterministic(steps) => {
                steps.iter().map(|step| step.tool.as_str()).collect()
            }
        }
    }

    /// How it is listed.
    pub fn summary(&self) -> BlueprintSummary {
        BlueprintSummary {
            name: self.name.clone(),
            kind: self.kind(),
            description: self.description.clone(),
            parameters_schema: self.declared_schema.clone(),
        }
    }

    /// Checks `parameters` against the schema; the error is the API's 400 body.
    pub fn validate(&self, parameters: &Value) -> Result<(), Box<ParameterValidationFailure>> {
        if self.validator.is_valid(parameters) {
            return Ok(());
        }
        Err(Box::new(ParameterValidationFailure::new(
            self.name.clone(),
            self.validator.issues(parameters),
            self.schema.clone(),
        )))
    }
}

fn compile_steps(
    name: &str,
    schema: &Value,
    steps: Vec<crate::config::StepConfig>,
) -> Result<Vec<Step>, CoordinatorError> {
    let known: BTreeSet<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    steps
        .into_iter()
        .enumerate()
        .map(|(index, step)| {
            let step_error = |reason: String| CoordinatorError::InvalidStep {
                name: name.to_owned(),
                step: index + 1,
                tool: step.tool.clone(),
                reason,
            };
            if step.tool.trim().is_empty() {
                return Err(step_error("a step needs a tool".into()));
            }
            if !step.args.is_object() {
                return Err(step_error("args must be a table (a JSON object)".into()));
            }
            let args = ArgsTemplate::parse_for_tool(&step.args, &known, &step.tool)
                .map_err(|error| step_error(error.to_string()))?;
            Ok(Step {
                tool: step.tool,
                args,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StepConfig;
    use serde_json::json;

    fn crawler_config() -> BlueprintConfig {
        BlueprintConfig::deterministic(
            "web-crawler",
            "Crawls websites",
            json!({"type": "object", "required": ["url"],
                "properties": {"url": {"type": "string", "format": "uri"}}}),
            vec![StepConfig::new("web_fetch", json!({"url": "{{url}}"}))],
        )
    }

    #[test]
    fn agents_get_the_implicit_schema_and_list_without_one() {
        let blueprint = Blueprint::from_config(BlueprintConfig::agent(
            "researcher",
            "Research",
            "You research.",
        ))
        .unwrap();
        assert_eq!(blueprint.kind(), BlueprintKind::Agent);
        assert_eq!(blueprint.parameters_schema(), implicit_prompt_schema());
        let listed = serde_json::to_value(blueprint.summary()).unwrap();
        assert_eq!(
            listed,
            json!({"name": "researcher", "type": "agent", "description": "Research"})
        );
        assert!(blueprint.validate(&json!({"prompt": "Test"})).is_ok());
        let failure = blueprint.validate(&json!({})).unwrap_err();
        assert_eq!(failure.error, "parameter_validation_failed");
        assert_eq!(failure.agent_name, "researcher");
        assert_eq!(&failure.parameters_schema, implicit_prompt_schema());
    }

    #[test]
    fn deterministic_blueprints_list_their_schema_and_compile_steps() {
        let blueprint = Blueprint::from_config(crawler_config()).unwrap();
        let listed = serde_json::to_value(blueprint.summary()).unwrap();
        assert_eq!(listed["type"], "deterministic");
        assert_eq!(listed["parameters_schema"]["required"], json!(["url"]));
        assert_eq!(blueprint.named_tools(), vec!["web_fetch"]);
        let failure = blueprint
            .validate(&json!({"url": "not-a-url"}))
            .unwrap_err();
        assert_eq!(failure.validation_errors[0].path, "$.url");
        assert_eq!(
            failure.validation_errors[0].schema_path,
            "properties.url.format"
        );
    }

    #[test]
    fn an_invalid_schema_is_refused_naming_the_blueprint() {
        let mut config = crawler_config();
        config.parameters_schema =
            Some(json!({"type": "object", "properties": {"url": {"type": 5}}}));
        let error = Blueprint::from_config(config).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, CoordinatorError::InvalidSchema { .. }));
        assert!(
            text.contains("web-crawler") && text.contains("properties.url.type"),
            "{text}"
        );
    }

    #[test]
    fn unknown_placeholders_fail_at_load() {
        let mut config = crawler_config();
        config.steps = vec![StepConfig::new("web_fetch", json!({"url": "{{link}}"}))];
        let text = Blueprint::from_config(config).unwrap_err().to_string();
        assert!(
            text.contains("step 1") && text.contains("{{link}}"),
            "{text}"
        );
    }

    #[test]
    fn fields_must_fit_the_type() {
        let mut agent = BlueprintConfig::agent("a", "", "p");
        agent.parameters_schema = Some(json!({"type": "object"}));
        assert!(Blueprint::from_config(agent).is_err());
        let mut agent = BlueprintConfig::agent("a", "", "p");
        agent.steps = vec![StepConfig::new("x", json!({}))];
        assert!(Blueprint::from_config(agent).is_err());
        let mut crawler = crawler_config();
        crawler.system_prompt = Some("no".into());
        assert!(
            Blueprint::from_config(crawler)
                .unwrap_err()
                .to_string()
                .contains("system_prompt")
        );
        let mut crawler = crawler_config();
        crawler.parameters_schema = None;
        assert!(Blueprint::from_config(crawler).is_err());
        let mut crawler = crawler_config();
        crawler.steps.clear();
        assert!(Blueprint::from_config(crawler).is_err());
        let mut crawler = crawler_config();
        crawler.steps = vec![StepConfig::new("x", json!("string args"))];
        assert!(Blueprint::from_config(crawler).is_err());
        assert!(Blueprint::from_config(BlueprintConfig::agent(" a", "", "p")).is_err());
        assert!(Blueprint::from_config(BlueprintConfig::agent("", "", "p")).is_err());
    }

    #[test]
    fn config_entries_deserialize_from_toml_and_refuse_unknown_keys() {
        let toml_text = r#"
            name = "web-crawler"
            type = "deterministic"
            description = "Crawls websites"
            parameters_schema = { type = "object", required = ["url"], properties = { url = { type = "string", format = "uri" } } }
            [[steps]]
            tool = "web_fetch"
            args = { url = "{{url}}" }
        "#;
        let config: BlueprintConfig = toml::from_str(toml_text).unwrap();
        assert_eq!(config, crawler_config());
        let bad = "name = \"a\"\ntype = \"agent\"\nsystem_promt = \"x\"\n";
        let error = toml::from_str::<BlueprintConfig>(bad)
            .unwrap_err()
            .to_string();
        assert!(error.contains("system_promt"), "{error}");
        let with_rules = "name = \"a\"\ntype = \"agent\"\ntools = [\"shell_exec\"]\n\
            [limits]\nmax_turns = 3\n[[rules]]\ntool = \"shell_exec\"\nkind = \"max_calls\"\nvalue = 2\n";
        let config: BlueprintConfig = toml::from_str(with_rules).unwrap();
        assert_eq!(config.rules.len(), 1);
        assert_eq!(config.limits.unwrap().max_turns, Some(3));
    }
}
