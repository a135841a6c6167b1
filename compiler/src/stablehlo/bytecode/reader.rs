//! The primitives of MLIR bytecode: a cursor over a byte range that knows its offset in the
//! file (for errors), prefix varints, signed (zigzag) varints, NUL-terminated strings and
//! sections (`id | aligned << 7`, length, alignment, 0xCB padding).
//!
//! Every read checks the remaining length first: truncated or garbage input is an error
//! naming the file offset, never a panic or an out-of-bounds slice.

/// An error at a byte offset of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BcError {
    pub offset: usize,
    pub message: String,
}

pub type BcResult<T> = Result<T, BcError>;

/// A byte range of the file being read; `base` is the range's offset in the file.
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
}

/// A section's id and contents (a sub-reader over its data).
#[derive(Debug)]
pub struct Section<'a> {
    pub id: u8,
    pub data: Reader<'a>,
}

pub const SECTION_NAMES: [&str; 9] =
    ["string", "dialect", "attribute/type", "attribute/type offset", "IR", "resource", "resource offset", "dialect versions", "properties"];

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], base: usize) -> Reader<'a> {
        Reader { data, pos: 0, base }
    }

    /// The file offset of the next byte.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    pub fn error<T>(&self, message: impl Into<String>) -> BcResult<T> {
        Err(BcError { offset: self.offset(), message: message.into() })
    }

    pub fn byte(&mut self) -> BcResult<u8> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => self.error("unexpected end of the bytecode (truncated input?)"),
        }
    }

    pub fn bytes(&mut self, n: usize) -> BcResult<&'a [u8]> {
        if n > self.remaining() {
            return self.error(format!("{n} bytes wanted, only {} remain (truncated input?)", self.remaining()));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A sub-reader over the next `n` bytes.
    pub fn sub(&mut self, n: usize) -> BcResult<Reader<'a>> {
        let base = self.offset();
        Ok(Reader::new(self.bytes(n)?, base))
    }

    /// MLIR's PrefixVarInt: the count of trailing zero bits of the first byte is the number of
    /// further bytes; a first byte of 0 means eight further bytes hold the whole value.
    pub fn varint(&mut self) -> BcResult<u64> {
        let first = self.byte()?;
        if first & 1 == 1 {
            return Ok(u64::from(first >> 1));
        }
        if first == 0 {
            let b = self.bytes(8)?;
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            return Ok(u64::from_le_bytes(w));
        }
        let extra = first.trailing_zeros() as usize;
        let rest = self.bytes(extra)?;
        let mut w = [0u8; 8];
        w[0] = first;
        w[1..=extra].copy_from_slice(rest);
        Ok(u64::from_le_bytes(w) >> (extra + 1))
    }

    /// A zigzag-encoded signed varint.
    pub fn svarint(&mut self) -> BcResult<i64> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// A varint whose low bit is a flag: `(value << 1) | flag`.
    pub fn varint_flag(&mut self) -> BcResult<(u64, bool)> {
        let v = self.varint()?;
        Ok((v >> 1, v & 1 == 1))
    }

    /// A varint used as a count or index into memory: it must fit `usize`.
    pub fn count(&mut self) -> BcResult<usize> {
        let at = self.offset();
        let v = self.varint()?;
        usize::try_from(v).map_err(|_| BcError { offset: at, message: format!("count {v} out of range") })
    }

    /// A count of items that each take at least one byte: larger than what remains is garbage
    /// (checked before anything is allocated for them).
    pub fn bounded_count(&mut self, what: &str) -> BcResult<usize> {
        let at = self.offset();
        let n = self.count()?;
        if n > self.remaining() {
            return Err(BcError { offset: at, message: format!("{n} {what} cannot fit in the {} bytes that remain", self.remaining()) });
        }
        Ok(n)
    }

    pub fn nul_string(&mut self) -> BcResult<&'a [u8]> {
        let rest = &self.data[self.pos.min(self.data.len())..];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = &rest[..n];
                self.pos += n + 1;
                Ok(s)
            }
            None => self.error("string without its terminating NUL (truncated input?)"),
        }
    }

    /// Skips alignment padding (0xCB bytes) up to a multiple of `alignment` of the file offset
    /// (the writer aligns relative to the start of its output).
    pub fn align(&mut self, alignment: u64) -> BcResult<()> {
        if alignment == 0 || !alignment.is_power_of_two() || alignment > 1 << 16 {
            return self.error(format!("alignment {alignment} is not a power of two up to 65536"));
        }
        while (self.offset() as u64) % alignment != 0 {
            let b = self.byte()?;
            if b != 0xCB {
                return Err(BcError { offset: self.offset() - 1, message: format!("expected alignment padding 0xCB, found 0x{b:02X}") });
            }
        }
        Ok(())
    }

    pub fn section(&mut self) -> BcResult<Section<'a>> {
        let at = self.offset();
        let header = self.byte()?;
        let id = header & 0x7F;
        if usize::from(id) >= SECTION_NAMES.len() {
            return Err(BcError { offset: at, message: format!("unknown section id {id}") });
        }
        let len = self.count()?;
        if header & 0x80 != 0 {
            let alignment = self.varint()?;
            self.align(alignment)?;
        }
        if len > self.remaining() {
            return Err(BcError {
                offset: at,
                message: format!("{} section of {len} bytes, only {} remain (truncated input?)", SECTION_NAMES[usize::from(id)], self.remaining()),
            });
        }
        let data = self.sub(len)?;
        Ok(Section { id, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_of_every_length() {
        // Encodings as MLIR's writer produces them (EncodingEmitter::emitVarInt).
        let cases: &[(&[u8], u64)] = &[
            (&[0x01], 0),
            (&[0xFF], 127),
            (&[0x02, 0x02], 128),
            (&[0xFE, 0xFF], (1 << 14) - 1),
            (&[0x04, 0x00, 0x02], 1 << 14),
            (&[0x00, 0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01], 0x0123_4567_89AB_CDEF),
        ];
        for (bytes, want) in cases {
            let mut r = Reader::new(bytes, 0);
            assert_eq!(r.varint().unwrap(), *want, "{bytes:02X?}");
            assert!(r.is_empty());
        }
    }

    #[test]
    fn zigzag() {
        for (raw, want) in [(0u8, 0i64), (1, -1), (2, 1), (3, -2), (4, 2)] {
            let b = [(raw << 1) | 1];
            assert_eq!(Reader::new(&b, 0).svarint().unwrap(), want);
        }
    }

    #[test]
    fn truncated_input_is_an_error_with_its_offset() {
        // A 3-byte varint with one byte present.
        let mut r = Reader::new(&[0x04, 0x00], 10);
        let e = r.varint().unwrap_err();
        assert_eq!(e.offset, 11);
        assert!(e.message.contains("truncated"), "{}", e.message);
        assert!(Reader::new(&[], 0).byte().is_err());
        assert!(Reader::new(b"abc", 0).nul_string().is_err());
        // A section longer than the input.
        let mut r = Reader::new(&[0x04, 0x09, 1, 2], 0);
        assert!(r.section().unwrap_err().message.contains("only 2 remain"));
        // Unknown section id, bad padding.
        assert!(Reader::new(&[0x0F, 0x01], 0).section().is_err());
        assert!(Reader::new(&[0x84, 0x01, 0x09, 0x00], 0).section().unwrap_err().message.contains("0xCB"));
    }

    #[test]
    fn counts_larger_than_the_input_are_refused_before_allocating() {
        let mut r = Reader::new(&[0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], 0);
        assert!(r.bounded_count("strings").is_err());
    }
}
