//! Reading a callgrind profile (`callgrind.out`, valgrind's "Callgrind Format
//! Specification"): the run's total instructions executed (Ir) and each function's
//! **self** cost, what it executed itself, without its callees.
//!
//! The format, as far as this reader needs it: `events:` names the cost columns and
//! `positions:` how many position columns come before them (`line`, or `instr line`);
//! `summary:`/`totals:` hold the run's total. `ob=` names the object file of the
//! functions that follow and `fn=` starts a function; the cost lines after it
//! (`<positions> <events>`, a line number possibly relative `+N`/`-N` or `*`) are its
//! self cost. A `calls=` line is followed by exactly one cost line: the callee's
//! *inclusive* cost for that call site, which is not the caller's own and is skipped.
//! Names may be compressed: `fn=(7) name` defines number 7, a later `fn=(7)` or
//! `cfn=(7)` refers to it (`fn` and `cfn` share one table, `ob` and `cob` another).

use std::collections::BTreeMap;

/// The name a function without a symbol gets (callgrind names it by its address,
/// which moves with every build).
pub(crate) const UNNAMED: &str = "(code without a symbol)";

/// One function of a profile, as callgrind named it, and the object file holding it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Function {
    /// The object file (`ob=`), empty when the profile names none.
    pub(crate) object: String,
    /// The name as written (demangled or not, as valgrind was asked).
    pub(crate) name: String,
}

/// What a profile says: the total and every function's self cost, in Ir.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Profile {
    /// The run's total Ir (`totals:`, else `summary:`, else the sum of the self costs).
    pub(crate) total: u64,
    /// Each function's self cost; a function that appears only as a callee is absent.
    pub(crate) functions: BTreeMap<Function, u64>,
}

impl Profile {
    /// Self costs by [`stable_name`], those of functions of one name (generic
    /// instances, the same name in two objects) added together.
    pub(crate) fn stable_self_costs(&self) -> BTreeMap<String, u64> {
        let mut costs = BTreeMap::new();
        for (function, cost) in &self.functions {
            *costs.entry(stable_name(&function.name)).or_insert(0) += cost;
        }
        costs
    }
}

/// A demangled name that stays the same across builds of unchanged code: the
/// `::h<16 hex digits>` hash of a legacy-mangled Rust symbol (a hash of the crate's
/// build, not of the code) is cut off, and an address standing for a name becomes
/// [`UNNAMED`].
pub(crate) fn stable_name(name: &str) -> String {
    let is_hex = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit());
    if name.strip_prefix("0x").is_some_and(&is_hex) {
        return UNNAMED.to_owned();
    }
    match name.rsplit_once("::h") {
        Some((stem, hash)) if hash.len() == 16 && is_hex(hash) => stem.to_owned(),
        _ => name.to_owned(),
    }
}

/// The compression table of one kind of name (`fn`/`cfn` or `ob`/`cob`).
#[derive(Default)]
struct Names(BTreeMap<u64, String>);

impl Names {
    /// Resolves `(id) name` (defining id), `(id)` (a reference) or a plain `name`.
    fn resolve(&mut self, value: &str, line: usize) -> Result<String, String> {
        let Some(rest) = value.strip_prefix('(') else {
            return Ok(value.to_owned());
        };
        let (id, name) = rest
            .split_once(')')
            .ok_or_else(|| format!("line {line}: `({value}` has no closing parenthesis"))?;
        let id: u64 = id
            .parse()
            .map_err(|_| format!("line {line}: `({id})` is not a name's number"))?;
        let name = name.trim_start();
        if name.is_empty() {
            self.0
                .get(&id)
                .cloned()
                .ok_or_else(|| format!("line {line}: name ({id}) is used before it is defined"))
        } else {
            self.0.insert(id, name.to_owned());
            Ok(name.to_owned())
        }
    }
}

/// Whether `line` is a cost line: positions first, each a number, `+N`, `-N` or `*`.
fn is_cost_line(line: &str) -> bool {
    line.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'*'))
}

