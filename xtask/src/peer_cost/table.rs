//! What `peer-cost` measured, as numbers and as the table in `docs/performance.md`:
//! one run's cost, the medians over runs, the per-request overhead and the ratios of
//! oxydra to the best peer.

/// What one run cost, with the scenario server's side of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cost {
    /// User + system CPU seconds of the run's process.
    pub cpu: f64,
    /// Wall seconds from just before its spawn until it was waited for.
    pub wall: f64,
    /// Peak resident set, MiB.
    pub rss_mib: f64,
    /// Milliseconds from just before its spawn until the scenario server received the
    /// head of its first request (one `CLOCK_MONOTONIC`, read by both processes).
    pub startup_ms: f64,
    /// Seconds the scenario server spent answering the run's requests: from each
    /// request's head arriving until its response was handed on whole, summed.
    pub server: f64,
    /// Milliseconds per model request of what is left of the wall time once start-up
    /// and the server's time are taken out: [`overhead_ms`].
    pub overhead_ms: f64,
}

/// The client's own time per model request, in milliseconds: the wall time less the
/// start-up and less the server's time answering, over the `requests` it made. What
/// remains is the client's work between the requests (reading each answer, running
/// the tools, building the next request) and its exit after the last.
pub(crate) fn overhead_ms(wall: f64, startup_ms: f64, server: f64, requests: usize) -> f64 {
    if requests == 0 {
        return f64::NAN;
    }
    let left = wall - startup_ms / 1000.0 - server;
    // usize to f64: exact for any request count a run makes.
    left * 1000.0 / requests as f64
}

/// The median of each measure over `costs` (each column on its own).
pub(crate) fn medians(costs: &[Cost]) -> Cost {
    let column = |pick: fn(&Cost) -> f64| crate::tasks::median(costs.iter().map(pick).collect());
    Cost {
        cpu: column(|c| c.cpu),
        wall: column(|c| c.wall),
        rss_mib: column(|c| c.rss_mib),
        startup_ms: column(|c| c.startup_ms),
        server: column(|c| c.server),
        overhead_ms: column(|c| c.overhead_ms),
    }
}

/// One row of the table: who ran, what it does, its medians.
pub(crate) struct Row {
    /// `oxydra run`, `rig 0.44`, …
    pub label: String,
    /// What the side does on the scenario (streams, persists, tools in parallel, …).
    pub what: String,
    pub median: Cost,
}

/// What the table's caption says about the measurement.
pub(crate) struct Context {
    pub rounds: usize,
    pub when: String,
    pub commit: String,
    pub load: String,
    pub requests: usize,
}

