//! Arrays as bytes for a send between processes: per leaf `[type code, rank, dims..., bytes]`
//! as little-endian i64, then its row-major data.

use hlojit_runtime::transfers::entry_points::element_type_code;
use hlojit_runtime::{ArrayShape, ElementType, HostBuffer};

pub fn encode(leaves: &[HostBuffer]) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |v: i64, out: &mut Vec<u8>| out.extend_from_slice(&v.to_le_bytes());
    put(leaves.len() as i64, &mut out);
    for leaf in leaves {
        put(element_type_code(leaf.element_type()), &mut out);
        put(leaf.dims().len() as i64, &mut out);
        for &d in leaf.dims() {
            put(d, &mut out);
        }
        put(leaf.bytes().len() as i64, &mut out);
        out.extend_from_slice(leaf.bytes());
    }
    out
}

pub fn decode(bytes: &[u8]) -> Result<Vec<HostBuffer>, String> {
    let mut at = 0usize;
    let next = |at: &mut usize| -> Result<i64, String> {
        let v = bytes.get(*at..*at + 8).ok_or("truncated message")?;
        *at += 8;
        Ok(i64::from_le_bytes(v.try_into().map_err(|_| "truncated message")?))
    };
    let count = next(&mut at)?.max(0) as usize;
    let mut leaves = Vec::new();
    for _ in 0..count {
        let code = next(&mut at)?;
        let rank = next(&mut at)?.max(0) as usize;
        let dims = (0..rank).map(|_| next(&mut at)).collect::<Result<Vec<_>, _>>()?;
        let size = next(&mut at)?.max(0) as usize;
        let element_type = *ElementType::all().get(usize::try_from(code).map_err(|_| "bad element type")?).ok_or("bad element type in a message")?;
        let data = bytes.get(at..at + size).ok_or("truncated message")?;
        at += size;
        leaves.push(HostBuffer::from_bytes(&ArrayShape::new(element_type, dims), data).map_err(|e| e.to_string())?);
    }
    Ok(leaves)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_round_trip() {
        let leaves = vec![HostBuffer::from_slice(&[2, 2], &[1f32, 2.0, 3.0, 4.0]).unwrap(), HostBuffer::from_slice(&[], &[7i64]).unwrap()];
        let back = decode(&encode(&leaves)).unwrap();
        assert_eq!(back, leaves);
        assert!(decode(&encode(&leaves)[..20]).is_err());
    }
}
