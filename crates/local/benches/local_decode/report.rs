//! The comparison table: embedded model against llama.cpp over HTTP.

use crate::measure::Spread;

/// The summaries of one side.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Decode speed, tokens/s.
    pub decode: Option<Spread>,
    /// Time to the first token of a fresh prompt, ms.
    pub fresh: Option<Spread>,
    /// Time to the first token of the next turn of a conversation, ms.
    pub next: Option<Spread>,
    /// Wall time of a whole `complete` call of the next turn, ms.
    pub turn: Option<Spread>,
}

/// Picks one measure out of a side's summary.
type Pick = fn(&Summary) -> Option<Spread>;

/// What stands under the table.
pub struct Conditions {
    pub model: String,
    pub threads: u32,
    pub runs: usize,
    pub decode_tokens: u32,
    pub turn_tokens: u32,
    /// Prompt tokens of the fresh prompt as each side reported them.
    pub prompt_tokens: (u64, Option<u64>),
    /// Output tokens of the per-turn call, median, as each side reported them.
    pub turn_output: (u64, Option<u64>),
    /// `/proc/loadavg`'s one-minute figure before and after.
    pub load: (Option<f64>, Option<f64>),
}

/// The markdown table and the lines under it.
pub fn render(embedded: &Summary, http: Option<&Summary>, conditions: &Conditions) -> String {
    let c = conditions;
    let rows: [(String, Pick, Unit); 4] = [
        (
            format!("decode, {} tokens", c.decode_tokens),
            |s| s.decode,
            Unit::PerSecond,
        ),
        (
            format!(
                "time to first token, fresh {}-token prompt",
                c.prompt_tokens.0
            ),
            |s| s.fresh,
            Unit::Millis,
        ),
        (
            "time to first token, next turn (KV cache reused)".to_owned(),
            |s| s.next,
            Unit::Millis,
        ),
        (
            format!(
                "per-turn latency: whole `complete` of the next turn, ≤ {} tokens",
                c.turn_tokens
            ),
            |s| s.turn,
            Unit::Millis,
        ),
    ];
    let mut out = String::from(
        "| measure | embedded | llama.cpp over HTTP | embedded advantage |\n|---|---|---|---|\n",
    );
    for (label, pick, unit) in &rows {
        let ours = pick(embedded);
        let theirs = http.and_then(pick);
        let advantage = match (ours, theirs) {
            (Some(ours), Some(theirs)) => format!("{:.2}×", unit.advantage(ours, theirs)),
            _ => "—".to_owned(),
        };
        out.push_str(&format!(
            "| {label} | {} | {} | {advantage} |\n",
            unit.cell(ours),
            unit.cell(theirs)
        ));
    }
    out.push('\n');
    out.push_str(&format!(
        "Medians (min–max) of {} runs per side, the sides interleaved run by run; `{}`, \
         {} threads on both sides, greedy sampling, the same requests. Fresh prompt: {}. \
         Per-turn output: {}. Load average (1 min) {} before, {} after. \
         \"Embedded advantage\" is embedded ÷ HTTP for decode speed and HTTP ÷ embedded \
         for times: above 1× the embedded model is faster.\n",
        c.runs,
        c.model,
        c.threads,
        pair(c.prompt_tokens, "tokens"),
        pair(c.turn_output, "tokens"),
        load(c.load.0),
        load(c.load.1),
    ));
    match http {
        None => out.push_str(
            "\nllama.cpp over HTTP was not measured: `OXYDRA_BENCH_LLAMA_SERVER_URL` was unset.\n",
        ),
        Some(http) => out.push_str(&verdict(embedded, http)),
    }
    out
}

/// Whether the goal is met: ≥ 1.0× the server's decode speed and a lower
/// per-turn latency.
fn verdict(embedded: &Summary, http: &Summary) -> String {
    let decode = embedded
        .decode
        .zip(http.decode)
        .map(|(ours, theirs)| Unit::PerSecond.advantage(ours, theirs));
    let turn = embedded
        .turn
        .zip(http.turn)
        .map(|(ours, theirs)| Unit::Millis.advantage(ours, theirs));
    let met = |ratio: Option<f64>| match ratio {
        Some(r) if r >= 1.0 => "met",
        Some(_) => "not met",
        None => "not measured",
    };
    format!(
        "\nGoal ≥ 1.0× decode speed: {} ({}); lower per-turn latency: {} ({}).\n",
        met(decode),
        ratio(decode),
        met(turn),
        ratio(turn),
    )
}

fn ratio(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "—".to_owned(), |r| format!("{r:.2}×"))
}

fn pair((ours, theirs): (u64, Option<u64>), unit: &str) -> String {
    match theirs {
        Some(theirs) if theirs != ours => format!("{ours} {unit} embedded, {theirs} over HTTP"),
        _ => format!("{ours} {unit}"),
    }
}

fn load(load: Option<f64>) -> String {
    load.map_or_else(|| "?".to_owned(), |l| format!("{l:.2}"))
}

#[derive(Debug, Clone, Copy)]
enum Unit {
    PerSecond,
    Millis,
}

impl Unit {
    fn cell(self, spread: Option<Spread>) -> String {
        let Some(s) = spread else {
            return "—".to_owned();
        };
        match self {
            Unit::PerSecond => format!("{:.1} tokens/s ({:.1}–{:.1})", s.median, s.min, s.max),
            Unit::Millis => format!("{:.1} ms ({:.1}–{:.1})", s.median, s.min, s.max),
        }
    }

    /// Above 1 when the embedded side is better.
    fn advantage(self, ours: Spread, theirs: Spread) -> f64 {
        match self {
            Unit::PerSecond => ours.median / theirs.median,
            Unit::Millis => theirs.median / ours.median,
        }
    }
}
