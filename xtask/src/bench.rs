//! `cargo xtask bench`: run the criterion benches and write their medians into
//! `docs/performance.md`, between the generated-table markers; and the table the
//! local-model bench (`crates/local/benches/local_decode`, a bench binary, not
//! criterion) writes, between its own markers.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const START: &str = "<!-- bench-table:start -->";
const END: &str = "<!-- bench-table:end -->";
const LOCAL_START: &str = "<!-- local-bench-table:start -->";
const LOCAL_END: &str = "<!-- local-bench-table:end -->";

/// One measured benchmark.
struct Row {
    id: String,
    median_ns: f64,
    throughput: Option<(String, f64)>,
}

/// Run the benches (optionally filtered) and rewrite the tables.
pub fn run(filter: Option<&str>) -> Result<(), String> {
    let root = crate::workspace_root();
    let target = target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"));
    // The local-model bench writes its table here; a stale one must not be taken for
    // this run's when the bench is skipped (no model, or filtered out).
    let local_table = target.join("local-bench/local_decode.md");
    if local_table.exists() {
        fs::remove_file(&local_table)
            .map_err(|e| format!("removing {}: {e}", local_table.display()))?;
    }
    let mut args = vec!["bench", "--workspace", "--benches"];
    if let Some(filter) = filter {
        args.extend(["--", filter]);
    }
    eprintln!("==> cargo {}", args.join(" "));
    let status = Command::new("cargo")
        .args(&args)
        .env("OXYDRA_BENCH_TABLE", &local_table)
        .current_dir(&root)
        .status()
        .map_err(|error| format!("could not start cargo bench: {error}"))?;
    if !status.success() {
        return Err(format!("cargo bench failed ({status})"));
    }
    let criterion_dir = target.join("criterion");
    let mut rows = Vec::new();
    collect(&criterion_dir, &mut rows)?;
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    let local = fs::read_to_string(&local_table).ok();
    if rows.is_empty() && local.is_none() {
        return Err(format!(
            "no criterion results under {} and no local-model table",
            criterion_dir.display()
        ));
    }
    let doc = root.join("docs/performance.md");
    if !rows.is_empty() {
        write_table(&doc, START, END, &render(&rows))?;
        eprintln!("==> wrote {} results to {}", rows.len(), doc.display());
    }
    match local {
        Some(table) => {
            write_table(&doc, LOCAL_START, LOCAL_END, &table)?;
            eprintln!("==> wrote the local-model table to {}", doc.display());
        }
        None => eprintln!("==> local_decode wrote no table (skipped): its section is unchanged"),
    }
    Ok(())
}

/// Cargo's target directory: `CARGO_TARGET_DIR` (relative to the workspace root, where
/// cargo is run) or `target/` under the root.
pub(crate) fn target_dir(root: &Path, configured: Option<std::ffi::OsString>) -> PathBuf {
    match configured.filter(|dir| !dir.is_empty()) {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

/// Find every `new/estimates.json` below `dir`.
fn collect(dir: &Path, rows: &mut Vec<Row>) -> Result<(), String> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(_) => return Ok(()),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") {
            if let Some(row) = read_result(&path)? {
                rows.push(row);
            }
        } else if path
            .file_name()
            .is_some_and(|n| n != "report" && n != "base")
        {
            collect(&path, rows)?;
        }
    }
    Ok(())
}

fn read_json(path: &PathBuf) -> Result<serde_json::Value, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))
}

fn read_result(new_dir: &Path) -> Result<Option<Row>, String> {
    let estimates = new_dir.join("estimates.json");
    let benchmark = new_dir.join("benchmark.json");
    if !estimates.is_file() || !benchmark.is_file() {
        return Ok(None);
    }
    let estimates = read_json(&estimates)?;
    let benchmark = read_json(&benchmark)?;
    let Some(median_ns) = estimates
        .pointer("/median/point_estimate")
        .and_then(serde_json::Value::as_f64)
    else {
        return Ok(None);
    };
    let id = benchmark
        .get("full_id")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let throughput = benchmark
        .get("throughput")
        .and_then(serde_json::Value::as_object)
        .and_then(|map| map.iter().next())
        .and_then(|(kind, amount)| amount.as_f64().map(|a| (kind.clone(), a)));
    Ok(Some(Row {
        id,
        median_ns,
        throughput,
    }))
}

