//! One consent question on the terminal while it is open: whether it was answered or
//! withdrawn (the executor stopped waiting: the turn was cancelled, the wait passed),
//! and the closing of a withdrawn question on its own line, so the call's `✗` line that
//! follows never joins the `Allow?` prompt.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// What closes a question the executor stopped waiting for.
pub const WITHDRAWN_NOTE: &str = "(question withdrawn: the call does not run)";

/// The state of one question on the terminal, shared by the reader and the request.
#[derive(Clone, Default)]
pub struct QuestionState(Arc<AtomicU8>);

/// The question waits for its answer.
const OPEN: u8 = 0;
/// The reader is done (an answer, or the end of input).
const ANSWERED: u8 = 1;
/// The executor stopped waiting first.
const WITHDRAWN: u8 = 2;

impl QuestionState {
    /// Whether the question was withdrawn (the reader stops).
    pub fn withdrawn(&self) -> bool {
        self.0.load(Ordering::SeqCst) == WITHDRAWN
    }

    /// The reader is done; `false` when the question was withdrawn before.
    pub fn answer(&self) -> bool {
        self.0
            .compare_exchange(OPEN, ANSWERED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// The executor stopped waiting: an open question is closed on `out` at once
    /// ([`WITHDRAWN_NOTE`] and a line break), so what is printed next — the
    /// call's `✗` line — starts on a line of its own; the reader writes nothing more.
    pub fn withdraw(&self, out: &mut impl Write) {
        if self
            .0
            .compare_exchange(OPEN, WITHDRAWN, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let _ = writeln!(out, "{WITHDRAWN_NOTE}");
            let _ = out.flush();
        }
    }
}

/// Withdraws the question when the request future is dropped (the executor no longer
/// waits for the answer: the turn was cancelled or the wait passed), so the reader
/// stops.
pub struct Abandoned(pub QuestionState);

impl Drop for Abandoned {
    fn drop(&mut self) {
        self.0.withdraw(&mut std::io::stderr());
    }
}

/// A writer that drops what is written once its question was withdrawn: the reader
/// may still be about to close a line the withdrawal already closed.
pub struct UntilWithdrawn<W> {
    /// Where the question is written.
    pub out: W,
    /// The question's state.
    pub state: QuestionState,
}

impl<W: Write> Write for UntilWithdrawn<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.state.withdrawn() {
            return Ok(bytes.len());
        }
        self.out.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_withdrawn_question_is_closed_at_once_and_the_reader_writes_nothing_after() {
        let state = QuestionState::default();
        let mut reader_out = UntilWithdrawn {
            out: Vec::new(),
            state: state.clone(),
        };
        write!(reader_out, "{}", crate::consent::ALLOW_PROMPT).unwrap();
        let mut err = Vec::new();
        state.withdraw(&mut err);
        state.withdraw(&mut err);
        assert_eq!(
            String::from_utf8(err).unwrap(),
            format!("{WITHDRAWN_NOTE}\n")
        );
        // The reader's closing line break (end of input) is not written twice.
        writeln!(reader_out).unwrap();
        assert_eq!(reader_out.out, crate::consent::ALLOW_PROMPT.as_bytes());
        assert!(!state.answer());

        // Answered first: a later drop of the request writes nothing.
        let answered = QuestionState::default();
        assert!(answered.answer());
        let mut err = Vec::new();
        answered.withdraw(&mut err);
        assert!(err.is_empty());
    }
}
