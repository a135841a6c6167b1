//! The file header and the tables every other section indexes into: strings, dialects and op
//! names, the properties table, and where each attribute and type entry lies.

use super::reader::{BcError, BcResult, Reader, SECTION_NAMES};

/// Oldest and newest MLIR bytecode format versions read (MLIR's `kVersion` is 6 as of LLVM 19+;
/// 5 introduced properties, 4 elided unknown block-argument locations, 3 use-list orders).
pub const MIN_FORMAT_VERSION: u64 = 1;
pub const MAX_FORMAT_VERSION: u64 = 6;
const NATIVE_PROPERTIES: u64 = 5;
const ELIDE_UNKNOWN_BLOCK_ARG_LOCATION: u64 = 4;

pub struct Header<'a> {
    pub version: u64,
    pub producer: String,
    pub sections: [Option<Reader<'a>>; 9],
}

pub fn read_header(bytes: &[u8]) -> BcResult<Header<'_>> {
    let mut r = Reader::new(bytes, 0);
    if r.bytes(4).ok() != Some(b"ML\xEFR".as_slice()) {
        return r.error("not MLIR bytecode (no 'ML\\xEFR' magic)");
    }
    let at = r.offset();
    let version = r.varint()?;
    if !(MIN_FORMAT_VERSION..=MAX_FORMAT_VERSION).contains(&version) {
        return Err(BcError {
            offset: at,
            message: format!("MLIR bytecode format version {version} is not read (versions {MIN_FORMAT_VERSION} to {MAX_FORMAT_VERSION} are)"),
        });
    }
    let producer = String::from_utf8_lossy(r.nul_string()?).into_owned();
    let mut sections: [Option<Reader>; 9] = Default::default();
    while !r.is_empty() {
        let at = r.offset();
        let s = r.section()?;
        let slot = &mut sections[usize::from(s.id)];
        if slot.is_some() {
            return Err(BcError { offset: at, message: format!("second {} section", SECTION_NAMES[usize::from(s.id)]) });
        }
        *slot = Some(s.data);
    }
    for id in 0..5 {
        if sections[id].is_none() {
            return r.error(format!("no {} section", SECTION_NAMES[id]));
        }
    }
    Ok(Header { version, producer, sections })
}

/// The string table: lengths (each including its NUL) in reverse order, then the data.
pub fn read_strings(mut r: Reader<'_>) -> BcResult<Vec<String>> {
    let n = r.bounded_count("strings")?;
    let mut lens = Vec::with_capacity(n);
    for _ in 0..n {
        lens.push(r.count()?);
    }
    lens.reverse();
    let total: usize = lens.iter().try_fold(0usize, |a, &l| a.checked_add(l)).unwrap_or(usize::MAX);
    if total != r.remaining() {
        return r.error(format!("string lengths add up to {total} bytes, the string data has {}", r.remaining()));
    }
    let mut out = Vec::with_capacity(n);
    for len in lens {
        let at = r.offset();
        let s = r.bytes(len)?;
        match s.split_last() {
            Some((0, text)) => out.push(String::from_utf8_lossy(text).into_owned()),
            _ => return Err(BcError { offset: at, message: "string without its terminating NUL".into() }),
        }
    }
    Ok(out)
}

pub fn string_at(strings: &[String], r: &Reader<'_>, index: u64) -> BcResult<String> {
    match usize::try_from(index).ok().and_then(|i| strings.get(i)) {
        Some(s) => Ok(s.clone()),
        None => r.error(format!("string index {index} out of range ({} strings)", strings.len())),
    }
}

pub struct Dialects {
    pub names: Vec<String>,
    /// Op names as `dialect.op`, with whether the writer had the op registered.
    pub ops: Vec<(String, Option<bool>)>,
}

pub fn read_dialects(mut r: Reader<'_>, strings: &[String], version: u64) -> BcResult<Dialects> {
    let n = r.bounded_count("dialects")?;
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        let (index, versioned) = r.varint_flag()?;
        names.push(string_at(strings, &r, index)?);
        if versioned {
            // A dialect version entry (VHLO writes none: its version is the producer string).
            let s = r.section()?;
            if s.id != 7 {
                return r.error("expected a dialect version section");
            }
        }
    }
    if version >= ELIDE_UNKNOWN_BLOCK_ARG_LOCATION {
        r.varint()?; // the total number of op names, a capacity hint
    }
    let mut ops = Vec::new();
    while !r.is_empty() {
        let at = r.offset();
        let d = r.count()?;
        let dialect = names.get(d).cloned().ok_or(BcError { offset: at, message: format!("dialect index {d} out of range") })?;
        let count = r.bounded_count("op names")?;
        for _ in 0..count {
            let (name, registered) = if version >= NATIVE_PROPERTIES {
                let (i, reg) = r.varint_flag()?;
                (string_at(strings, &r, i)?, Some(reg))
            } else {
                let i = r.varint()?;
                (string_at(strings, &r, i)?, None)
            };
            ops.push((format!("{dialect}.{name}"), registered));
        }
    }
    Ok(Dialects { names, ops })
}

/// The properties section: a count, then `size, bytes` entries an op refers to by index.
pub fn read_properties(r: Option<Reader<'_>>) -> BcResult<Vec<Reader<'_>>> {
    let Some(mut r) = r else { return Ok(Vec::new()) };
    if r.is_empty() {
        return Ok(Vec::new());
    }
    let n = r.bounded_count("properties")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = r.count()?;
        out.push(r.sub(len)?);
    }
    if !r.is_empty() {
        return r.error("trailing bytes after the properties table");
    }
    Ok(out)
}

/// One attribute or type entry: its owning dialect, whether it uses the dialect's own encoding
/// (else it is MLIR assembly text) and its bytes.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub dialect: usize,
    pub custom: bool,
    pub data: Reader<'a>,
}

pub fn read_attr_type_offsets<'a>(mut offsets: Reader<'_>, data: Reader<'a>, dialects: usize) -> BcResult<(Vec<Entry<'a>>, Vec<Entry<'a>>)> {
    let n_attrs = offsets.bounded_count("attributes")?;
    let n_types = offsets.bounded_count("types")?;
    let mut data = data;
    let mut read_group = |count: usize, offsets: &mut Reader<'_>| -> BcResult<Vec<Entry<'a>>> {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let at = offsets.offset();
            let dialect = offsets.count()?;
            if dialect >= dialects {
                return Err(BcError { offset: at, message: format!("dialect index {dialect} out of range") });
            }
            let n = offsets.count()?;
            if n > count - out.len() {
                return Err(BcError { offset: at, message: "more attribute/type entries than declared".into() });
            }
            for _ in 0..n {
                let (size, custom) = offsets.varint_flag()?;
                let size = usize::try_from(size).unwrap_or(usize::MAX);
                out.push(Entry { dialect, custom, data: data.sub(size)? });
            }
        }
        Ok(out)
    };
    let attrs = read_group(n_attrs, &mut offsets)?;
    let types = read_group(n_types, &mut offsets)?;
    if !offsets.is_empty() {
        return offsets.error("trailing bytes in the attribute/type offset section");
    }
    Ok((attrs, types))
}
