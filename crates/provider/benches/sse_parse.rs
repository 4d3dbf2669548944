//! SSE parse throughput: a ~1 MB stream of OpenAI tool-call deltas, through the SSE
//! parser and the OpenAI chunk decoder into stream items.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group};
use oxydra_provider::OpenAiStreamDecoder;
use oxydra_provider::sse::SseParser;
use oxydra_types::StreamItem;

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
    let mut parser = SseParser::new();
    let mut decoder = OpenAiStreamDecoder::new();
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
    assert!(finished && out.is_empty());
    items
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
}

/// CPU time of this thread (user + system), from `/proc/thread-self/stat`, so the
/// figure is fair on a machine shared with other work. `None` off Linux.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat(5) (utime, stime) are at 11 and 12 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Throughput over CPU time (not wall time), printed beside criterion's figures.
fn cpu_time_throughput() {
    let input = generate(1 << 20);
    let Some(start) = thread_cpu_time() else {
        return;
    };
    let wall = std::time::Instant::now();
    let mut rounds = 0u64;
    while wall.elapsed() < Duration::from_secs(3) {
        black_box(parse(&input, 4096));
        rounds += 1;
    }
    let Some(end) = thread_cpu_time() else { return };
    let cpu = (end - start).as_secs_f64().max(0.01);
    let mb = (rounds * input.len() as u64) as f64 / 1e6;
    println!(
        "sse_parse (CPU time): {rounds} x {} bytes in {cpu:.2} s CPU ({:.2} s wall) = {:.0} MB/s per core",
        input.len(),
        wall.elapsed().as_secs_f64(),
        mb / cpu
    );
}

criterion_group!(benches, sse_parse);

fn main() {
    benches();
    cpu_time_throughput();
    Criterion::default().configure_from_args().final_summary();
}
