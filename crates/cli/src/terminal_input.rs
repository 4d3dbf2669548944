//! Reading stdin outside the line editor: one owner, short waits, no read left behind.
//!
//! Between turns `oxydra chat` on a terminal reads with rustyline. Everything else
//! that reads stdin goes through [`TerminalInput`]: a consent question's answer,
//! the lines typed while a turn runs (`/cancel`), and `chat`'s lines when stdin is not
//! a terminal. A read waits for input in slices of [`POLL_SLICE`] (poll(2)) and, between
//! slices, asks its reader whether it still wants a line; so a question the executor
//! gave up on, or a turn that ended, leaves stdin at once, and no thread stays blocked
//! on it to steal the next line.
//!
//! While a consent question is open ([`TerminalInput::question`]), background readers
//! (the turn watcher) step aside: the next line is the question's answer. Right before
//! a question is shown, input already waiting is thrown away
//! ([`TerminalInput::discard_pending`]): what was typed (or pushed into the terminal by
//! a program, `TIOCSTI`) before the question existed is no answer to it.

use std::fs::File;
use std::io::{BufRead, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// How long one wait for input lasts before the reader checks whether to stop.
pub const POLL_SLICE: Duration = Duration::from_millis(100);
/// [`POLL_SLICE`] in poll(2)'s milliseconds.
const POLL_SLICE_MS: u16 = 100;

/// What reading one line gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineRead {
    /// A line, without its line ending.
    Line(String),
    /// End of input: Ctrl-D on a terminal, the end of a pipe or file, a read error.
    Eof,
    /// The reader's stop condition became true.
    Stopped,
    /// A consent question is open, so a background reader stepped aside.
    Yielded,
}

/// Who reads, and so who gets the next line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// A consent question or `chat`'s next message: takes the next line.
    Foreground,
    /// The watcher of a running turn: steps aside while a question is open.
    Background,
}

/// The process's stdin, shared by everyone who reads it (cheap to clone).
#[derive(Clone)]
pub struct TerminalInput {
    shared: Arc<Shared>,
}

struct Shared {
    is_terminal: bool,
    source: Mutex<Source>,
    /// Consent questions waiting for their answer.
    questions: AtomicUsize,
}

/// The file descriptor and what was read from it but not handed out yet.
struct Source {
    file: Option<File>,
    pending: Vec<u8>,
    /// Nothing more will come (a pipe's end, a hung-up terminal, an error).
    ended: bool,
}

/// What one wait for input gave.
enum Fill {
    /// Bytes arrived, or nothing did within the slice: look again.
    Again,
    /// End of input (for a terminal, possibly just a Ctrl-D).
    End,
}

impl Source {
    /// Takes the first complete line out of `pending`.
    fn pop_line(&mut self) -> Option<String> {
        let end = self.pending.iter().position(|&byte| byte == b'\n')?;
        let mut line: Vec<u8> = self.pending.drain(..=end).collect();
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Some(String::from_utf8_lossy(&line).into_owned())
    }

    /// Takes what is left of an unterminated last line.
    fn take_rest(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let rest = std::mem::take(&mut self.pending);
        Some(String::from_utf8_lossy(&rest).into_owned())
    }

    /// Waits one slice for input and reads what came, unless `stop` says so by then:
    /// input that arrives for the next reader (the line editor, once a turn ended)
    /// is left to it.
    fn fill(&mut self, is_terminal: bool, stop: &dyn Fn() -> bool) -> Fill {
        if self.ended {
            return Fill::End;
        }
        let Some(file) = &mut self.file else {
            self.ended = true;
            return Fill::End;
        };
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(POLL_SLICE_MS)) {
            Ok(0) | Err(Errno::EINTR | Errno::EAGAIN) => return Fill::Again,
            Ok(_) if stop() => return Fill::Again,
            Ok(_) => {}
            Err(_) => {
                self.ended = true;
                return Fill::End;
            }
        }
        let events = fds
            .first()
            .and_then(PollFd::revents)
            .unwrap_or(PollFlags::empty());
        if events.contains(PollFlags::POLLNVAL) {
            self.ended = true;
            return Fill::End;
        }
        let hung_up = events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR);
        let mut buffer = [0_u8; 4096];
        match file.read(&mut buffer) {
            // A terminal's end of input is a Ctrl-D, and more may follow; a pipe's is final.
            Ok(0) => {
                if !is_terminal || hung_up {
                    self.ended = true;
                }
                Fill::End
            }
            Ok(read) => {
                self.pending
                    .extend_from_slice(buffer.get(..read).unwrap_or_default());
                Fill::Again
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => Fill::Again,
            Err(_) => {
                self.ended = true;
                Fill::End
            }
        }
    }
}

