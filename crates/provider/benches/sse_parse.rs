//! SSE parse throughput: a ~1 MB stream of OpenAI tool-call deltas, through the SSE
//! parser and the OpenAI chunk decoder into stream items; and a ~1 MB Responses API
//! stream (reasoning summary, text and function-call argument deltas, as OpenAI sends
//! them) through the Responses decoder.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group};
use oxydra_provider::sse::SseParser;
use oxydra_provider::{OpenAiResponsesStreamDecoder, OpenAiStreamDecoder};

mod cpu_time;
mod sse_feed;

/// A realistic stream: four parallel tool calls whose arguments arrive a few
/// characters at a time (some with escapes), then finish, usage and `[DONE]`.
fn generate(target: usize) -> Vec<u8> {
    let head = r#"{"id":"chatcmpl-C2QD1kGWsTW5OWiqAtOSFEAOfPfQH","object":"chat.completion.chunk","created":1754693439,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","usage":null,"choices":[{"index":0,"delta":{"tool_calls":["#;
    let tail = r#"]},"logprobs":null,"finish_reason":null}],"obfuscation":"S8ct"}"#;
    let pieces = [
        "{\\\"pa",
        "th\\\": \\\"",
        "src/ma",
        "in.rs",
        "\\\", \\\"li",
        "nes\\\": ",
        "[1, 2",
        "0]}",
    ];
    let mut out = String::with_capacity(target + 4096);
    let mut n = 0usize;
    while out.len() < target {
        let index = n % 4;
        if n < 4 {
            out.push_str(&format!(
                "data: {head}{{\"index\":{index},\"id\":\"call_{index}abcdefghijklmnop\",\"type\":\"function\",\"function\":{{\"name\":\"file_read\",\"arguments\":\"\"}}}}{tail}\n\n"
            ));
        } else {
            let piece = pieces[(n / 4) % pieces.len()];
            out.push_str(&format!(
                "data: {head}{{\"index\":{index},\"function\":{{\"arguments\":\"{piece}\"}}}}{tail}\r\n\r\n"
            ));
        }
        n += 1;
    }
    out.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n");
    out.push_str(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":364,\"completion_tokens\":40000}}\n\n",
    );
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn parse(input: &[u8], chunk: usize) -> usize {
    let mut decoder = OpenAiStreamDecoder::new();
    sse_feed::feed(input, chunk, |data, out| decoder.decode_data(data, out))
}

/// A Responses API stream as OpenAI sends it (`event:` lines, sequence numbers, item
/// ids, `obfuscation`): a reasoning item whose summary arrives a few words at a time,
/// then text deltas, then a function call whose arguments arrive in pieces, the
/// finished items, `response.completed`.
fn generate_responses(target: usize) -> Vec<u8> {
    let mut out = String::with_capacity(target + 8192);
    let mut seq = 0u64;
    let mut push = |out: &mut String, kind: &str, body: String| {
        out.push_str(&format!(
            "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{seq},{body}}}\n\n"
        ));
        seq += 1;
    };
    let reasoning_id = "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405";
    let message_id = "msg_0050471a34b36ae60068c97bf19c8881958b0f8b1d5d23a7e2";
    let call_id = "fc_0050471a34b36ae60068c97bf19c8881958b0f8b1d5d23a7e1";
    push(
        &mut out,
        "response.output_item.added",
        format!(
            "\"output_index\":0,\"item\":{{\"id\":\"{reasoning_id}\",\"type\":\"reasoning\",\"summary\":[]}}"
        ),
    );
    let words = [
        "**Planning** ",
        "the ",
        "answer: ",
        "check \\\"the\\\" ",
        "file, ",
        "then ",
        "reply.\\n",
    ];
    let third = target / 3;
    let mut n = 0usize;
    while out.len() < third {
        let word = words[n % words.len()];
        push(
            &mut out,
            "response.reasoning_summary_text.delta",
            format!(
                "\"item_id\":\"{reasoning_id}\",\"output_index\":0,\"summary_index\":0,\"delta\":\"{word}\",\"obfuscation\":\"Xy7Kq2\""
            ),
        );
        n += 1;
    }
    push(
        &mut out,
        "response.output_item.done",
        format!(
            "\"output_index\":0,\"item\":{{\"id\":\"{reasoning_id}\",\"type\":\"reasoning\",\"encrypted_content\":\"{}\",\"summary\":[{{\"type\":\"summary_text\",\"text\":\"**Planning**\"}}]}}",
            "gAAAAABoyXus".repeat(200)
        ),
    );
    while out.len() < 2 * third {
        let word = words[n % words.len()];
        push(
            &mut out,
            "response.output_text.delta",
            format!(
                "\"item_id\":\"{message_id}\",\"output_index\":1,\"content_index\":0,\"delta\":\"{word}\",\"logprobs\":[],\"obfuscation\":\"Xy7Kq2\""
            ),
        );
        n += 1;
    }
    push(
        &mut out,
        "response.output_item.added",
        format!(
            "\"output_index\":2,\"item\":{{\"id\":\"{call_id}\",\"type\":\"function_call\",\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"call_CWXgs68YprAjp6t0371hiPOI\",\"name\":\"file_read\"}}"
        ),
    );
    let pieces = [
        "{\\\"pa",
        "th\\\": \\\"",
        "src/ma",
        "in.rs",
        "\\\", \\\"li",
        "nes\\\": ",
        "[1, 2",
        "0]}",
    ];
    while out.len() < target {
        let piece = pieces[n % pieces.len()];
        push(
            &mut out,
            "response.function_call_arguments.delta",
            format!(
                "\"item_id\":\"{call_id}\",\"output_index\":2,\"delta\":\"{piece}\",\"obfuscation\":\"Xy7Kq2\""
            ),
        );
        n += 1;
    }
    push(&mut out, "response.completed", "\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":53,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":40000,\"output_tokens_details\":{\"reasoning_tokens\":448},\"total_tokens\":40053}}".to_owned());
    out.into_bytes()
}

fn parse_responses(input: &[u8], chunk: usize) -> usize {
    let mut decoder = OpenAiResponsesStreamDecoder::new();
    sse_feed::feed(input, chunk, |data, out| decoder.decode_data(data, out))
}

fn sse_parse(c: &mut Criterion) {
    let input = generate(1 << 20);
    assert!(parse(&input, 4096) > 1000);
    let mut group = c.benchmark_group("sse_parse");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("openai_tool_call_deltas_1MB_4KiB_chunks", |b| {
        b.iter(|| parse(black_box(&input), 4096));
    });
    group.bench_function("sse_lines_only_1MB_4KiB_chunks", |b| {
        b.iter(|| {
            let mut parser = SseParser::new();
            let mut bytes = 0;
            for piece in input.chunks(4096) {
                parser
                    .feed::<()>(piece, |event| {
                        bytes += event.data.len();
                        Ok(())
                    })
                    .unwrap();
            }
            bytes
        });
    });
    group.bench_function("openai_tool_call_deltas_1MB_64B_chunks", |b| {
        b.iter(|| parse(black_box(&input), 64));
    });
    group.finish();

    let responses = generate_responses(1 << 20);
    assert!(parse_responses(&responses, 4096) > 1000);
    let mut group = c.benchmark_group("sse_parse_responses");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(responses.len() as u64));
    group.bench_function(
        "responses_reasoning_text_call_deltas_1MB_4KiB_chunks",
        |b| {
            b.iter(|| parse_responses(black_box(&responses), 4096));
        },
    );
    group.finish();
}

criterion_group!(benches, sse_parse);

fn main() {
    benches();
    cpu_time::print_throughput("sse_parse", &generate(1 << 20), parse);
    cpu_time::print_throughput(
        "sse_parse_responses",
        &generate_responses(1 << 20),
        parse_responses,
    );
    Criterion::default().configure_from_args().final_summary();
}