/// A column: its heading, how a cost gives it, its decimals.
type Column = (&'static str, fn(&Cost) -> f64, usize);

/// The columns, in order.
const COLUMNS: [Column; 6] = [
    ("CPU s (user + sys)", |c| c.cpu, 3),
    ("wall s", |c| c.wall, 3),
    ("peak RSS MiB", |c| c.rss_mib, 1),
    ("start-up ms", |c| c.startup_ms, 1),
    ("server s", |c| c.server, 3),
    ("overhead ms per request", |c| c.overhead_ms, 2),
];

/// The columns whose ratio is bold: the targets of issue 50 (CPU and peak RSS).
const TARGETED: [usize; 2] = [0, 2];

/// The lowest of the peers' medians in one column and whose it is; `None` without peers.
fn best(peers: &[Row], pick: fn(&Cost) -> f64) -> Option<(f64, &str)> {
    peers
        .iter()
        .map(|row| (pick(&row.median), row.label.as_str()))
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

/// `a / b`, or NaN when `b` is not above zero (no ratio rather than infinity).
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

/// The table: oxydra's row, each peer's, and oxydra's ratio to the best peer of each
/// column (the peer named), with how they were measured.
pub(crate) fn render(ours: &Row, peers: &[Row], context: &Context) -> String {
    let mut out = format!(
        "Medians of {} interleaved rounds (each round runs every side once, the order \
         rotating), whole process, measured {} on {} (load average {}). Overhead per \
         request = (wall − start-up − server) / {} model requests.\n\n",
        context.rounds, context.when, context.commit, context.load, context.requests
    );
    out.push_str("| |");
    for (heading, _, _) in COLUMNS {
        out.push_str(&format!(" {heading} |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(COLUMNS.len()));
    out.push('\n');
    for row in std::iter::once(ours).chain(peers) {
        out.push_str(&format!("| {} ({}) |", row.label, row.what));
        for (_, pick, decimals) in COLUMNS {
            out.push_str(&format!(" {:.*} |", decimals, pick(&row.median)));
        }
        out.push('\n');
    }
    out.push_str("| oxydra ÷ best peer |");
    for (index, (_, pick, _)) in COLUMNS.into_iter().enumerate() {
        let cell = match best(peers, pick) {
            Some((theirs, whose)) => {
                let value = format!("{:.2}", ratio(pick(&ours.median), theirs));
                let value = if TARGETED.contains(&index) {
                    format!("**{value}**")
                } else {
                    value
                };
                format!("{value} ({whose})")
            }
            None => "–".to_owned(),
        };
        out.push_str(&format!(" {cell} |"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(cpu: f64, rss_mib: f64, startup_ms: f64) -> Cost {
        Cost {
            cpu,
            wall: 0.1,
            rss_mib,
            startup_ms,
            server: 0.05,
            overhead_ms: 1.0,
        }
    }

    fn row(label: &str, median: Cost) -> Row {
        Row {
            label: label.into(),
            what: "x".into(),
            median,
        }
    }

    fn context() -> Context {
        Context {
            rounds: 9,
            when: "2026-11-30 07:00 UTC".into(),
            commit: "abc1234".into(),
            load: "1.5 before, 1.7 after".into(),
            requests: 21,
        }
    }

    #[test]
    fn the_overhead_is_what_is_left_of_the_wall_per_request() {
        // 0.100 s wall, 4 ms start-up, 0.054 s answering: 42 ms over 21 requests.
        let overhead = overhead_ms(0.100, 4.0, 0.054, 21);
        assert!((overhead - 2.0).abs() < 1e-9, "{overhead}");
        // A server slower than the run's wall (overlapping answers) goes negative,
        // not silently to zero.
        assert!(overhead_ms(0.010, 1.0, 0.020, 21) < 0.0);
        assert!(overhead_ms(0.1, 1.0, 0.05, 0).is_nan());
    }

    #[test]
    fn medians_are_taken_per_measure() {
        let costs = [
            Cost {
                cpu: 3.0,
                wall: 1.0,
                rss_mib: 10.0,
                startup_ms: 7.0,
                server: 0.3,
                overhead_ms: 2.0,
            },
            Cost {
                cpu: 1.0,
                wall: 3.0,
                rss_mib: 30.0,
                startup_ms: 5.0,
                server: 0.1,
                overhead_ms: 3.0,
            },
            Cost {
                cpu: 2.0,
                wall: 2.0,
                rss_mib: 20.0,
                startup_ms: 6.0,
                server: 0.2,
                overhead_ms: 1.0,
            },
        ];
        assert_eq!(
            medians(&costs),
            Cost {
                cpu: 2.0,
                wall: 2.0,
                rss_mib: 20.0,
                startup_ms: 6.0,
                server: 0.2,
                overhead_ms: 2.0,
            }
        );
    }

    #[test]
    fn each_ratio_is_against_the_best_peer_of_its_column_and_names_it() {
        let ours = row("oxydra run", cost(0.030, 12.0, 4.0));
        let peers = [
            row("rig", cost(0.060, 16.0, 2.0)),
            row("adk", cost(0.100, 15.0, 100.0)),
        ];
        let table = render(&ours, &peers, &context());
        assert!(
            table.starts_with("Medians of 9 interleaved rounds"),
            "{table}"
        );
        assert!(table.contains("load average 1.5 before, 1.7 after"));
        assert!(table.contains("/ 21 model requests"));
        assert!(table.contains("| oxydra run (x) | 0.030 | 0.100 | 12.0 | 4.0 | 0.050 | 1.00 |"));
        assert!(table.contains("| adk (x) | 0.100 | 0.100 | 15.0 | 100.0 | 0.050 | 1.00 |"));
        // CPU against rig's, RSS against adk's, start-up against rig's; bold where
        // issue 50 sets a target.
        assert!(
            table.contains(
                "| oxydra ÷ best peer | **0.50** (rig) | 1.00 (rig) | **0.80** (adk) | 2.00 (rig) |"
            ),
            "{table}"
        );
        let lines: Vec<&str> = table.lines().collect();
        // The caption, a blank line, the head, its rule, three sides and the ratios.
        assert_eq!(lines.len(), 8, "{table}");
    }

    #[test]
    fn without_peers_or_with_a_zero_the_ratio_says_so() {
        let zero = Cost {
            cpu: 0.0,
            wall: 0.0,
            rss_mib: 0.0,
            startup_ms: 0.0,
            server: 0.0,
            overhead_ms: 0.0,
        };
        let alone = render(&row("oxydra run", zero), &[], &context());
        assert!(
            alone.contains("| oxydra ÷ best peer | – | – | – | – | – | – |"),
            "{alone}"
        );
        let against_zero = render(&row("oxydra run", zero), &[row("rig", zero)], &context());
        assert!(against_zero.contains("| **NaN** (rig) | NaN (rig) | **NaN** (rig) |"));
    }
}
