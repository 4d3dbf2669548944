//! Throughput over this thread's CPU time, printed beside criterion's wall-time
//! figures by every parse benchmark: the figure stays fair on a machine shared with
//! other work.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// CPU time of this thread (user + system), from `/proc/thread-self/stat`; `None` off
/// Linux.
fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after_name = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime (fields 14 and 15 of stat(5)) are at 11 and 12 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Parses `input` in 4 KiB chunks with `parse` for three seconds of wall time and
/// prints the throughput over the CPU time that took, as `name (CPU time): …`.
pub fn print_throughput(name: &str, input: &[u8], parse: impl Fn(&[u8], usize) -> usize) {
    let Some(start) = thread_cpu_time() else {
        return;
    };
    let wall = Instant::now();
    let mut rounds = 0u64;
    while wall.elapsed() < Duration::from_secs(3) {
        black_box(parse(input, 4096));
        rounds += 1;
    }
    let Some(end) = thread_cpu_time() else { return };
    let cpu = (end - start).as_secs_f64().max(0.01);
    let mb = (rounds * input.len() as u64) as f64 / 1e6;
    println!(
        "{name} (CPU time): {rounds} x {} bytes in {cpu:.2} s CPU ({:.2} s wall) = {:.0} MB/s per core",
        input.len(),
        wall.elapsed().as_secs_f64(),
        mb / cpu
    );
}
