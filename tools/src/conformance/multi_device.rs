//! The corpus's multi-device arrays: one row-major array whose leading dimension is the
//! device, split into per-device arrays and joined back.

use hlojit_runtime::ArrayLiteral;

/// Splits `array` along its leading dimension into `devices` arrays without that dimension.
pub fn unstack(array: &ArrayLiteral, devices: usize) -> Result<Vec<ArrayLiteral>, String> {
    let dims = array.dims();
    if dims.first().copied() != Some(devices as i64) {
        return Err(format!("an input of shape {dims:?} does not hold one slice per device ({devices})"));
    }
    let bytes = array.bytes();
    let per = bytes.len() / devices.max(1);
    (0..devices)
        .map(|d| ArrayLiteral::from_bytes(array.element_type(), &dims[1..], &bytes[d * per..(d + 1) * per]).map_err(|e| e.to_string()))
        .collect()
}

/// Joins per-device arrays of one shape along a new leading dimension.
pub fn stack(parts: &[&ArrayLiteral]) -> Result<ArrayLiteral, String> {
    let first = parts.first().ok_or("no device results")?;
    if parts.iter().any(|p| p.dims() != first.dims() || p.element_type() != first.element_type()) {
        return Err("devices returned results of different shapes".into());
    }
    let mut dims = vec![parts.len() as i64];
    dims.extend_from_slice(first.dims());
    let bytes: Vec<u8> = parts.iter().flat_map(|p| p.bytes().iter().copied()).collect();
    ArrayLiteral::from_bytes(first.element_type(), &dims, &bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstack_then_stack_round_trips() {
        let a = ArrayLiteral::from_slice(&[2, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
        let parts = unstack(&a, 2).unwrap();
        assert_eq!(parts[1].as_slice::<i32>().unwrap(), &[4, 5, 6]);
        assert_eq!(parts[1].dims(), &[3]);
        let back = stack(&parts.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(back.dims(), &[2, 3]);
        assert_eq!(back.bytes(), a.bytes());
        assert!(unstack(&a, 3).is_err());
    }
}