/// Reads a profile's text. Fails on what the format does not allow (a cost line before
/// any function, a reference to an undefined name, no `Ir` event), naming the line.
pub(crate) fn parse(text: &str) -> Result<Profile, String> {
    let mut functions_table = Names::default();
    let mut objects_table = Names::default();
    let mut object = String::new();
    let mut current: Option<Function> = None;
    let mut positions = 1usize;
    let mut ir_column: Option<usize> = None;
    let mut total = None;
    let mut skip_next_cost = false;
    let mut profile = Profile::default();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if is_cost_line(line) {
            if std::mem::take(&mut skip_next_cost) {
                continue;
            }
            let column =
                ir_column.ok_or_else(|| format!("line {number}: a cost line before `events:`"))?;
            let function = current
                .as_ref()
                .ok_or_else(|| format!("line {number}: a cost line before any `fn=`"))?;
            let field = line.split_whitespace().nth(positions + column);
            let cost = match field {
                // Trailing zero costs may be left out.
                None => 0,
                Some(field) => field
                    .parse::<u64>()
                    .map_err(|_| format!("line {number}: `{field}` is not an instruction count"))?,
            };
            *profile.functions.entry(function.clone()).or_insert(0) += cost;
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            match key {
                "ob" => object = objects_table.resolve(value, number)?,
                "cob" => drop(objects_table.resolve(value, number)?),
                "fn" => {
                    let function = Function {
                        object: object.clone(),
                        name: functions_table.resolve(value, number)?,
                    };
                    profile.functions.entry(function.clone()).or_insert(0);
                    current = Some(function);
                }
                "cfn" => drop(functions_table.resolve(value, number)?),
                "calls" => skip_next_cost = true,
                // Files (fl, fi, fe, cfi, cfl) and jumps: not needed for the costs.
                _ => {}
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim();
            match key {
                "events" => {
                    let column = value.split_whitespace().position(|event| event == "Ir");
                    ir_column = Some(column.ok_or_else(|| {
                        format!("line {number}: the events `{value}` do not include Ir")
                    })?);
                }
                "positions" => positions = value.split_whitespace().count().max(1),
                "totals" | "summary" => {
                    let column = ir_column
                        .ok_or_else(|| format!("line {number}: `{key}:` before `events:`"))?;
                    let field = value.split_whitespace().nth(column).unwrap_or("0");
                    let value = field.parse::<u64>().map_err(|_| {
                        format!("line {number}: `{field}` is not an instruction count")
                    })?;
                    // `totals:` is the last word; `summary:` comes first.
                    if key == "totals" || total.is_none() {
                        total = Some(value);
                    }
                }
                _ => {}
            }
        }
    }
    if ir_column.is_none() {
        return Err("no `events:` line: is this a callgrind profile?".to_owned());
    }
    profile.total = total.unwrap_or_else(|| profile.functions.values().sum());
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small profile: `main` calls `work` twice (the call sites' lines carry the
    /// callee's inclusive cost) and `work` calls `helper`; names compressed.
    const PROFILE: &str = "\
# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 700

ob=(1) /bin/app
fl=(1) src/main.rs
fn=(1) app::main::h0123456789abcdef
10 5
cfn=(2) app::work::hfedcba9876543210
calls=2 20
11 600
+1 15
cob=(2) /lib/libc.so.6
cfl=(2) ???
cfn=(3) memcpy
calls=1 0
12 80
fn=(2)
20 400
cfn=(4) app::helper
calls=1 30
21 200
fn=(4)
30 200
ob=(2)
fn=(3)
0 80

totals: 700
";

    fn self_cost(profile: &Profile, name: &str) -> u64 {
        profile
            .functions
            .iter()
            .filter(|(function, _)| function.name == name)
            .map(|(_, cost)| *cost)
            .sum()
    }

    #[test]
    fn self_costs_leave_out_the_inclusive_cost_of_calls() {
        let profile = parse(PROFILE).unwrap();
        assert_eq!(profile.total, 700);
        // 5 + 15 of its own; the 600 and 80 lines after `calls=` are its callees'.
        assert_eq!(self_cost(&profile, "app::main::h0123456789abcdef"), 20);
        assert_eq!(self_cost(&profile, "app::work::hfedcba9876543210"), 400);
        assert_eq!(self_cost(&profile, "app::helper"), 200);
        assert_eq!(self_cost(&profile, "memcpy"), 80);
        // Every instruction counted once: the self costs add up to the total.
        assert_eq!(profile.functions.values().sum::<u64>(), profile.total);
    }

    #[test]
    fn functions_keep_their_object_and_stable_names_drop_the_hash() {
        let profile = parse(PROFILE).unwrap();
        let memcpy = Function {
            object: "/lib/libc.so.6".into(),
            name: "memcpy".into(),
        };
        assert_eq!(profile.functions.get(&memcpy), Some(&80));
        let stable = profile.stable_self_costs();
        assert_eq!(stable.get("app::main"), Some(&20));
        assert_eq!(stable.get("app::work"), Some(&400));
        assert_eq!(stable.len(), 4);
    }

    #[test]
    fn only_a_sixteen_digit_hash_is_cut_and_addresses_become_one_name() {
        assert_eq!(stable_name("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(stable_name("a::b::hash"), "a::b::hash");
        assert_eq!(stable_name("a::b::h0123"), "a::b::h0123");
        assert_eq!(stable_name("a::h0123456789abcdeg"), "a::h0123456789abcdeg");
        assert_eq!(stable_name("0x00000000040a1b2c"), UNNAMED);
        assert_eq!(stable_name("0xnothex"), "0xnothex");
    }

    #[test]
    fn instances_of_one_name_are_added_together() {
        let text =
            "events: Ir\nfn=(1) f::h0123456789abcdef\n1 7\nfn=(2) f::h1111111111111111\n1 3\n";
        let profile = parse(text).unwrap();
        assert_eq!(profile.stable_self_costs().get("f"), Some(&10));
        // No summary: the total is the sum of the self costs.
        assert_eq!(profile.total, 10);
    }

    #[test]
    fn the_ir_column_is_found_among_other_events_and_positions() {
        let text = "positions: instr line\nevents: Dr Ir\nfn=g\n0x10 3 9 40\n+4 * 1\n";
        let profile = parse(text).unwrap();
        // 40 from the first line; the second leaves Ir out (a trailing zero).
        assert_eq!(self_cost(&profile, "g"), 40);
    }

    #[test]
    fn malformed_profiles_are_refused_with_the_line() {
        let no_events = parse("fn=f\n1 2\n").unwrap_err();
        assert!(no_events.contains("events"), "{no_events}");
        let no_fn = parse("events: Ir\n1 2\n").unwrap_err();
        assert!(no_fn.contains("line 2") && no_fn.contains("fn="), "{no_fn}");
        let undefined = parse("events: Ir\nfn=(3)\n1 2\n").unwrap_err();
        assert!(undefined.contains("(3)"), "{undefined}");
        let garbled = parse("events: Ir\nfn=f\n1 lots\n").unwrap_err();
        assert!(
            garbled.contains("line 3") && garbled.contains("lots"),
            "{garbled}"
        );
        let no_ir = parse("events: Dr Dw\n").unwrap_err();
        assert!(no_ir.contains("Ir"), "{no_ir}");
        assert!(parse("").is_err());
    }
}
