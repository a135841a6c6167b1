//! Reading C strings, arrays and named values the caller passes.

use crate::abi::{ErrorCode, NamedValue, NAMED_BOOL, NAMED_FLOAT, NAMED_INT64, NAMED_INT64_LIST, NAMED_STRING};
use std::ffi::c_char;

/// `size` bytes at `p` as text (lossy), empty for null.
pub fn string(p: *const c_char, size: usize) -> String {
    String::from_utf8_lossy(bytes(p.cast(), size)).into_owned()
}

/// `size` bytes at `p`, empty for null.
pub fn bytes<'a>(p: *const u8, size: usize) -> &'a [u8] {
    if p.is_null() || size == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `size` readable bytes at `p`.
        unsafe { std::slice::from_raw_parts(p, size) }
    }
}

/// `n` elements at `p`, empty for null.
pub fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `n` readable elements at `p`.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}

pub fn error_code(code: i32) -> ErrorCode {
    match code {
        1 => ErrorCode::Cancelled,
        3 => ErrorCode::InvalidArgument,
        4 => ErrorCode::DeadlineExceeded,
        5 => ErrorCode::NotFound,
        8 => ErrorCode::ResourceExhausted,
        9 => ErrorCode::FailedPrecondition,
        11 => ErrorCode::OutOfRange,
        12 => ErrorCode::Unimplemented,
        13 => ErrorCode::Internal,
        _ => ErrorCode::Unknown,
    }
}

/// A named value as the caller passed it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    String(String),
    Int64(i64),
    Int64List(Vec<i64>),
    Float(f32),
    Bool(bool),
}

/// The caller's named values (options), by name.
pub fn named_values(p: *const NamedValue, n: usize) -> Vec<(String, Value)> {
    slice(p, n)
        .iter()
        .filter_map(|v| {
            let name = string(v.name, v.name_size);
            // SAFETY: the union member is the one `kind` names.
            let value = unsafe {
                match v.kind {
                    NAMED_STRING => Value::String(string(v.value.string_value, v.value_size)),
                    NAMED_INT64 => Value::Int64(v.value.int64_value),
                    NAMED_INT64_LIST => Value::Int64List(slice(v.value.int64_array_value, v.value_size).to_vec()),
                    NAMED_FLOAT => Value::Float(v.value.float_value),
                    NAMED_BOOL => Value::Bool(v.value.bool_value),
                    _ => return None,
                }
            };
            Some((name, value))
        })
        .collect()
}

/// Named values hlojit hands out: owns the names, strings and lists the C structs point at.
pub struct OwnedNamedValues {
    _names: Vec<Box<str>>,
    _lists: Vec<Box<[i64]>>,
    pub values: Vec<NamedValue>,
}
// SAFETY: immutable after construction; the pointers point into the owned boxes.
unsafe impl Send for OwnedNamedValues {}
unsafe impl Sync for OwnedNamedValues {}

impl OwnedNamedValues {
    pub fn new(items: Vec<(&str, Value)>) -> OwnedNamedValues {
        use crate::abi::NamedValueUnion;
        let mut names = Vec::new();
        let mut lists = Vec::new();
        let mut values = Vec::new();
        for (name, value) in items {
            let name: Box<str> = name.into();
            let (kind, v, size) = match value {
                Value::String(s) => {
                    let s: Box<str> = s.into();
                    let v = NamedValueUnion { string_value: s.as_ptr().cast() };
                    let n = s.len();
                    names.push(s);
                    (NAMED_STRING, v, n)
                }
                Value::Int64(i) => (NAMED_INT64, NamedValueUnion { int64_value: i }, 1),
                Value::Int64List(l) => {
                    let l: Box<[i64]> = l.into();
                    let v = NamedValueUnion { int64_array_value: l.as_ptr() };
                    let n = l.len();
                    lists.push(l);
                    (NAMED_INT64_LIST, v, n)
                }
                Value::Float(f) => (NAMED_FLOAT, NamedValueUnion { float_value: f }, 1),
                Value::Bool(b) => (NAMED_BOOL, NamedValueUnion { bool_value: b }, 1),
            };
            values.push(NamedValue {
                struct_size: NamedValue::STRUCT_SIZE,
                extension_start: std::ptr::null_mut(),
                name: name.as_ptr().cast(),
                name_size: name.len(),
                kind,
                value: v,
                value_size: size,
            });
            names.push(name);
        }
        OwnedNamedValues { _names: names, _lists: lists, values }
    }
}
