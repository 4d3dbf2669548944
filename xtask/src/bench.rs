//! `cargo xtask bench`: run the criterion benches and write their medians into
//! `docs/performance.md`, between the generated-table markers.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const START: &str = "<!-- bench-table:start -->";
const END: &str = "<!-- bench-table:end -->";

/// One measured benchmark.
struct Row {
    id: String,
    median_ns: f64,
    throughput: Option<(String, f64)>,
}

/// Run the benches (optionally filtered) and rewrite the table.
pub fn run(filter: Option<&str>) -> Result<(), String> {
    let root = crate::workspace_root();
    let mut args = vec!["bench", "--workspace", "--benches"];
    if let Some(filter) = filter {
        args.extend(["--", filter]);
    }
    eprintln!("==> cargo {}", args.join(" "));
    let status = Command::new("cargo")
        .args(&args)
        .current_dir(&root)
        .status()
        .map_err(|error| format!("could not start cargo bench: {error}"))?;
    if !status.success() {
        return Err(format!("cargo bench failed ({status})"));
    }
    let criterion_dir = root.join("target/criterion");
    let mut rows = Vec::new();
    collect(&criterion_dir, &mut rows)?;
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    if rows.is_empty() {
        return Err(format!(
            "no criterion results under {}",
            criterion_dir.display()
        ));
    }
    let doc = root.join("docs/performance.md");
    write_table(&doc, &render(&rows))?;
    eprintln!("==> wrote {} results to {}", rows.len(), doc.display());
    Ok(())
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

/// Replace what stands between the markers (or append the markers and table).
fn write_table(doc: &Path, table: &str) -> Result<(), String> {
    let current = fs::read_to_string(doc).unwrap_or_default();
    let block = format!("{START}\n{table}{END}");
    let next = match (current.find(START), current.find(END)) {
        (Some(start), Some(end)) if end > start => {
            let before = current.get(..start).unwrap_or_default();
            let after = current.get(end + END.len()..).unwrap_or_default();
            format!("{before}{block}{after}")
        }
        _ => format!("{current}\n{block}\n"),
    };
    fs::write(doc, next).map_err(|e| format!("writing {}: {e}", doc.display()))
}
