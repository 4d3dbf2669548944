//! What `/proc` says of a process (its CPU time, its memory), the machine's load, and
//! the load generator's own file limit.

/// User plus system CPU seconds of process `pid` (`/proc/PID/stat`), 0 when unreadable.
pub(super) fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // After the name (which may hold spaces, in parentheses), utime and stime are the
    // 12th and 13th fields (14 and 15 of stat(5)).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|field| field.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // The clock tick is 100 Hz on every Linux this runs on (sysconf(_SC_CLK_TCK)).
    (ticks(11) + ticks(12)) / 100.0
}

/// A `kB` field of `/proc/PID/status` (`VmHWM`, `VmRSS`), 0 when unreadable.
pub(super) fn proc_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|kib| kib.parse().ok())
            })
        })
        .unwrap_or(0)
}

/// `/proc/loadavg`'s three averages.
pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "?".into())
}

/// Stops `child` as an operator would, with SIGTERM (serve finishes what is in flight
/// and exits, so a profiler wrapped around it writes its profile), and kills it when
/// it has not exited within a minute.
pub(super) fn stop(child: &mut std::process::Child) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let terminated = i32::try_from(child.id())
        .ok()
        .is_some_and(|pid| kill(Pid::from_raw(pid), Signal::SIGTERM).is_ok());
    if terminated {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Raises this process's soft file limit to its hard one: a thousand clients hold a
/// thousand sockets at once.
pub(super) fn raise_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_and_a_missing_one_is_zero() {
        let me = std::process::id();
        assert!(proc_status_kib(me, "VmHWM") > 0);
        assert!(cpu_seconds(me) >= 0.0);
        assert_eq!(proc_status_kib(u32::MAX, "VmHWM"), 0);
        assert_eq!(cpu_seconds(u32::MAX), 0.0);
        assert_eq!(proc_status_kib(me, "NoSuchField"), 0);
    }
}
