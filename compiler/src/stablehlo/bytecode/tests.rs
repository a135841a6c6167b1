use super::*;

#[test]
fn debug_dump() {
    let p = std::env::var("BC").unwrap_or_default();
    if p.is_empty() {
        return;
    }
    let bytes = std::fs::read(p).unwrap();
    let m = parse_bytecode(&bytes);
    println!("{m:#?}");
}
