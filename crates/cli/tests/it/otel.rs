//! `oxydra run` exporting its spans over OTLP/HTTP to an in-process collector: the
//! span tree of a real run (agent → turn → chat, and turn → tool batch → tool) with
//! the GenAI conventions' attributes; nothing sent without the variable; a collector
//! that cannot be reached changes neither the outcome nor (much) the time.

use crate::common;
use crate::common::otlp;

use std::io::{Read, Write};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{Sandbox, events_of_type, json_lines, shape, stderr, stdout};
use otlp::{Attr, Collector, ReceivedSpan, SilentCollector};
use oxydra::types::Usage;
use oxydra_test_support::{MockServer, openai};

const MODEL: &str = "gpt-4o-mini";

/// The OTel variables a test run might inherit, removed so that each test sets its own.
const OTEL_VARS: [&str; 8] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_SERVICE_NAME",
    "OTEL_SDK_DISABLED",
];

/// A model that reads `a.txt` with one tool call, then answers.
fn one_tool_then_answer() -> MockServer {
    MockServer::start(vec![
        openai::tool_calls(&[("call_read_a", "file_read", r#"{"path":"a.txt"}"#)]),
        openai::text("a.txt says alpha."),
    ])
    .unwrap()
}

fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "alpha").unwrap();
    sandbox
}

/// `oxydra run` of the one-tool task against `server`, with `env` set.
fn run_command(sandbox: &Sandbox, server: &MockServer, env: &[(&str, &str)]) -> Command {
    let mut command = sandbox.oxydra_command(server, "run");
    command.args([
        "--model",
        MODEL,
        "--approve",
        "deny",
        "What does a.txt say?",
    ]);
    for var in OTEL_VARS {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    command
}

fn run(sandbox: &Sandbox, server: &MockServer, env: &[(&str, &str)]) -> Output {
    run_command(sandbox, server, env).output().unwrap()
}

/// The event stream of the one-tool task, as every run of it must print it.
fn expected_shape() -> Vec<&'static str> {
    vec![
        "progress provider_call 1",
        "progress tool_execution 1",
        "started file_read read_only",
        "completed file_read",
        "turn 1",
        "progress provider_call 2",
        "text",
        "turn 2",
        "final",
    ]
}

fn only<'a>(
    spans: &'a [ReceivedSpan],
    what: &str,
    test: impl Fn(&ReceivedSpan) -> bool,
) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| test(s)).collect();
    assert_eq!(
        found.len(),
        1,
        "one {what} span expected: {:#?}",
        names(spans)
    );
    found[0]
}

fn names(spans: &[ReceivedSpan]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

fn parent<'a>(spans: &'a [ReceivedSpan], span: &ReceivedSpan) -> &'a ReceivedSpan {
    spans
        .iter()
        .find(|s| s.span_id == span.parent_span_id)
        .unwrap_or_else(|| panic!("the parent of {} was not exported", span.name))
}

fn operation(span: &ReceivedSpan) -> Option<&str> {
    match span.attributes.get("gen_ai.operation.name") {
        Some(Attr::Str(op)) => Some(op),
        _ => None,
    }
}

const SPAN_KIND_INTERNAL: i32 = 1;
const SPAN_KIND_CLIENT: i32 = 3;

