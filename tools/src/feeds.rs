//! `hlojit run --infeed F.npy ... --outfeed-dir DIR`: the command line's side of the
//! executable's infeed and outfeed queues. Every infeed value is queued before the run (so an
//! infeed op that finds its queue empty fails at once instead of waiting), and every outfed
//! value is written after it.

use crate::conformance::multi_device::unstack;
use hlojit::{npy, Executable, HostBuffer, Literal};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Queues each `.npy` file as one infeed array, in order (an infeed of a tuple reads as many
/// files as it has leaves). For a program on several devices each file is stacked over the
/// devices along a new leading dimension, like `--input`, and device `d` gets slice `d`.
pub fn queue_infeeds(exe: &Executable, paths: &[PathBuf]) -> Result<(), String> {
    exe.set_transfer_wait_limit(Duration::ZERO);
    let devices = exe.num_devices();
    for path in paths {
        let bytes = std::fs::read(path).map_err(|e| format!("--infeed {}: {e}", path.display()))?;
        let array = npy::parse(&bytes, None).map_err(|e| format!("--infeed {}: {e}", path.display()))?;
        let parts = if devices > 1 {
            unstack(&array, devices).map_err(|e| format!("--infeed {} (stacked over {devices} devices): {e}", path.display()))?
        } else {
            vec![array]
        };
        for (d, part) in parts.into_iter().enumerate() {
            exe.infeed(d, &Literal::Array(part)).map_err(|e| format!("--infeed {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes every value the run outfed as `DIR/outfeed<k>.npy` (tuple values flattened, k
/// counting arrays in the order they were outfed), in `DIR/device<d>/` when the program runs
/// on several devices. Returns how many arrays were written.
pub fn write_outfeeds(exe: &Executable, dir: &Path) -> Result<usize, String> {
    write_outfeeds_of(exe, dir, 0..exe.num_devices())
}

/// [`write_outfeeds`] for some of the devices: a process of a distributed run (one device per
/// process) has only its own device's values, and writes them to `DIR/device<d>/` itself.
pub fn write_outfeeds_of(exe: &Executable, dir: &Path, devices_here: impl IntoIterator<Item = usize>) -> Result<usize, String> {
    let devices = exe.num_devices();
    let mut written = 0;
    for d in devices_here {
        let dir = if devices > 1 { dir.join(format!("device{d}")) } else { dir.to_path_buf() };
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut k = 0;
        while exe.outfeed_len(d) > 0 {
            let leaves: Vec<HostBuffer> = exe.outfeed(d, Duration::ZERO).map_err(|e| e.to_string())?;
            for leaf in leaves {
                let path = dir.join(format!("outfeed{k}.npy"));
                npy::write(&path, &leaf.to_literal()).map_err(|e| format!("{}: {e}", path.display()))?;
                k += 1;
            }
        }
        written += k;
    }
    Ok(written)
}
