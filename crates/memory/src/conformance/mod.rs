//! The test suites every [`Memory`] + [`MemoryRetrieval`] backend must pass, written
//! once (feature `conformance`).
//!
//! A backend implements [`MemoryBackend`] in its tests (a fresh, empty database per
//! value, and stores opened on it) and expands [`memory_conformance_tests!`](crate::memory_conformance_tests)
//! to get one `#[tokio::test]` per case, or awaits [`run_all`]. Every case panics
//! (through `assert!`) when the backend breaks the contract.
//!
//! Cases: append order and gap-free sequence numbers (also under concurrency and across
//! reopening), `append_many` batches contiguous amid single appends, restore with
//! orphaned tool calls repaired, the summary epoch compare-and-swap, session list and
//! delete, session meta (stored, replaced, listed, deleted with its session), leases
//! (exclusion, expiry and fencing, a dead holder taken over), messages with parts (the
//! size cap on one message, a thousand parts), and full-text, vector and merged
//! retrieval. A backend that is also a [`CheckpointStore`](crate::CheckpointStore)
//! expands [`checkpoint_conformance_tests!`](crate::checkpoint_conformance_tests) too.

mod checkpoints;
mod intents;
mod leases;
mod meta;
mod parts;
mod retrieval;
mod sessions;

pub use checkpoints::*;
pub use intents::*;
pub use leases::*;
pub use meta::*;
pub use parts::*;
pub use retrieval::*;
pub use sessions::*;

use crate::config::RetrievalConfig;
use crate::traits::{Memory, MemoryRetrieval};

/// Opens the stores a case runs on.
pub trait MemoryBackend {
    /// The store under test.
    type Store: Memory + MemoryRetrieval + 'static;

    /// A store on this value's database (new and empty when the value was made),
    /// indexing with the default hashing embedder, ranking and chunking by `retrieval`.
    /// Each call opens another store on the same database, as another process would;
    /// a store dropped and opened again must see everything committed before.
    fn open(&self, retrieval: RetrievalConfig) -> Self::Store;

    /// Like [`MemoryBackend::open`] with the default retrieval, refusing a message
    /// larger than `max_message_bytes` as stored.
    fn open_capped(&self, max_message_bytes: usize) -> Self::Store;
}

/// Expands one `#[tokio::test]` per conformance case; `$backend` is an expression
/// making a fresh [`MemoryBackend`], evaluated once per case.
///
/// ```ignore
/// oxydra_memory::memory_conformance_tests!(SqliteFiles::new());
/// ```
#[macro_export]
macro_rules! memory_conformance_tests {
    ($backend:expr) => {
        $crate::memory_conformance_tests!(@cases $backend;
            append_and_restore_in_order_across_reopening,
            concurrent_appends_are_unique_and_gap_free,
            list_sessions_most_recent_first_with_counts,
            summary_epoch_compare_and_swap,
            restore_synthesises_interrupted_results_only_for_orphans,
            delete_session_removes_messages_state_and_chunks,
            session_meta_round_trips_replaces_and_is_listed,
            session_meta_is_deleted_with_its_session,
            batches_and_single_appends_interleave_without_gaps,
            two_holders_exclude_each_other,
            a_lapsed_lease_is_taken_over_and_its_holder_fenced_off,
            restore_repairs_messages_two_writers_interleaved,
            a_holder_whose_process_is_gone_is_taken_over_at_once,
            a_message_over_the_cap_is_an_error_naming_the_session_and_nothing_is_lost,
            a_thousand_parts_round_trip,
            planted_chunk_first_by_text_alone,
            planted_chunk_first_by_vectors_alone,
            planted_chunk_first_merged,
            text_alone_does_not_find_unrelated_words,
            session_scope_sees_only_its_chunks_and_global_sees_all,
            hostile_and_empty_queries_do_not_error,
            long_texts_are_chunked_with_overlap,
            vector_cache_sees_writes_from_another_connection,
            very_common_words_are_left_out_unless_nothing_else_remains,
            intents_round_trip_with_their_outcomes,
            an_intent_stored_again_starts_over,
            intents_are_deleted_with_their_session,
        );
    };
    (@cases $backend:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $crate::conformance::$case(&$backend).await;
            }
        )*
    };
}

/// Runs every case in turn, each on a fresh backend from `make`.
pub async fn run_all<B: MemoryBackend>(make: impl Fn() -> B) {
    append_and_restore_in_order_across_reopening(&make()).await;
    concurrent_appends_are_unique_and_gap_free(&make()).await;
    list_sessions_most_recent_first_with_counts(&make()).await;
    summary_epoch_compare_and_swap(&make()).await;
    restore_synthesises_interrupted_results_only_for_orphans(&make()).await;
    delete_session_removes_messages_state_and_chunks(&make()).await;
    session_meta_round_trips_replaces_and_is_listed(&make()).await;
    session_meta_is_deleted_with_its_session(&make()).await;
    batches_and_single_appends_interleave_without_gaps(&make()).await;
    two_holders_exclude_each_other(&make()).await;
    a_lapsed_lease_is_taken_over_and_its_holder_fenced_off(&make()).await;
    restore_repairs_messages_two_writers_interleaved(&make()).await;
    a_holder_whose_process_is_gone_is_taken_over_at_once(&make()).await;
    a_message_over_the_cap_is_an_error_naming_the_session_and_nothing_is_lost(&make()).await;
    a_thousand_parts_round_trip(&make()).await;
    planted_chunk_first_by_text_alone(&make()).await;
    planted_chunk_first_by_vectors_alone(&make()).await;
    planted_chunk_first_merged(&make()).await;
    text_alone_does_not_find_unrelated_words(&make()).await;
    session_scope_sees_only_its_chunks_and_global_sees_all(&make()).await;
    hostile_and_empty_queries_do_not_error(&make()).await;
    long_texts_are_chunked_with_overlap(&make()).await;
    vector_cache_sees_writes_from_another_connection(&make()).await;
    very_common_words_are_left_out_unless_nothing_else_remains(&make()).await;
    intents_round_trip_with_their_outcomes(&make()).await;
    an_intent_stored_again_starts_over(&make()).await;
    intents_are_deleted_with_their_session(&make()).await;
}