#[test]
fn a_run_exports_its_span_tree_with_the_genai_conventions() {
    let sandbox = sandbox();
    let server = one_tool_then_answer();
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let output = run(
        &sandbox,
        &server,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_SERVICE_NAME", "oxydra-e2e"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(shape(&events), expected_shape(), "{}", stdout(&output));
    let last = events.last().unwrap();
    let session_id = last["session_id"].as_str().unwrap();

    // The process flushed before it exited: everything is here already.
    let spans = collector.spans();
    assert!(collector.requests() >= 1);
    assert!(
        spans.iter().all(|s| s.trace_id == spans[0].trace_id),
        "one trace: {:#?}",
        names(&spans)
    );
    for span in &spans {
        assert_eq!(
            span.resource["service.name"],
            Attr::Str("oxydra-e2e".into())
        );
        assert_eq!(span.scope, "oxydra");
    }

    // The agent: the root, the session as the conversation.
    let agent = only(&spans, "invoke_agent", |s| {
        operation(s) == Some("invoke_agent")
    });
    assert_eq!(agent.name, "invoke_agent");
    assert!(
        agent.parent_span_id.is_empty(),
        "the agent span is the root"
    );
    assert_eq!(agent.kind, SPAN_KIND_INTERNAL);
    assert_eq!(agent.str("gen_ai.conversation.id"), session_id);
    assert_eq!(agent.str("gen_ai.request.model"), MODEL);
    assert_eq!(agent.str("gen_ai.provider.name"), "openai");

    // Two turns under it.
    let turns: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == "turn").collect();
    assert_eq!(turns.len(), 2, "{:#?}", names(&spans));
    for turn in &turns {
        assert_eq!(parent(&spans, turn).span_id, agent.span_id);
    }
    let turn_number = |span: &ReceivedSpan| -> String {
        match span.attr("turn") {
            Attr::Str(n) => n.clone(),
            Attr::Int(n) => n.to_string(),
            other => panic!("turn is {other:?}"),
        }
    };

    // One chat span per provider call, each a client span directly under its turn,
    // with the usage the mock reported and the finish reason.
    let mut chats: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| operation(s) == Some("chat"))
        .collect();
    assert_eq!(chats.len(), 2, "{:#?}", names(&spans));
    chats.sort_by_key(|chat| turn_number(parent(&spans, chat)));
    let expected = [(1, 150, 30, "tool_calls"), (2, 100, 20, "stop")];
    let mut total_cost = 0.0;
    for (chat, (turn, input, output_tokens, finish)) in chats.iter().zip(expected) {
        assert_eq!(chat.name, format!("chat {MODEL}"));
        assert_eq!(chat.kind, SPAN_KIND_CLIENT);
        assert_eq!(turn_number(parent(&spans, chat)), turn.to_string());
        assert_eq!(chat.str("gen_ai.provider.name"), "openai");
        assert_eq!(chat.str("gen_ai.request.model"), MODEL);
        assert_eq!(chat.int("gen_ai.usage.input_tokens"), input);
        assert_eq!(chat.int("gen_ai.usage.output_tokens"), output_tokens);
        assert_eq!(chat.int("gen_ai.usage.cache_read.input_tokens"), 0);
        assert_eq!(chat.int("gen_ai.usage.cache_creation.input_tokens"), 0);
        assert_eq!(chat.int("gen_ai.usage.reasoning.output_tokens"), 0);
        assert_eq!(
            chat.attr("gen_ai.response.finish_reasons"),
            &Attr::Strings(vec![finish.to_owned()])
        );
        assert_eq!(chat.attr("gen_ai.request.stream"), &Attr::Bool(true));
        let Attr::Float(cost) = chat.attr("oxydra.cost_usd") else {
            panic!("no cost: {:?}", chat.attributes)
        };
        let price =
            oxydra::provider::cost(MODEL, &Usage::new(input as u64, output_tokens as u64, 0));
        assert!(price > 0.0, "{MODEL} is priced");
        assert!((cost - price).abs() < 1e-15, "{cost} vs {price}");
        total_cost += cost;
    }
    // The run's cost, rounded to a millionth in the event, is the calls' sum.
    let reported = last["cost"].as_f64().unwrap();
    assert!(
        (total_cost - reported).abs() <= 0.5e-6,
        "the spans' costs add up to the run's: {total_cost} vs {reported}"
    );

    // The tool: under the first turn's batch, with its name and the model's call id.
    let tool = only(&spans, "execute_tool", |s| {
        operation(s) == Some("execute_tool")
    });
    assert_eq!(tool.name, "execute_tool file_read");
    assert_eq!(tool.kind, SPAN_KIND_INTERNAL);
    assert_eq!(tool.str("gen_ai.tool.name"), "file_read");
    assert_eq!(tool.str("gen_ai.tool.call.id"), "call_read_a");
    assert_eq!(tool.str("gen_ai.tool.type"), "function");
    assert_eq!(tool.str("outcome"), "ok");
    assert_eq!(
        tool.status_code, 0,
        "a call that worked has no error status"
    );
    assert!(!tool.attributes.contains_key("error.type"));
    let batch = parent(&spans, tool);
    assert_eq!(batch.name, "tool_batch");
    let batch_turn = parent(&spans, batch);
    assert_eq!(batch_turn.name, "turn");
    assert_eq!(turn_number(batch_turn), "1");
    // The tool ran after the first chat ended and before the second began, in the
    // same turn as the first.
    assert_eq!(batch_turn.span_id, chats[0].parent_span_id);
}

