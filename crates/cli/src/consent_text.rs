//! The words of a consent question (see [`crate::consent`]): what the call will do (the
//! tool's [`CallPreview`](oxydra::tools::CallPreview): the command, the URL, a diff
//! against the current file; not the raw JSON arguments), what `[a]lways` would cover
//! (the request's scope), and how long the question waits. Everything that comes from
//! the model or a file is shown through the terminal sanitizer, one escaped line at a
//! time.

use std::io::Write;
use std::time::Duration;

use oxydra::executor::{PermissionRequest, PermissionScope};

use crate::terminal_text::one_line as escape;

/// What `[a]lways` covers for `tool` with `scope`, after the words `"[a]lways:"`.
pub fn always_covers(tool: &str, scope: PermissionScope) -> String {
    let tool = escape(tool);
    match scope {
        PermissionScope::Session => format!("every {tool} call in this session"),
        PermissionScope::Arguments => {
            format!("{tool} with exactly these arguments, in this session")
        }
        PermissionScope::Tool => format!("every {tool} call, in any session, until oxydra exits"),
    }
}

/// `wait` in a person's units: `24 h`, `10 min`, `90 s`, `1 h 30 min`.
pub fn human_duration(wait: Duration) -> String {
    let secs = wait.as_secs();
    let (hours, minutes, seconds) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut parts = Vec::new();
    if hours > 0 {
        parts.push(format!("{hours} h"));
    }
    if minutes > 0 {
        parts.push(format!("{minutes} min"));
    }
    if seconds > 0 || parts.is_empty() {
        parts.push(format!("{seconds} s"));
    }
    parts.join(" ")
}

/// Writes the question's head: who asks and why, what will happen (the preview, each
/// line escaped and indented), what each answer does, and how long the question waits.
pub fn write_question(
    out: &mut impl Write,
    request: &PermissionRequest,
    waits: Duration,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{} ({}) asks for permission{}:",
        escape(&request.tool_name),
        request.tier.as_str(),
        if request.reason.is_empty() {
            String::new()
        } else {
            format!(" — {}", escape(&request.reason))
        }
    )?;
    for line in request.preview.to_text().lines() {
        writeln!(out, "    {}", escape(line))?;
    }
    writeln!(
        out,
        "  [y]es: run it once · [a]lways: {} · [n]o: refuse (`n WHY` tells the model why)",
        always_covers(&request.tool_name, request.scope)
    )?;
    writeln!(
        out,
        "  (waits up to {} for your answer; the turn's timeout stands still meanwhile)",
        human_duration(waits)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_a_persons_units() {
        assert_eq!(human_duration(Duration::from_secs(86_400)), "24 h");
        assert_eq!(human_duration(Duration::from_secs(600)), "10 min");
        assert_eq!(human_duration(Duration::from_secs(90)), "1 min 30 s");
        assert_eq!(human_duration(Duration::from_secs(5_400)), "1 h 30 min");
        assert_eq!(human_duration(Duration::ZERO), "0 s");
    }

    #[test]
    fn always_says_what_it_covers() {
        assert_eq!(
            always_covers("shell_exec", PermissionScope::Session),
            "every shell_exec call in this session"
        );
        assert!(always_covers("t", PermissionScope::Arguments).contains("exactly these"));
        assert!(always_covers("t", PermissionScope::Tool).contains("any session"));
        assert_eq!(
            always_covers("a\u{1b}[2Jb", PermissionScope::Session),
            "every a\\u{1b}[2Jb call in this session"
        );
    }
}
