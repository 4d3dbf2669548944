//! Finding the processes a test's command started, from outside: by an argument no
//! other process on the machine has (a command in a PID namespace of its own knows
//! other pids than the machine's).

/// Whether a live process has `argument` as one of its arguments.
pub fn running_with_argument(argument: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
            cmdline
                .split(|byte| *byte == 0)
                .any(|arg| arg == argument.as_bytes())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_child_by_its_argument_and_not_after_it_ends() {
        let marker = format!("30.{}99", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg(&marker)
            .spawn()
            .unwrap();
        // The spawn returns once exec has begun; the new command line shows a moment
        // later.
        let seen = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            running_with_argument(&marker)
        });
        child.kill().unwrap();
        assert!(seen);
        child.wait().unwrap();
        assert!(!running_with_argument(&marker));
    }
}
