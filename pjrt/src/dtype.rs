//! `PJRT_Buffer_Type` and hlojit's element types.

use hlojit::ElementType as T;

/// `PJRT_Buffer_Type` values, in the header's order.
const TABLE: &[(i32, T)] = &[
    (1, T::Pred),
    (2, T::S8),
    (3, T::S16),
    (4, T::S32),
    (5, T::S64),
    (6, T::U8),
    (7, T::U16),
    (8, T::U32),
    (9, T::U64),
    (10, T::F16),
    (11, T::F32),
    (12, T::F64),
    (13, T::BF16),
    (14, T::C64),
    (15, T::C128),
    (16, T::F8E5M2),
    (17, T::F8E4M3FN),
    (18, T::F8E4M3B11FNUZ),
    (19, T::F8E5M2FNUZ),
    (20, T::F8E4M3FNUZ),
    (21, T::S4),
    (22, T::U4),
    // 23 is TOKEN: not an array type.
    (24, T::S2),
    (25, T::U2),
    (26, T::F8E4M3),
    (27, T::F8E3M4),
    (28, T::F8E8M0FNU),
    (29, T::F4E2M1FN),
    // 30, 31 are S1 and U1, which hlojit does not have.
];

/// `PJRT_Buffer_Type_TOKEN`: what a `token[]` value's buffer and output report.
pub const TOKEN: i32 = 23;

pub fn from_pjrt(t: i32) -> Option<T> {
    TABLE.iter().find(|(c, _)| *c == t).map(|(_, e)| *e)
}

pub fn to_pjrt(e: T) -> i32 {
    TABLE.iter().find(|(_, x)| *x == e).map_or(0, |(c, _)| *c)
}

/// Bytes per element on the host side of the API: sub-byte types take a byte each, as
/// ml_dtypes stores them in numpy arrays and as hlojit stores them.
pub fn host_size(e: T) -> usize {
    e.byte_size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_type_round_trips() {
        for &e in T::all() {
            assert_eq!(from_pjrt(to_pjrt(e)), Some(e), "{e:?}");
        }
        assert_eq!(from_pjrt(23), None, "TOKEN is not an array type");
        assert_eq!(from_pjrt(0), None);
    }
}