fn human_time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn human_throughput(kind: &str, amount: f64, ns: f64) -> String {
    let per_sec = amount / (ns / 1e9);
    match kind {
        "Bytes" | "BytesDecimal" => format!("{:.1} MB/s", per_sec / 1e6),
        _ => format!("{per_sec:.0} elem/s"),
    }
}

fn render(rows: &[Row]) -> String {
    let mut out = String::from("| benchmark | median | throughput |\n|---|---|---|\n");
    for row in rows {
        let throughput = row
            .throughput
            .as_ref()
            .map(|(kind, amount)| human_throughput(kind, *amount, row.median_ns))
            .unwrap_or_else(|| "—".to_owned());
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            row.id,
            human_time(row.median_ns),
            throughput
        ));
    }
    out
}

/// Replace what stands between `start` and `end` in `doc` with `table` (or append the
/// markers and table).
pub(crate) fn write_table(doc: &Path, start: &str, end: &str, table: &str) -> Result<(), String> {
    let current = fs::read_to_string(doc).unwrap_or_default();
    let next = splice(&current, start, end, table);
    fs::write(doc, next).map_err(|e| format!("writing {}: {e}", doc.display()))
}

/// `current` with `table` between the markers.
fn splice(current: &str, start: &str, end: &str, table: &str) -> String {
    let block = format!("{start}\n{table}{end}");
    match current.find(start) {
        Some(at) => match current.get(at..).and_then(|rest| rest.find(end)) {
            Some(len) => {
                let before = current.get(..at).unwrap_or_default();
                let after = current.get(at + len + end.len()..).unwrap_or_default();
                format!("{before}{block}{after}")
            }
            None => format!("{current}\n{block}\n"),
        },
        None => format!("{current}\n{block}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_replaces_only_between_its_own_markers() {
        let doc = format!(
            "# P\n{START}\nold criterion\n{END}\ntext\n{LOCAL_START}\nold local\n{LOCAL_END}\ntail\n"
        );
        let next = splice(&doc, LOCAL_START, LOCAL_END, "new local\n");
        assert_eq!(
            next,
            format!(
                "# P\n{START}\nold criterion\n{END}\ntext\n{LOCAL_START}\nnew local\n{LOCAL_END}\ntail\n"
            )
        );
    }

    #[test]
    fn splice_appends_the_markers_when_missing_or_out_of_order() {
        assert_eq!(
            splice("# P\n", LOCAL_START, LOCAL_END, "t\n"),
            format!("# P\n\n{LOCAL_START}\nt\n{LOCAL_END}\n")
        );
        // An end marker before the start marker is not a section.
        let reversed = format!("{LOCAL_END}\n{LOCAL_START}\n");
        assert_eq!(
            splice(&reversed, LOCAL_START, LOCAL_END, "t\n"),
            format!("{reversed}\n{LOCAL_START}\nt\n{LOCAL_END}\n")
        );
    }

    #[test]
    fn target_dir_follows_cargo_target_dir() {
        let root = Path::new("/repo");
        assert_eq!(target_dir(root, None), PathBuf::from("/repo/target"));
        assert_eq!(
            target_dir(root, Some("".into())),
            PathBuf::from("/repo/target")
        );
        assert_eq!(
            target_dir(root, Some("/shared/t".into())),
            PathBuf::from("/shared/t")
        );
        assert_eq!(
            target_dir(root, Some("out".into())),
            PathBuf::from("/repo/out")
        );
    }
}
