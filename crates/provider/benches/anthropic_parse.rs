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

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
use oxydra_provider::AnthropicStreamDecoder;
use oxydra_provider::sse::SseParser;
use oxydra_types::StreamItem;

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
    let mut parser = SseParser::new();
    let mut decoder = AnthropicStreamDecoder::new();
    let mut out = VecDeque::new();
    let mut items = 0;
    let mut finished = false;
    for piece in input.chunks(chunk) {
        parser
            .feed(piece, |event| decoder.decode_data(&event.data, &mut out))
            .unwrap();
        items += out.len();
        for item in out.drain(..) {
            finished = matches!(item, StreamItem::Finish(_));
            black_box(&item);
        }
    }
    parser
        .finish(|event| decoder.decode_data(&event.data, &mut out))
        .unwrap();
    items += out.len();
    finished |= out.iter().any(|item| matches!(item, StreamItem::Finish(_)));
    assert!(finished);
    items
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

/// CPU time of this thread (user + system), from `/proc/thread-self/stat`, so the
/// figure is fair on a machine shared with other work. `None` off Linux.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after_name = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime (fields 14 and 15 of stat(5)) are at 11 and 12 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Throughput over this thread's CPU time, printed beside criterion's wall-time figures.
fn cpu_time_throughput() {
    let input = generate(1 << 20);
    let Some(start) = thread_cpu_time() else {
        return;
    };
    let wall = Instant::now();
    let mut rounds = 0u64;
    while wall.elapsed() < Duration::from_secs(3) {
        black_box(parse(&input, 4096));
        rounds += 1;
    }
    let Some(end) = thread_cpu_time() else { return };
    let cpu = (end - start).as_secs_f64().max(0.01);
    let mb = (rounds * input.len() as u64) as f64 / 1e6;
    println!(
        "anthropic_parse (CPU time): {rounds} x {} bytes in {cpu:.2} s CPU = {:.0} MB/s per core",
        input.len(),
        mb / cpu
    );
}

criterion_group!(benches, anthropic_parse);

fn main() {
    benches();
    cpu_time_throughput();
    Criterion::default().configure_from_args().final_summary();
}
