//! The arrays `hlojit run --input` names. A program with many parameters (a training step
//! takes every leaf of its state) is easier to feed from one place than from one flag per
//! leaf, so an `--input` may be
//! - a `.npy` file: one array;
//! - a directory: its `in0.npy`, `in1.npy`, … in index order (the corpus' and `--output-dir`'s
//!   naming), which must be numbered without gaps;
//! - a `.npz` file (`np.savez`, compressed or not): its arrays in order — by index when they
//!   are `arr_0`, `arr_1`, … as `np.savez(f, *leaves)` names them, otherwise in the order they
//!   were written, which is the order of `np.savez`'s keyword arguments.

use std::io::Read;
use std::path::{Path, PathBuf};

/// One input array's `.npy` bytes and where they came from (for messages).
pub struct InputArray {
    pub origin: String,
    pub bytes: Vec<u8>,
}

/// The arrays the `--input` paths name, in parameter order.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<InputArray>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            out.extend(directory(path)?);
        } else if path.extension().is_some_and(|e| e == "npz") {
            out.extend(npz(path)?);
        } else {
            out.push(InputArray { origin: path.display().to_string(), bytes: read(path)? });
        }
    }
    Ok(out)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// `in<i>.npy` files of a directory, in index order.
fn directory(dir: &Path) -> Result<Vec<InputArray>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut indices = Vec::new();
    for entry in entries {
        let name = entry.map_err(|e| format!("{}: {e}", dir.display()))?.file_name();
        let name = name.to_string_lossy();
        if let Some(i) = name.strip_prefix("in").and_then(|n| n.strip_suffix(".npy")).and_then(|n| n.parse::<usize>().ok()) {
            indices.push(i);
        }
    }
    indices.sort_unstable();
    if indices.is_empty() {
        return Err(format!("{}: no in0.npy, in1.npy, … files in this directory", dir.display()));
    }
    if let Some(missing) = (0..).zip(&indices).find(|(want, got)| want != *got).map(|(want, _)| want) {
        return Err(format!("{}: in{missing}.npy is missing (input files are numbered from 0 without gaps)", dir.display()));
    }
    indices.iter().map(|i| dir.join(format!("in{i}.npy"))).map(|p| Ok(InputArray { origin: p.display().to_string(), bytes: read(&p)? })).collect()
}

/// The arrays of an `.npz` archive in parameter order.
fn npz(path: &Path) -> Result<Vec<InputArray>, String> {
    let context = |e: zip::result::ZipError| format!("{}: not a readable .npz archive: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(context)?;
    let mut arrays = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(context)?;
        let Some(name) = entry.name().strip_suffix(".npy").map(str::to_string) else {
            return Err(format!("{}: member '{}' is not an .npy array", path.display(), entry.name()));
        };
        // The archive states each member's size: reserve it fallibly and never read past it,
        // so a corrupt or hostile archive gets an error instead of exhausting memory.
        let size = entry.size();
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
            .map_err(|_| format!("{}: {name}: cannot allocate {size} bytes for it", path.display()))?;
        entry.by_ref().take(size).read_to_end(&mut bytes).map_err(|e| format!("{}: {name}: {e}", path.display()))?;
        arrays.push((name, bytes));
    }
    let positional: Option<Vec<usize>> = arrays.iter().map(|(n, _)| n.strip_prefix("arr_").and_then(|i| i.parse().ok())).collect();
    if let Some(indices) = positional {
        let mut order: Vec<usize> = (0..arrays.len()).collect();
        order.sort_by_key(|&k| indices[k]);
        let mut by_index: Vec<Option<(String, Vec<u8>)>> = arrays.into_iter().map(Some).collect();
        arrays = order.into_iter().filter_map(|k| by_index[k].take()).collect();
    }
    Ok(arrays.into_iter().map(|(name, bytes)| InputArray { origin: format!("{}[{name}]", path.display()), bytes }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write_npz(path: &Path, members: &[(&str, &[u8])]) {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        for (name, bytes) in members {
            zip.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
    }

    #[test]
    fn npz_members_in_positional_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npz");
        write_npz(&path, &[("arr_10.npy", b"ten"), ("arr_2.npy", b"two"), ("arr_0.npy", b"zero")]);
        let got: Vec<Vec<u8>> = expand(&[path]).unwrap().into_iter().map(|a| a.bytes).collect();
        assert_eq!(got, vec![b"zero".to_vec(), b"two".to_vec(), b"ten".to_vec()]);
    }

    #[test]
    fn npz_keyword_members_in_written_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npz");
        write_npz(&path, &[("w.npy", b"w"), ("b.npy", b"b")]);
        let got: Vec<String> = expand(&[path]).unwrap().into_iter().map(|a| a.origin).collect();
        assert!(got[0].ends_with("[w]") && got[1].ends_with("[b]"), "{got:?}");
    }

    #[test]
    fn directories_are_numbered_without_gaps() {
        let dir = tempfile::tempdir().unwrap();
        for i in [0, 1, 3] {
            std::fs::write(dir.path().join(format!("in{i}.npy")), [i as u8]).unwrap();
        }
        let e = expand(&[dir.path().to_path_buf()]).err().unwrap();
        assert!(e.contains("in2.npy is missing"), "{e}");
        std::fs::write(dir.path().join("in2.npy"), [2]).unwrap();
        let got: Vec<u8> = expand(&[dir.path().to_path_buf()]).unwrap().into_iter().map(|a| a.bytes[0]).collect();
        assert_eq!(got, vec![0, 1, 2, 3]);
    }

    #[test]
    fn garbage_archives_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.npz");
        std::fs::write(&path, b"PK\x03\x04 not really").unwrap();
        assert!(expand(&[path]).err().unwrap().contains("not a readable .npz archive"));
    }
}