#[test]
fn a_failed_tool_call_is_an_error_span_with_its_kind() {
    let sandbox = sandbox();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("call_missing", "file_read", r#"{"path":"missing.txt"}"#)]),
        openai::text("No such file."),
    ])
    .unwrap();
    let collector = Collector::start();
    let endpoint = collector.endpoint();
    let output = run(
        &sandbox,
        &server,
        &[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            &format!("{endpoint}/v1/traces"),
        )],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(events_of_type(&json_lines(&output), "tool_failed").len(), 1);
    let spans = collector.spans();
    let tool = only(&spans, "execute_tool", |s| {
        operation(s) == Some("execute_tool")
    });
    assert_eq!(tool.str("gen_ai.tool.call.id"), "call_missing");
    assert_eq!(tool.status_code, 2, "error status: {:?}", tool.attributes);
    assert_eq!(tool.str("error.type"), tool.str("outcome"));
    assert_ne!(tool.str("outcome"), "ok");
    // The default service name.
    assert_eq!(tool.resource["service.name"], Attr::Str("oxydra".into()));
}

#[test]
fn without_the_variable_nothing_is_sent() {
    let sandbox = sandbox();
    let server = one_tool_then_answer();
    // Where the OTLP default endpoint is (should export ever be on by default), when
    // that port is free here.
    let collector = Collector::start_on(4318).unwrap_or_else(Collector::start);
    let output = run(&sandbox, &server, &[("OTEL_SERVICE_NAME", "oxydra-e2e")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(shape(&json_lines(&output)), expected_shape());
    assert_eq!(collector.requests(), 0);
    assert!(collector.spans().is_empty());
    // An empty value is unset too.
    let server = one_tool_then_answer();
    let output = run(&sandbox, &server, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(collector.requests(), 0);
}

#[test]
fn a_bad_endpoint_is_a_configuration_error_naming_the_variable() {
    for (var, value) in [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "collector:4318/v1/traces",
        ),
    ] {
        let sandbox = sandbox();
        let server = one_tool_then_answer();
        let output = run(&sandbox, &server, &[(var, value)]);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{err}");
        assert!(err.contains(var), "{err}");
        assert!(err.contains(value), "{err}");
        assert!(server.requests().is_empty(), "the run did not start");
        // The JSON-lines stream still ends with an error event.
        let events = json_lines(&output);
        assert_eq!(events.len(), 1, "{}", stdout(&output));
        assert_eq!(events[0]["type"], "error");
        assert_eq!(events[0]["kind"], "config");
    }
}

#[test]
fn an_unsupported_protocol_is_refused() {
    let sandbox = sandbox();
    let server = one_tool_then_answer();
    let output = run(
        &sandbox,
        &server,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "{err}");
    assert!(server.requests().is_empty());
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_collector_changes_neither_the_outcome_nor_the_output() {
    let sandbox = sandbox();
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
    let server = one_tool_then_answer();
    let output = run(
        &sandbox,
        &server,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(shape(&json_lines(&output)), expected_shape());
}

#[test]
fn a_collector_that_never_answers_delays_the_exit_by_the_export_timeout_only() {
    let sandbox = sandbox();
    let silent = SilentCollector::start();
    let endpoint = silent.endpoint();
    let server = one_tool_then_answer();
    let started = Instant::now();
    let output = run(
        &sandbox,
        &server,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "300"),
        ],
    );
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(shape(&json_lines(&output)), expected_shape());
    // The export was tried (and never answered)…
    assert!(silent.connections() >= 1);
    // …and the exit waited for it no longer than the variable's 300 ms: the default
    // timeout (10 s) would hold it at least that long (the rest is the run itself, on
    // a machine that may be loaded).
    assert!(took < Duration::from_secs(9), "took {took:?}");
}

/// Sends one HTTP/1.1 request to `addr` and returns the response's status.
fn status_of(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> u16 {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(common::PATIENCE)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no status line: {response:?}"));
    status.parse().unwrap()
}

#[test]
fn the_collector_is_as_strict_as_a_real_one() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;

    let collector = Collector::start();
    let addr = collector.addr();
    let empty = ExportTraceServiceRequest::default().encode_to_vec();
    assert_eq!(
        status_of(addr, "POST", "/v1/traces", "application/json", b"{}"),
        415
    );
    assert_eq!(
        status_of(addr, "POST", "/v1/logs", "application/x-protobuf", &empty),
        404
    );
    assert_eq!(
        status_of(
            addr,
            "POST",
            "/v1/traces",
            "application/x-protobuf",
            b"\xff\xff\xff"
        ),
        400
    );
    assert_eq!(collector.requests(), 0);
    assert_eq!(
        status_of(addr, "POST", "/v1/traces", "application/x-protobuf", &empty),
        200
    );
    assert_eq!(collector.requests(), 1);
}
