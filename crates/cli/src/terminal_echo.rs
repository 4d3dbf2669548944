//! The terminal's echo, off while a `chat` turn runs.
//!
//! While a turn runs the terminal is in cooked mode: what the user types would be
//! echoed by the terminal itself, over the spinner and the streaming answer. So for the
//! turn [`echo_off`] clears `ECHO` (the line discipline still gathers whole lines, and
//! Ctrl-C still interrupts); the lines typed are read by the turn's watcher. A consent
//! question turns echo back on while it is open ([`echo_while_asking`]), so the answer
//! is seen as it is typed. Echo is restored as the turn ends — on success, error,
//! cancellation or a panic unwinding through the guard — and by [`restore`], which the
//! forced exit of a second Ctrl-C calls before `exit`.
//!
//! Settings change with `TCSANOW`, never `TCSAFLUSH`: what was typed ahead stays for
//! the next reader (the line editor reads a partly typed line as if typed at its prompt).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::sys::termios::{LocalFlags, SetArg, Termios, tcgetattr, tcsetattr};

/// The terminal whose echo is off, and its settings from before.
struct Off {
    fd: OwnedFd,
    before: Termios,
}

/// The one terminal whose echo this process turned off, if any.
static OFF: Mutex<Option<Off>> = Mutex::new(None);

fn off() -> MutexGuard<'static, Option<Off>> {
    OFF.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `settings` with `ECHO` cleared.
fn without_echo(settings: &Termios) -> Termios {
    let mut quiet = settings.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    quiet
}

/// Echo is off until this is dropped (or [`restore`] is called).
#[must_use = "echo comes back when the guard is dropped"]
pub struct EchoOff(());

impl Drop for EchoOff {
    fn drop(&mut self) {
        restore();
    }
}

/// Turns echo off on the terminal `fd` (stdin) until the guard is dropped. `None`, and
/// nothing changed, when `fd` is not a terminal or echo is off already.
pub fn echo_off(fd: BorrowedFd<'_>) -> Option<EchoOff> {
    let mut slot = off();
    if slot.is_some() {
        return None;
    }
    let before = tcgetattr(fd).ok()?;
    if !before.local_flags.contains(LocalFlags::ECHO) {
        return None;
    }
    let owned = fd.try_clone_to_owned().ok()?;
    tcsetattr(&owned, SetArg::TCSANOW, &without_echo(&before)).ok()?;
    *slot = Some(Off { fd: owned, before });
    Some(EchoOff(()))
}

/// Puts the terminal's settings back as they were before [`echo_off`] (nothing to do
/// when echo is not off). Safe to call from any thread, any number of times.
pub fn restore() {
    if let Some(off) = off().take() {
        let _ = tcsetattr(off.fd.as_fd(), SetArg::TCSANOW, &off.before);
    }
}

/// Echo is on while this lives, then off again (if it still should be).
pub struct Asking(());

/// Turns echo back on for a consent question while echo is off for a turn; `None` when
/// it is not off.
pub fn echo_while_asking() -> Option<Asking> {
    let slot = off();
    let off = slot.as_ref()?;
    tcsetattr(off.fd.as_fd(), SetArg::TCSANOW, &off.before).ok()?;
    Some(Asking(()))
}

impl Drop for Asking {
    fn drop(&mut self) {
        let slot = off();
        if let Some(off) = slot.as_ref() {
            let _ = tcsetattr(off.fd.as_fd(), SetArg::TCSANOW, &without_echo(&off.before));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use nix::pty::openpty;

    fn echoes(fd: BorrowedFd<'_>) -> bool {
        tcgetattr(fd)
            .unwrap()
            .local_flags
            .contains(LocalFlags::ECHO)
    }

    // One test: the state is the process's.
    #[test]
    fn echo_goes_off_comes_back_for_questions_and_is_restored() {
        let pty = openpty(None, None).unwrap();
        let terminal = pty.slave.as_fd();
        assert!(echoes(terminal));

        let guard = echo_off(terminal).unwrap();
        assert!(!echoes(terminal));
        assert!(
            tcgetattr(terminal)
                .unwrap()
                .local_flags
                .contains(LocalFlags::ICANON),
            "lines are still gathered"
        );
        // Only one owner at a time.
        assert!(echo_off(terminal).is_none());
        {
            let _asking = echo_while_asking().unwrap();
            assert!(echoes(terminal));
        }
        assert!(!echoes(terminal));
        drop(guard);
        assert!(echoes(terminal));
        assert!(echo_while_asking().is_none());

        // The exit path restores without the guard; dropping it later changes nothing.
        let guard = echo_off(terminal).unwrap();
        restore();
        assert!(echoes(terminal));
        drop(guard);
        assert!(echoes(terminal));

        // Not a terminal: nothing to do.
        let (reader, _writer) = std::io::pipe().unwrap();
        assert!(echo_off(reader.as_fd()).is_none());
    }
}
