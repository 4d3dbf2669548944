//! `crates/cli/data-order.txt`: the read-only data a run of the 20-turn scenario reads,
//! as the names of the input sections that hold it, written by `cargo xtask
//! symbol-order` beside the function list and turned into a linker script by
//! `crates/cli/build/data_order.rs` (docs/performance.md, "The read-only data a run
//! reads, placed together").
//!
//! Callgrind names functions, not data, so the data is recorded from a second run under
//! valgrind's lackey with `--trace-mem=yes`, which prints the address of every load and
//! store. Its log also says where valgrind loaded the binary (`svma …, avma …` after
//! `Reading syms from` the binary, at verbosity 3), so each address is turned back into
//! one of the binary's own. lld's link map (`-Map`, which `crates/cli/build.rs` asks
//! for) says which input section holds it. Sections lld merges (`<internal>`: string
//! literals of C, constants of 4 to 32 bytes) cannot be placed one by one, and a table
//! larger than [`LARGEST`] of which the run read no more than half the pages keeps its
//! own place (placed among the rest, the pages it is not read at would spread them).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::scenario_profile;

/// The list, relative to the workspace root.
pub(crate) const LIST: &str = "crates/cli/data-order.txt";

/// The largest section listed whatever share of it the run read, in bytes: Linux maps
/// 64 KiB around a page a process touches.
pub(crate) const LARGEST: u64 = 64 * 1024;

/// The page size the share of a larger section is counted in.
const PAGE: u64 = 4096;

/// One input section of the link map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputSection {
    pub(crate) address: u64,
    pub(crate) size: u64,
    /// The object it came from (`<internal>` for one lld made, such as merged strings).
    pub(crate) file: String,
    pub(crate) name: String,
}

/// What lld's map says of the binary: the input sections of its read-only data output
/// sections (`.rodata` and any `.rodata.*`, such as the `.rodata.hot` a data order
/// makes), by address, and the address of `.text`.
#[derive(Debug, Default)]
pub(crate) struct LinkMap {
    pub(crate) sections: Vec<InputSection>,
    pub(crate) text: Option<u64>,
}

/// Reads lld's map (`VMA LMA Size Align Out In Symbol`): an output section's line has
/// one space before its name, an input section's nine, a symbol's seventeen.
pub(crate) fn read_map(text: &str) -> LinkMap {
    let mut map = LinkMap::default();
    let mut read_only = false;
    for line in text.lines() {
        let (fields, rest) = leading_fields(line);
        let [address, _lma, size, _align] = fields;
        let (Ok(address), Ok(size)) = (
            u64::from_str_radix(address, 16),
            u64::from_str_radix(size, 16),
        ) else {
            continue;
        };
        let name = rest.trim_start();
        match rest.len() - name.len() {
            1 => {
                read_only = name == ".rodata" || name.starts_with(".rodata.");
                if name == ".text" {
                    map.text = Some(address);
                }
            }
            9 if read_only => {
                if let Some((file, section)) = name.rsplit_once(":(") {
                    map.sections.push(InputSection {
                        address,
                        size,
                        file: file.to_owned(),
                        name: section.trim_end_matches(')').to_owned(),
                    });
                }
            }
            _ => {}
        }
    }
    map.sections.sort_by_key(|section| section.address);
    map
}

/// The first four space-separated fields of `line`, and what follows them with its
/// leading spaces.
fn leading_fields(line: &str) -> ([&str; 4], &str) {
    let mut rest = line;
    let mut fields = [""; 4];
    for field in &mut fields {
        rest = rest.trim_start();
        let (head, tail) = rest.split_at(rest.find(' ').unwrap_or(rest.len()));
        *field = head;
        rest = tail;
    }
    (fields, rest)
}

