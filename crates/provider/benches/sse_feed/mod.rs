//! Feeds a recorded SSE stream through the SSE parser and a provider's stream decoder
//! in fixed-size chunks, as the network would deliver it: the loop every SSE parse
//! benchmark measures.

use std::collections::VecDeque;
use std::hint::black_box;

use oxydra_provider::ProviderError;
use oxydra_provider::sse::SseParser;
use oxydra_types::StreamItem;

/// Parses `input` in `chunk`-byte pieces, decoding each event's data with `decode`;
/// returns how many stream items came out. Panics (it is a benchmark) when a chunk
/// fails to parse or the stream ends without a `Finish` item.
pub fn feed(
    input: &[u8],
    chunk: usize,
    mut decode: impl FnMut(&str, &mut VecDeque<StreamItem>) -> Result<(), ProviderError>,
) -> usize {
    let mut parser = SseParser::new();
    let mut out = VecDeque::new();
    let mut items = 0;
    let mut finished = false;
    for piece in input.chunks(chunk) {
        parser
            .feed(piece, |event| decode(&event.data, &mut out))
            .unwrap();
        items += out.len();
        for item in out.drain(..) {
            finished |= matches!(item, StreamItem::Finish(_));
            black_box(&item);
        }
    }
    parser
        .finish(|event| decode(&event.data, &mut out))
        .unwrap();
    items += out.len();
    finished |= out.iter().any(|item| matches!(item, StreamItem::Finish(_)));
    assert!(finished, "the stream ended without a Finish item");
    items
}
