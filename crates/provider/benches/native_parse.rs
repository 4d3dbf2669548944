//! Parse throughput of the Gemini SSE and Ollama NDJSON streams: ~1 MB built from the
//! recorded fixtures (thought summaries and text for Gemini, one-token lines for
//! Ollama), through the framing and the decoder into stream items.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{Criterion, Throughput, criterion_group};
use oxydra_provider::ndjson::NdjsonReader;
use oxydra_provider::sse::SseParser;
use oxydra_provider::{GeminiStreamDecoder, OllamaStreamDecoder};
use oxydra_test_support::fixture_text;
use oxydra_types::StreamItem;
use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

mod cpu_time;

/// The recorded Gemini stream's events without its last, repeated to `target` bytes,
/// then the last (the one with `finishReason`).
fn gemini_stream(target: usize) -> Vec<u8> {
    let recorded = fixture_text("gemini/gemini25_pro_thought_summary_stream.sse");
    let events: Vec<&str> = recorded
        .split("\r\n\r\n")
        .filter(|e| !e.trim().is_empty())
        .collect();
    let (last, body) = events.split_last().unwrap();
    let mut out = String::with_capacity(target + 8192);
    while out.len() < target {
        for event in body {
            out.push_str(event);
            out.push_str("\r\n\r\n");
        }
    }
    out.push_str(last);
    out.push_str("\r\n\r\n");
    out.into_bytes()
}

/// The recorded Ollama stream's one-token lines repeated to `target` bytes, then its
/// tool-call and `done` lines.
fn ollama_stream(target: usize) -> Vec<u8> {
    let recorded = fixture_text("local/ollama_qwen3_thinking_tool_call.ndjson");
    let lines: Vec<&str> = recorded.lines().filter(|l| !l.is_empty()).collect();
    let (body, tail) = lines.split_at(lines.len() - 2);
    let mut out = String::with_capacity(target + 8192);
    while out.len() < target {
        for line in body {
            out.push_str(line);
            out.push('\n');
        }
    }
    for line in tail {
        out.push_str(line);
        out.push('\n');
    }
    out.into_bytes()
}

fn parse_gemini(input: &[u8], chunk: usize) -> usize {
    let mut parser = SseParser::new();
    let mut decoder = GeminiStreamDecoder::new();
    let mut out = VecDeque::new();
    let mut items = 0;
    for piece in input.chunks(chunk) {
        parser
            .feed(piece, |event| decoder.decode_data(&event.data, &mut out))
            .unwrap();
        items += out.len();
        out.drain(..).for_each(|item| drop(black_box(item)));
    }
    parser
        .finish(|event| decoder.decode_data(&event.data, &mut out))
        .unwrap();
    decoder.end(&mut out);
    assert!(matches!(out.back(), Some(StreamItem::Finish(_))));
    items + out.len()
}

fn parse_ollama(input: &[u8], chunk: usize) -> usize {
    let mut reader = NdjsonReader::new();
    let mut decoder = OllamaStreamDecoder::new();
    let mut out = VecDeque::new();
    let mut items = 0;
    let mut finished = false;
    for piece in input.chunks(chunk) {
        reader
            .feed(piece, |line| decoder.decode_data(&line.data, &mut out))
            .unwrap();
        items += out.len();
        for item in out.drain(..) {
            finished = matches!(item, StreamItem::Finish(_));
            black_box(&item);
        }
    }
    assert!(finished);
    items
}

fn native_parse(c: &mut Criterion) {
    let gemini = gemini_stream(1 << 20);
    let ollama = ollama_stream(1 << 20);
    assert!(parse_gemini(&gemini, 4096) > 100);
    assert!(parse_ollama(&ollama, 4096) > 1000);
    let mut group = c.benchmark_group("native_parse");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(gemini.len() as u64));
    group.bench_function("gemini_sse_1MB_4KiB_chunks", |b| {
        b.iter(|| parse_gemini(black_box(&gemini), 4096));
    });
    group.throughput(Throughput::Bytes(ollama.len() as u64));
    group.bench_function("ollama_ndjson_1MB_4KiB_chunks", |b| {
        b.iter(|| parse_ollama(black_box(&ollama), 4096));
    });
    group.finish();
}

criterion_group!(benches, native_parse);

fn main() {
    benches();
    cpu_time::print_throughput("gemini_sse", &gemini_stream(1 << 20), parse_gemini);
    cpu_time::print_throughput("ollama_ndjson", &ollama_stream(1 << 20), parse_ollama);
    Criterion::default().configure_from_args().final_summary();
}