/// Reads lackey's trace of the binary: which bytes of `[low, high)` (the binary's own
/// addresses) the run read or modified.
#[derive(Debug)]
pub(crate) struct Trace {
    /// `Reading syms from BINARY`, the line after which valgrind says where it loaded
    /// the binary; made once, since every line of the trace is compared with it.
    loading: String,
    low: u64,
    /// Valgrind's load address less the binary's own, once read.
    bias: Option<u64>,
    /// The binary's own address of its code, as valgrind read it.
    text: Option<u64>,
    awaiting_bias: bool,
    touched: Vec<bool>,
}

impl Trace {
    /// A trace of `binary` (its canonical path, as valgrind names it) that keeps what
    /// falls in `[low, high)`.
    pub(crate) fn new(binary: &Path, low: u64, high: u64) -> Self {
        Trace {
            loading: format!("Reading syms from {}", binary.display()),
            low,
            bias: None,
            text: None,
            awaiting_bias: false,
            touched: vec![false; usize::try_from(high.saturating_sub(low)).unwrap_or(0)],
        }
    }

    /// One line of valgrind's log.
    pub(crate) fn line(&mut self, line: &str) {
        if let Some(access) = line
            .strip_prefix(" L ")
            .or_else(|| line.strip_prefix(" M "))
        {
            self.access(access);
        } else if line.ends_with(&self.loading) {
            self.awaiting_bias = self.bias.is_none();
        } else if self.awaiting_bias
            && let Some((svma, avma)) = svma_avma(line)
        {
            self.bias = avma.checked_sub(svma);
            self.text = Some(svma);
            self.awaiting_bias = false;
        }
    }

    /// `ADDRESS,SIZE` in hex and decimal.
    fn access(&mut self, access: &str) {
        let Some(bias) = self.bias else {
            return;
        };
        let Some((address, size)) = access.split_once(',') else {
            return;
        };
        let (Ok(address), Ok(size)) = (
            u64::from_str_radix(address.trim(), 16),
            size.trim().parse::<u64>(),
        ) else {
            return;
        };
        let Some(own) = address.checked_sub(bias) else {
            return;
        };
        for byte in own..own.saturating_add(size) {
            let Some(offset) = byte.checked_sub(self.low) else {
                continue;
            };
            // Past the range, `get_mut` finds nothing.
            let index = usize::try_from(offset).unwrap_or(usize::MAX);
            if let Some(seen) = self.touched.get_mut(index) {
                *seen = true;
            }
        }
    }

    /// Whether any byte of `[address, address + size)` was read.
    fn any(&self, address: u64, size: u64) -> bool {
        let start = address.saturating_sub(self.low);
        let end = address.saturating_add(size).saturating_sub(self.low);
        let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
            return false;
        };
        self.touched
            .get(start..end.min(self.touched.len()))
            .is_some_and(|bytes| bytes.iter().any(|&seen| seen))
    }

    /// Whether the run read a byte of `[address, address + size)` at all, and, for a
    /// section larger than [`LARGEST`], in more than half of its pages.
    fn read_enough(&self, address: u64, size: u64) -> bool {
        if size <= LARGEST {
            return self.any(address, size);
        }
        let pages = size.div_ceil(PAGE);
        let read = (0..pages)
            .filter(|page| {
                let start = address.saturating_add(page.saturating_mul(PAGE));
                let end = address.saturating_add(size).min(start.saturating_add(PAGE));
                self.any(start, end.saturating_sub(start))
            })
            .count();
        u64::try_from(read).unwrap_or(u64::MAX).saturating_mul(2) > pages
    }
}

/// `svma 0x…, avma 0x…` from valgrind's verbose log.
fn svma_avma(line: &str) -> Option<(u64, u64)> {
    let rest = line.split_once("svma 0x")?.1;
    let (svma, rest) = rest.split_once(", avma 0x")?;
    let avma = rest.split_whitespace().next()?;
    Some((
        u64::from_str_radix(svma, 16).ok()?,
        u64::from_str_radix(avma, 16).ok()?,
    ))
}