impl TerminalInput {
    /// The process's stdin (a duplicate of its descriptor, read without buffering
    /// beyond whole lines).
    pub fn stdin() -> Self {
        use std::io::IsTerminal;
        let stdin = std::io::stdin();
        let is_terminal = stdin.is_terminal();
        Self::from_fd(stdin.as_fd().try_clone_to_owned().ok(), is_terminal)
    }

    /// Input read from `fd` (`None`: no input at all).
    pub fn from_fd(fd: Option<OwnedFd>, is_terminal: bool) -> Self {
        Self {
            shared: Arc::new(Shared {
                is_terminal,
                source: Mutex::new(Source {
                    file: fd.map(File::from),
                    pending: Vec::new(),
                    ended: false,
                }),
                questions: AtomicUsize::new(0),
            }),
        }
    }

    /// Whether stdin is a terminal.
    pub fn is_terminal(&self) -> bool {
        self.shared.is_terminal
    }

    /// Reads the next line, waiting in slices of [`POLL_SLICE`] and returning
    /// [`LineRead::Stopped`] as soon as `stop` says so. Blocking: call it on a
    /// blocking thread.
    pub fn read_line(&self, stop: &dyn Fn() -> bool, priority: Priority) -> LineRead {
        loop {
            let mut source = self.source();
            // Checked under the lock before taking a line: a line a background reader
            // takes was there before a question was opened.
            if stop() {
                return LineRead::Stopped;
            }
            if priority == Priority::Background && self.shared.questions.load(Ordering::SeqCst) > 0
            {
                return LineRead::Yielded;
            }
            if let Some(line) = source.pop_line() {
                return LineRead::Line(line);
            }
            if let Fill::End = source.fill(self.shared.is_terminal, stop) {
                return match source.take_rest() {
                    Some(rest) => LineRead::Line(rest),
                    None => LineRead::Eof,
                };
            }
        }
    }

    /// Throws away the input that waits to be read: what this process read but did not
    /// hand out yet, and, on a terminal, what the terminal holds (`tcflush(TCIFLUSH)`).
    /// Called right before a consent question is shown, so that its answer is typed
    /// after it was asked. Nothing to do for a pipe or a file (no question is asked
    /// there).
    pub fn discard_pending(&self) {
        if !self.shared.is_terminal {
            return;
        }
        let mut source = self.source();
        source.pending.clear();
        if let Some(file) = &source.file {
            let _ = nix::sys::termios::tcflush(file.as_fd(), nix::sys::termios::FlushArg::TCIFLUSH);
        }
    }

    /// Opens a consent question: until the guard is dropped, background readers step
    /// aside and the next line goes to the question, and the terminal echoes what is
    /// typed even while a turn has echo off.
    pub fn question(&self) -> QuestionGuard {
        self.shared.questions.fetch_add(1, Ordering::SeqCst);
        QuestionGuard {
            input: self.clone(),
            _echo: crate::terminal_echo::echo_while_asking(),
        }
    }

    /// Lines for a foreground reader as a [`BufRead`] that reaches its end when
    /// `stop` says so (or at the end of input).
    pub fn lines<F: Fn() -> bool>(&self, stop: F) -> Lines<F> {
        Lines {
            input: self.clone(),
            stop,
            line: Vec::new(),
            at: 0,
        }
    }

    /// Reads lines in the background, handing each to `on_line`, until the returned
    /// [`Watch`] is finished or dropped. Steps aside while a question is open. Must
    /// run inside the tokio runtime.
    pub fn watch(&self, mut on_line: impl FnMut(String) + Send + 'static) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let input = self.clone();
        let stopped = Arc::clone(&stop);
        let handle = tokio::task::spawn_blocking(move || {
            let stop = || stopped.load(Ordering::SeqCst);
            loop {
                match input.read_line(&stop, Priority::Background) {
                    LineRead::Line(line) => on_line(line),
                    LineRead::Eof if input.ended() => break,
                    // A Ctrl-D while the turn runs: nothing to do.
                    LineRead::Eof => {}
                    LineRead::Yielded => std::thread::sleep(POLL_SLICE),
                    LineRead::Stopped => break,
                }
            }
        });
        Watch {
            stop,
            handle: Some(handle),
        }
    }

    /// A complete line read but not handed out yet (typed as a turn ended), without
    /// waiting; what is left of an unfinished line is dropped.
    pub fn take_pending_line(&self) -> Option<String> {
        let mut source = self.source();
        let line = source.pop_line();
        if line.is_none() {
            source.pending.clear();
        }
        line
    }

    fn ended(&self) -> bool {
        self.source().ended
    }

