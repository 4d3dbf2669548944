//! A copy of a GGUF model with some metadata set: a chat template of the test's
//! choosing (`tokenizer.chat_template`), a sampling recommendation
//! (`general.sampling.*`). The tensors are copied unchanged; only the header is
//! rewritten, and the tensor data moved to its new aligned offset.
//!
//! ```no_run
//! use oxydra_test_support::gguf_metadata::{MetaValue, copy_with_metadata};
//! # fn demo(model: &std::path::Path, copy: &std::path::Path) -> std::io::Result<()> {
//! copy_with_metadata(model, copy, &[("tokenizer.chat_template", MetaValue::Str("{{ x }}".into()))])?;
//! # Ok(()) }
//! ```

use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// A metadata value to set.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    /// A string (GGUF type 8).
    Str(String),
    /// A 32-bit float (type 6).
    F32(f32),
    /// A signed 32-bit integer (type 5).
    I32(i32),
}

impl MetaValue {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::Str(text) => {
                out.extend(8u32.to_le_bytes());
                put_string(&mut out, text);
            }
            Self::F32(value) => {
                out.extend(6u32.to_le_bytes());
                out.extend(value.to_le_bytes());
            }
            Self::I32(value) => {
                out.extend(5u32.to_le_bytes());
                out.extend(value.to_le_bytes());
            }
        }
        out
    }
}

/// Copies the GGUF file `source` to `dest` with the metadata `set` (replacing keys
/// that exist, adding the others).
pub fn copy_with_metadata(source: &Path, dest: &Path, set: &[(&str, MetaValue)]) -> io::Result<()> {
    let mut file = std::fs::File::open(source)?;
    // The header is small next to the tensors; read enough of it to parse.
    let mut head = Vec::new();
    (&mut file).take(64 << 20).read_to_end(&mut head)?;
    let mut reader = Reader {
        bytes: &head,
        at: 0,
    };
    if reader.take(4)? != b"GGUF" {
        return Err(invalid("not a GGUF file"));
    }
    let version = reader.u32()?;
    if version < 2 {
        return Err(invalid("GGUF version 1 is not supported"));
    }
    let tensors = reader.u64()?;
    let kvs = reader.u64()?;
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    let mut alignment = 32u64;
    for _ in 0..kvs {
        let key = reader.string()?;
        let start = reader.at;
        let kind = reader.u32()?;
        if key == "general.alignment" && kind == 4 {
            alignment = u64::from(reader.u32()?);
        } else {
            reader.skip_value(kind)?;
        }
        let raw = head
            .get(start..reader.at)
            .ok_or_else(|| invalid("truncated"))?
            .to_vec();
        entries.push((key, raw));
    }
    let infos_start = reader.at;
    for _ in 0..tensors {
        reader.string()?;
        let dims = reader.u32()?;
        for _ in 0..dims {
            reader.u64()?;
        }
        reader.u32()?;
        reader.u64()?;
    }
    let infos = head
        .get(infos_start..reader.at)
        .ok_or_else(|| invalid("truncated"))?
        .to_vec();
    let data_start = reader.at.next_multiple_of(alignment as usize) as u64;

    for (key, value) in set {
        let raw = value.encode();
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = raw,
            None => entries.push(((*key).to_owned(), raw)),
        }
    }
    let mut header = Vec::new();
    header.extend(b"GGUF");
    header.extend(version.to_le_bytes());
    header.extend(tensors.to_le_bytes());
    header.extend((entries.len() as u64).to_le_bytes());
    for (key, raw) in &entries {
        put_string(&mut header, key);
        header.extend(raw);
    }
    header.extend(&infos);
    header.resize(header.len().next_multiple_of(alignment as usize), 0);

    let mut out = BufWriter::new(std::fs::File::create(dest)?);
    out.write_all(&header)?;
    file.seek(SeekFrom::Start(data_start))?;
    io::copy(&mut file, &mut out)?;
    out.flush()
}

fn put_string(out: &mut Vec<u8>, text: &str) {
    out.extend((text.len() as u64).to_le_bytes());
    out.extend(text.as_bytes());
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> io::Result<&[u8]> {
        let end = self.at.checked_add(n).ok_or_else(|| invalid("truncated"))?;
        let slice = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| invalid("truncated header (over 64 MiB?)"))?;
        self.at = end;
        Ok(slice)
    }

    fn u32(&mut self) -> io::Result<u32> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(
            bytes.try_into().map_err(|_| invalid("u32"))?,
        ))
    }

    fn u64(&mut self) -> io::Result<u64> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(
            bytes.try_into().map_err(|_| invalid("u64"))?,
        ))
    }

    fn string(&mut self) -> io::Result<String> {
        let len = usize::try_from(self.u64()?).map_err(|_| invalid("length"))?;
        Ok(String::from_utf8_lossy(self.take(len)?).into_owned())
    }

    fn skip_value(&mut self, kind: u32) -> io::Result<()> {
        let size = match kind {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => {
                self.string()?;
                return Ok(());
            }
            9 => {
                let item = self.u32()?;
                let count = self.u64()?;
                for _ in 0..count {
                    self.skip_value(item)?;
                }
                return Ok(());
            }
            other => return Err(invalid(&format!("unknown GGUF value type {other}"))),
        };
        self.take(size)?;
        Ok(())
    }
}
