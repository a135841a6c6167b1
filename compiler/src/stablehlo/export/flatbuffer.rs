//! Just enough of the FlatBuffers wire format to read one table's scalar, string, byte-vector
//! and string-vector fields: a table starts with a signed offset back to its vtable, the
//! vtable lists each field's offset in the table (0: absent, the default applies), and
//! strings and vectors are reached through unsigned offsets relative to where they are
//! stored. Every offset is bounds-checked, so a corrupt file is an error, never a panic.

pub type FbResult<T> = Result<T, String>;

pub struct Table<'a> {
    buf: &'a [u8],
    at: usize,
    vtable: usize,
    vtable_len: usize,
}

fn u16_at(buf: &[u8], at: usize) -> FbResult<u16> {
    buf.get(at..at.checked_add(2).ok_or("offset overflow")?).map(|b| u16::from_le_bytes([b[0], b[1]])).ok_or_else(|| format!("offset {at} is past the end of the file ({} bytes)", buf.len()))
}

fn u32_at(buf: &[u8], at: usize) -> FbResult<u32> {
    buf.get(at..at.checked_add(4).ok_or("offset overflow")?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| format!("offset {at} is past the end of the file ({} bytes)", buf.len()))
}

/// The target of the unsigned offset stored at `at`.
fn follow(buf: &[u8], at: usize) -> FbResult<usize> {
    let off = u32_at(buf, at)? as usize;
    at.checked_add(off).filter(|&t| t < buf.len()).ok_or_else(|| format!("offset at {at} points past the end of the file"))
}

impl<'a> Table<'a> {
    /// The root table of a buffer.
    pub fn root(buf: &'a [u8]) -> FbResult<Table<'a>> {
        let at = follow(buf, 0)?;
        Table::at(buf, at)
    }

    fn at(buf: &'a [u8], at: usize) -> FbResult<Table<'a>> {
        let soff = u32_at(buf, at)? as i32;
        let vtable = (at as i64).checked_sub(i64::from(soff)).filter(|&v| v >= 0 && (v as usize) < buf.len()).ok_or_else(|| format!("table at {at} has its vtable outside the file"))? as usize;
        let vtable_len = usize::from(u16_at(buf, vtable)?);
        if vtable_len < 4 || vtable.checked_add(vtable_len).is_none_or(|e| e > buf.len()) {
            return Err(format!("vtable at {vtable} of length {vtable_len} does not fit the file"));
        }
        Ok(Table { buf, at, vtable, vtable_len })
    }

    /// The file offset of field `slot`, if present.
    fn field(&self, slot: usize) -> FbResult<Option<usize>> {
        let entry = 4 + 2 * slot;
        if entry + 2 > self.vtable_len {
            return Ok(None);
        }
        let off = u16_at(self.buf, self.vtable + entry)?;
        if off == 0 {
            return Ok(None);
        }
        Ok(Some(self.at + usize::from(off)))
    }

    pub fn u16(&self, slot: usize) -> FbResult<u16> {
        match self.field(slot)? {
            Some(at) => u16_at(self.buf, at),
            None => Ok(0),
        }
    }

    pub fn u32(&self, slot: usize) -> FbResult<u32> {
        match self.field(slot)? {
            Some(at) => u32_at(self.buf, at),
            None => Ok(0),
        }
    }

    /// A `[ubyte]` field: the bytes and their offset in the file.
    pub fn bytes(&self, slot: usize) -> FbResult<Option<(&'a [u8], usize)>> {
        let Some(at) = self.field(slot)? else { return Ok(None) };
        let v = follow(self.buf, at)?;
        let len = u32_at(self.buf, v)? as usize;
        let start = v + 4;
        let data = self.buf.get(start..start.checked_add(len).ok_or("length overflow")?).ok_or_else(|| format!("vector at {v} of {len} bytes runs past the end of the file"))?;
        Ok(Some((data, start)))
    }

    pub fn string(&self, slot: usize) -> FbResult<Option<String>> {
        Ok(self.bytes(slot)?.map(|(b, _)| String::from_utf8_lossy(b).into_owned()))
    }

    /// The length of a vector field (0 when absent).
    pub fn vector_len(&self, slot: usize) -> FbResult<usize> {
        let Some(at) = self.field(slot)? else { return Ok(0) };
        let v = follow(self.buf, at)?;
        Ok(u32_at(self.buf, v)? as usize)
    }

    /// A `[string]` field.
    pub fn strings(&self, slot: usize) -> FbResult<Vec<String>> {
        let Some(at) = self.field(slot)? else { return Ok(Vec::new()) };
        let v = follow(self.buf, at)?;
        let len = u32_at(self.buf, v)? as usize;
        if len > self.buf.len() / 4 {
            return Err(format!("vector at {v} claims {len} strings"));
        }
        (0..len)
            .map(|i| {
                let s = follow(self.buf, v + 4 + 4 * i)?;
                let n = u32_at(self.buf, s)? as usize;
                let b = self.buf.get(s + 4..(s + 4).checked_add(n).ok_or("length overflow")?).ok_or_else(|| format!("string at {s} runs past the end of the file"))?;
                Ok(String::from_utf8_lossy(b).into_owned())
            })
            .collect()
    }
}