/// The names, sorted and each once, of the sections of `map` the `trace` read
/// ([`Trace::read_enough`]) that a linker script can place: not merged by lld, and
/// named with nothing a script would read as syntax (the bare `.rodata` of a C object
/// would match every object's).
pub(crate) fn read_sections(map: &LinkMap, trace: &Trace) -> Vec<String> {
    let names: BTreeSet<&str> = map
        .sections
        .iter()
        .filter(|section| section.file != "<internal>")
        .filter(|section| section.name.starts_with(".rodata.") && placeable(&section.name))
        .filter(|section| trace.read_enough(section.address, section.size))
        .map(|section| section.name.as_str())
        .collect();
    names.into_iter().map(str::to_owned).collect()
}

/// Whether a linker script pattern would match `name` and nothing else.
fn placeable(name: &str) -> bool {
    name.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'))
}

/// The link map of the release `oxydra` in `target`: the newest `oxydra.map` its build
/// script's output directories hold.
pub(crate) fn link_map(target: &Path) -> Result<PathBuf, String> {
    let build = target.join("release/build");
    let entries = std::fs::read_dir(&build).map_err(|e| format!("{}: {e}", build.display()))?;
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("oxydra-cli-")
        })
        .map(|entry| entry.path().join("out/oxydra.map"))
        .filter_map(|path| {
            let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
            Some((modified, path))
        })
        .max()
        .map(|(_, path)| path)
        .ok_or_else(|| {
            format!(
                "no oxydra.map under {}: build the release oxydra (its build script asks \
                 lld for the map)",
                build.display()
            )
        })
}

