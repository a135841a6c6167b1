//! `mpirun -n N hlojit run --distributed mpi MODULE ...`: each process runs one device (its
//! rank), takes its slice of the stacked inputs, and rank 0 gathers the results stacked over
//! the devices, so the command reads and writes the same files as the in-process run.

use hlojit::{ArrayLiteral, Executable, Literal, RunOptions};

/// What one process of a distributed run did: its device, and on rank 0 the stacked result
/// leaves of every device.
pub struct ProcessRun {
    pub device: usize,
    pub stacked_outputs: Option<Vec<ArrayLiteral>>,
}

/// Runs this process's device; rank 0 gets the stacked result leaves, the others `None`.
#[cfg(feature = "mpi")]
pub fn run_mpi(exe: &Executable, stacked: Vec<ArrayLiteral>, options: &RunOptions) -> Result<ProcessRun, String> {
    use crate::conformance::multi_device::{stack, unstack};
    use hlojit_mpi::MpiCommunicator;
    use hlojit_runtime::collectives::Communicator;
    use std::sync::Arc;

    let universe = hlojit_mpi::initialize().ok_or("MPI was initialized twice")?;
    let comm = Arc::new(MpiCommunicator::new(&universe));
    let (rank, devices) = (comm.rank(), exe.num_devices());
    if comm.devices() != devices {
        return Err(format!("the program runs on {devices} devices; run it with mpirun -n {devices} (this run has {} processes)", comm.devices()));
    }
    let mine: Vec<ArrayLiteral> = stacked
        .iter()
        .map(|leaf| unstack(leaf, devices).map(|mut parts| parts.swap_remove(rank)))
        .collect::<Result<_, _>>()?;
    let args = Literal::group_leaves(exe.parameter_shapes(), mine)?;
    // On failure the communicator has already ended every rank with the message.
    let result = exe.run_literals_distributed(comm.clone(), rank, &args, options).map_err(|e| e.to_string())?;
    let leaves = result.into_leaves();
    let mut out = Vec::new();
    for leaf in &leaves {
        if let Some(all) = comm.gather_to_root(leaf.bytes()) {
            let parts = all
                .iter()
                .map(|b| ArrayLiteral::from_bytes(leaf.element_type(), leaf.dims(), b).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            out.push(stack(&parts.iter().collect::<Vec<_>>())?);
        }
    }
    drop(comm);
    drop(universe);
    Ok(ProcessRun { device: rank, stacked_outputs: (rank == 0).then_some(out) })
}

/// Without the `mpi` feature there is nothing to run on.
#[cfg(not(feature = "mpi"))]
pub fn run_mpi(_: &Executable, _: Vec<ArrayLiteral>, _: &RunOptions) -> Result<ProcessRun, String> {
    Err("this hlojit was built without MPI (cargo feature `mpi` of hlojit-tools)".into())
}
