//! Anthropic stream parse throughput: a ~1 MB Messages stream (a thinking block in
//! many `thinking_delta`s and a signature, text deltas, a `tool_use` whose input
//! arrives in `input_json_delta` pieces), through the SSE parser and the Anthropic
//! decoder into stream items.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{Criterion, Throughput, criterion_group};
use oxydra_provider::AnthropicStreamDecoder;
use std::hint::black_box;
use std::time::Duration;

mod cpu_time;
mod sse_feed;

fn event(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// About `target` bytes shaped like a recorded thinking-then-tool-use stream.
fn generate(target: usize) -> Vec<u8> {
    let mut out = event(
        "message_start",
        r#"{"type":"message_start","message":{"model":"claude-haiku-4-5-20251001","id":"msg_01","type":"message","role":"assistant","content":[],"stop_reason":null,"usage":{"input_tokens":598,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":8}}}"#,
    );
    out.push_str(&event(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
    ));
    let third = target / 3;
    while out.len() < third {
        out.push_str(&event(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me check the \"version\" first,\nthen joke. "}}"#,
        ));
    }
    out.push_str(&event(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EoQDCm0IDhgCKkCDzGs2kL2PgnDCZU/nM2wG2P1VIXCRHVnhDDzBQxNF1fl4QBXEKLxRItNJ2MwFdW9eeZPhsxSQIxD54cv3zs29Mhlj"}}"#,
    ));
    out.push_str(&event(
        "content_block_stop",
        r#"{"type":"content_block_stop","index":0}"#,
    ));
    out.push_str(&event(
        "content_block_start",
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
    ));
    while out.len() < 2 * third {
        out.push_str(&event(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"The version is 4.2.0, and "}}"#,
        ));
    }
    out.push_str(&event(
        "content_block_start",
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"file_read","input":{}}}"#,
    ));
    while out.len() < target {
        out.push_str(&event(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"src/ma"}}"#,
        ));
    }
    out.push_str(&event(
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":40000,"output_tokens_details":{"thinking_tokens":20000}}}"#,
    ));
    out.push_str(&event("message_stop", r#"{"type":"message_stop"}"#));
    out.into_bytes()
}

fn parse(input: &[u8], chunk: usize) -> usize {
    let mut decoder = AnthropicStreamDecoder::new();
    sse_feed::feed(input, chunk, |data, out| decoder.decode_data(data, out))
}

fn anthropic_parse(c: &mut Criterion) {
    let input = generate(1 << 20);
    assert!(parse(&input, 4096) > 1000);
    let mut group = c.benchmark_group("anthropic_parse");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("thinking_text_tool_use_1MB_4KiB_chunks", |b| {
        b.iter(|| parse(black_box(&input), 4096));
    });
    group.finish();
}

criterion_group!(benches, anthropic_parse);

fn main() {
    benches();
    cpu_time::print_throughput("anthropic_parse", &generate(1 << 20), parse);
    Criterion::default().configure_from_args().final_summary();
}