/// Runs the scenario `runs` times under lackey and returns the sections of the
/// binary's read-only data any of them read, as [`read_sections`] lists them (runs
/// differ by a few dozen: a thread's timing takes one path or another).
pub(crate) fn record(
    oxydra: &Path,
    server: &Path,
    scratch: &Path,
    map_path: &Path,
    runs: usize,
) -> Result<Vec<String>, String> {
    let text =
        std::fs::read_to_string(map_path).map_err(|e| format!("{}: {e}", map_path.display()))?;
    let map = read_map(&text);
    let low = map.sections.first().map(|s| s.address).unwrap_or_default();
    let high = map
        .sections
        .iter()
        .map(|s| s.address.saturating_add(s.size))
        .max()
        .unwrap_or_default();
    if high <= low {
        return Err(format!(
            "{}: no read-only data sections",
            map_path.display()
        ));
    }
    let binary = std::fs::canonicalize(oxydra).map_err(|e| format!("{}: {e}", oxydra.display()))?;
    let mut names = BTreeSet::new();
    let tool = [
        "--tool=lackey",
        "--trace-mem=yes",
        "--log-fd=2",
        "-v",
        "-v",
        "-v",
    ]
    .map(str::to_owned);
    for _ in 0..runs {
        let mut trace = Trace::new(&binary, low, high);
        scenario_profile::run_scenario(&binary, server, scratch, &tool, &mut |line| {
            trace.line(line)
        })?;
        let _ = std::fs::remove_dir_all(scratch);
        if trace.bias.is_none() {
            return Err(format!(
                "valgrind's log never said where it loaded {}",
                binary.display()
            ));
        }
        if trace.text != map.text {
            return Err(format!(
                "{} does not describe {} (its code starts at {:?}, valgrind read {:?}): \
                 rebuild the release binary",
                map_path.display(),
                binary.display(),
                map.text,
                trace.text
            ));
        }
        names.extend(read_sections(&map, &trace));
    }
    Ok(names.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "\
             VMA              LMA     Size Align Out     In      Symbol
             2e0              2e0       1c     1 .interp
             2e0              2e0       1c     1         <internal>:(.interp)
          110000           110000     2000 65536 .rodata
          110000           110000       40     4         /t/oxydra.rcgu.o:(.rodata..Lanon.abc.1)
          110040           110040      100    16         <internal>:(.rodata.str1.1)
          110140           110140       20     4         /t/oxydra.rcgu.o:(.rodata._ZN4main17hE)
          110140           110140       20     1                 main::TABLE
          110160           110160      ea0     4         /t/libsqlite3.a(sqlite3.o):(.rodata.yy_action)
          111000           111000     1000     4         /t/libc.a(x.o):(.rodata)
          200000           200000     3000    64 .text
          200000           200000     3000    64         /t/oxydra.rcgu.o:(.text.main)
";

    #[test]
    fn the_map_gives_the_read_only_input_sections_and_where_code_starts() {
        let map = read_map(MAP);
        let names: Vec<&str> = map.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                ".rodata..Lanon.abc.1",
                ".rodata.str1.1",
                ".rodata._ZN4main17hE",
                ".rodata.yy_action",
                ".rodata"
            ]
        );
        assert_eq!(
            map.sections.get(3).map(|s| (s.address, s.size)),
            Some((0x110160, 0xea0))
        );
        assert_eq!(map.text, Some(0x200000));
    }

    #[test]
    fn reads_are_moved_back_by_valgrinds_bias_and_named_by_section() {
        let map = read_map(MAP);
        let mut trace = Trace::new(Path::new("/bin/oxydra"), 0x110000, 0x112000);
        for line in [
            // Before the bias is known an address means nothing.
            " L 00218000,8",
            "--1-- Reading syms from /bin/oxydra",
            "--1--    svma 0x0000200000, avma 0x0000308000",
            // The anonymous constant, the merged strings, the C table, the bare
            // `.rodata`: only the first and the third are placeable.
            " L 00218000,8",
            " M 00218040,4",
            " L 00218200,2",
            " L 00219010,8",
            // A store into the code, outside the range.
            " S 00308000,8",
            "I  00308000,3",
        ] {
            trace.line(line);
        }
        assert_eq!(trace.text, Some(0x200000));
        assert_eq!(
            read_sections(&map, &trace),
            [".rodata..Lanon.abc.1", ".rodata.yy_action"]
        );
    }

    #[test]
    fn a_large_section_is_placed_only_when_most_of_its_pages_were_read() {
        let size = 4 * LARGEST;
        let pages = size / PAGE;
        let mut trace = Trace::new(Path::new("/bin/oxydra"), 0, size);
        trace.line("--1-- Reading syms from /bin/oxydra");
        trace.line("--1--    svma 0x1000, avma 0x1000");
        for page in 0..pages / 2 {
            trace.line(&format!(" L {:x},1", page * PAGE));
        }
        assert!(!trace.read_enough(0, size), "half is not more than half");
        trace.line(&format!(" L {:x},1", (pages - 1) * PAGE + 5));
        assert!(trace.read_enough(0, size));
        // A small section counts with a single byte.
        assert!(trace.read_enough(0, 1));
        assert!(!trace.read_enough(size - 1, 1));
    }

    #[test]
    fn garbled_lines_change_nothing() {
        let mut trace = Trace::new(Path::new("/bin/oxydra"), 0x10, 0x20);
        for line in [
            "--1-- Reading syms from /bin/oxydra",
            "--1--    svma 0xzz, avma 0x10",
            "--1--    svma 0x0, avma 0x0",
            " L zz,8",
            " L 18,",
            " L 18",
            " L ffffffffffffffff,8",
            // Past the range's end and before its start.
            " L 20,4",
            " L 8,8",
        ] {
            trace.line(line);
        }
        assert!(!trace.any(0x10, 0x10));
    }

    #[test]
    fn a_name_a_script_would_misread_is_not_placed() {
        assert!(placeable(".rodata._ZN4core3fmt3num3imp$LT$impl$GT$17h0E"));
        assert!(!placeable(".rodata.a*b"));
        assert!(!placeable(".rodata.a b"));
        assert!(!placeable(".rodata.(x)"));
    }
}