    fn source(&self) -> MutexGuard<'_, Source> {
        self.shared
            .source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// An open consent question (see [`TerminalInput::question`]).
pub struct QuestionGuard {
    input: TerminalInput,
    /// Echo on while the question is open (when a turn had it off).
    _echo: Option<crate::terminal_echo::Asking>,
}

impl Drop for QuestionGuard {
    fn drop(&mut self) {
        self.input.shared.questions.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The lines of a [`TerminalInput`] as a [`BufRead`] that ends when its reader stops.
pub struct Lines<F> {
    input: TerminalInput,
    stop: F,
    /// The current line, with its `\n`.
    line: Vec<u8>,
    /// How much of it was consumed.
    at: usize,
}

impl<F: Fn() -> bool> Read for Lines<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let count = available.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..count), available.get(..count)) {
            to.copy_from_slice(from);
        }
        self.consume(count);
        Ok(count)
    }
}

impl<F: Fn() -> bool> BufRead for Lines<F> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.at >= self.line.len() {
            self.line.clear();
            self.at = 0;
            if let LineRead::Line(line) = self.input.read_line(&self.stop, Priority::Foreground) {
                self.line = line.into_bytes();
                self.line.push(b'\n');
            }
        }
        Ok(self.line.get(self.at..).unwrap_or_default())
    }

    fn consume(&mut self, amount: usize) {
        self.at = self.at.saturating_add(amount).min(self.line.len());
    }
}

/// The background reader of a running turn (see [`TerminalInput::watch`]); dropping
/// it stops the reader too, within one [`POLL_SLICE`].
pub struct Watch {
    stop: Arc<AtomicBool>,
    handle: Option<tokio::task::JoinHandle<()>>,
}

impl Watch {
    /// Stops the reader and waits until it has let go of stdin.
    pub async fn finish(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.handle.take() {
            let _ = handle.await;
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn pipe_input() -> (TerminalInput, std::io::PipeWriter) {
        let (reader, writer) = std::io::pipe().unwrap();
        (
            TerminalInput::from_fd(Some(OwnedFd::from(reader)), false),
            writer,
        )
    }

    #[test]
    fn lines_come_one_at_a_time_and_the_end_is_sticky() {
        let (input, mut writer) = pipe_input();
        writer.write_all(b"first\r\nsecond\nlast").unwrap();
        drop(writer);
        let never = || false;
        let read = |input: &TerminalInput| input.read_line(&never, Priority::Foreground);
        assert_eq!(read(&input), LineRead::Line("first".into()));
        assert_eq!(read(&input), LineRead::Line("second".into()));
        assert_eq!(read(&input), LineRead::Line("last".into()));
        assert_eq!(read(&input), LineRead::Eof);
        assert_eq!(read(&input), LineRead::Eof);
    }

    #[test]
    fn a_stopped_reader_returns_without_input_and_leaves_the_line() {
        let (input, mut writer) = pipe_input();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let input = input.clone();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                input.read_line(&|| stop.load(Ordering::SeqCst), Priority::Foreground)
            })
        };
        stop.store(true, Ordering::SeqCst);
        // Input arriving once the reader should stop is not taken, even when it
        // wakes the reader's wait: it stays for the next reader.
        writer.write_all(b"next\n").unwrap();
        assert_eq!(reader.join().unwrap(), LineRead::Stopped);
        assert_eq!(input.take_pending_line(), None);
        assert_eq!(
            input.read_line(&|| false, Priority::Foreground),
            LineRead::Line("next".into())
        );
    }

    #[test]
    fn background_readers_step_aside_for_a_question() {
        let (input, mut writer) = pipe_input();
        writer.write_all(b"y\n").unwrap();
        let question = input.question();
        assert_eq!(
            input.read_line(&|| false, Priority::Background),
            LineRead::Yielded
        );
        let mut answer = String::new();
        input.lines(|| false).read_line(&mut answer).unwrap();
        assert_eq!(answer, "y\n");
        drop(question);
        writer.write_all(b"/cancel\n").unwrap();
        assert_eq!(
            input.read_line(&|| false, Priority::Background),
            LineRead::Line("/cancel".into())
        );
    }

    #[test]
    fn a_stopped_line_reader_reads_as_end_of_input() {
        let (input, _writer) = pipe_input();
        let mut answer = String::new();
        let read = input.lines(|| true).read_line(&mut answer).unwrap();
        assert_eq!(read, 0);
    }

    #[tokio::test]
    async fn a_watch_hands_over_lines_and_lets_go_when_finished() {
        let (input, mut writer) = pipe_input();
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let watch = input.watch(move |line| {
            let _ = sender.send(line);
        });
        writer.write_all(b"/cancel\n").unwrap();
        assert_eq!(receiver.recv().await.as_deref(), Some("/cancel"));
        watch.finish().await;
        assert_eq!(input.take_pending_line(), None);
        // Nothing reads stdin any more: the next line stays for the next reader.
        writer.write_all(b"later\n").unwrap();
        assert!(receiver.try_recv().is_err());
        assert_eq!(
            input.read_line(&|| false, Priority::Foreground),
            LineRead::Line("later".into())
        );
    }
}
