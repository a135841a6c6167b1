//! Length-prefixed fields, the encoding of cache entries, executables' records and serialized
//! executables: integers as 8 bytes little-endian, byte strings as their length then their
//! bytes. Reading checks every length against what is left, so damaged bytes give an error,
//! never a panic or an allocation sized by an unchecked length.

/// Appends fields to a byte vector.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    pub fn string(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub fn strings(&mut self, items: &[String]) {
        self.u64(items.len() as u64);
        for s in items {
            self.string(s);
        }
    }
}

/// Reads fields; every read past the end is an error, never a panic.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    pub fn usize(&mut self) -> Result<usize, String> {
        usize::try_from(self.u64()?).map_err(|_| "malformed entry".into())
    }

    /// A count of items that follow, each at least 8 bytes long: bounded by what is left,
    /// so a damaged count never asks for a huge allocation.
    pub fn count(&mut self) -> Result<usize, String> {
        let n = self.usize()?;
        if n > (self.bytes.len() - self.at) / 8 {
            return Err("malformed entry".into());
        }
        Ok(n)
    }

    pub fn u64(&mut self) -> Result<u64, String> {
        let end = self.at.checked_add(8).filter(|&e| e <= self.bytes.len()).ok_or("malformed entry")?;
        let v = u64::from_le_bytes(self.bytes[self.at..end].try_into().expect("8 bytes"));
        self.at = end;
        Ok(v)
    }

    pub fn chunk(&mut self) -> Result<&'a [u8], String> {
        let len = usize::try_from(self.u64()?).map_err(|_| "malformed entry")?;
        let end = self.at.checked_add(len).filter(|&e| e <= self.bytes.len()).ok_or("malformed entry")?;
        let chunk = &self.bytes[self.at..end];
        self.at = end;
        Ok(chunk)
    }

    pub fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.chunk()?.to_vec()).map_err(|_| "malformed text".to_string())
    }

    pub fn strings(&mut self) -> Result<Vec<String>, String> {
        (0..self.count()?).map(|_| self.string()).collect()
    }
}
