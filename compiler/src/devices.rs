//! Running a program on several devices in this process: XLA's replicas and partitions, one
//! thread per device, collectives meeting in the runtime's rendezvous.

use crate::error::{Error, Result};
use crate::executable::{Argument, Executable};
use hlojit_runtime::collectives::{run_as_device, run_on_devices, Communicator, DeviceId};
use hlojit_runtime::executor::RunOptions;
use hlojit_runtime::{HostBuffer, Literal};
use std::sync::{Arc, Mutex};

impl Executable {
    /// Devices the program runs on: the module's `replica_count` × `num_partitions`.
    pub fn num_devices(&self) -> usize {
        self.grid.devices()
    }

    /// The module's `replica_count` (1 when not given).
    pub fn replica_count(&self) -> usize {
        self.grid.replicas
    }

    /// The module's `num_partitions` (1 when not given).
    pub fn num_partitions(&self) -> usize {
        self.grid.partitions
    }

    pub(crate) fn check_single_device(&self) -> Result<()> {
        if self.num_devices() > 1 {
            return Err(Error::InvalidArgument(format!(
                "the program runs on {} devices ({} replicas x {} partitions): use Executable::run_devices",
                self.num_devices(),
                self.grid.replicas,
                self.grid.partitions
            )));
        }
        Ok(())
    }

    fn check_device_count(&self, given: usize) -> Result<()> {
        if given != self.num_devices() {
            return Err(Error::InvalidArgument(format!(
                "the program runs on {} devices, arguments for {given} given",
                self.num_devices()
            )));
        }
        Ok(())
    }

    /// Runs the program on every device at once, each on its own thread: `args[d]` are the
    /// arguments of global device `d` (replica `d / num_partitions`, partition
    /// `d % num_partitions`), as [`Executable::run`] takes them; returns each device's
    /// results in the same order. Collectives (all-reduce, all-gather, ...) exchange data
    /// between the devices. If any device fails, the whole run fails with its error.
    ///
    /// ```
    /// # use hlojit_compiler::{hlo::text::parse_module, CompileOptions, Executable};
    /// # use hlojit_runtime::HostBuffer;
    /// let text = "HloModule m, replica_count=2
    /// add {
    ///   a = f32[] parameter(0)
    ///   b = f32[] parameter(1)
    ///   ROOT s = f32[] add(a, b)
    /// }
    /// ENTRY e {
    ///   p = f32[2] parameter(0)
    ///   ROOT r = f32[2] all-reduce(p), replica_groups={}, to_apply=add
    /// }";
    /// let exe = Executable::compile(&parse_module(text)?, &CompileOptions::default())?;
    /// let per_device = vec![
    ///     vec![HostBuffer::from_slice(&[2], &[1f32, 2.0])?],
    ///     vec![HostBuffer::from_slice(&[2], &[10f32, 20.0])?],
    /// ];
    /// let results = exe.run_devices(per_device)?;
    /// assert_eq!(results[1][0].as_slice::<f32>()?, &[11.0, 22.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_devices<'a, A: Into<Argument<'a>> + Send>(&self, args: Vec<Vec<A>>) -> Result<Vec<Vec<HostBuffer>>> {
        self.run_devices_with(args, &RunOptions::default())
    }

    /// [`Executable::run_devices`] with a deadline or a cancellation token (see
    /// [`Executable::run_with`]); every device stops.
    pub fn run_devices_with<'a, A: Into<Argument<'a>> + Send>(
        &self,
        args: Vec<Vec<A>>,
        options: &RunOptions,
    ) -> Result<Vec<Vec<HostBuffer>>> {
        self.check_device_count(args.len())?;
        let slots: Vec<Mutex<Option<Vec<A>>>> = args.into_iter().map(|a| Mutex::new(Some(a))).collect();
        run_on_devices(self.grid.replicas, self.grid.partitions, |device| {
            let args = slots[device.global].lock().ok().and_then(|mut a| a.take()).ok_or("arguments taken twice")?;
            self.run_on_this_thread(args.into_iter().map(Into::into).collect(), options).map_err(|e| e.to_string())
        })
        .map_err(Error::Execution)
    }

    /// [`Executable::run_literals`] on every device at once: `args[d]` are device `d`'s
    /// logical arguments; returns each device's result.
    pub fn run_literals_devices(&self, args: &[Vec<Literal>]) -> Result<Vec<Literal>> {
        self.run_literals_devices_with(args, &RunOptions::default())
    }

    /// [`Executable::run_literals_devices`] with a deadline or a cancellation token.
    pub fn run_literals_devices_with(&self, args: &[Vec<Literal>], options: &RunOptions) -> Result<Vec<Literal>> {
        self.check_device_count(args.len())?;
        run_on_devices(self.grid.replicas, self.grid.partitions, |device| {
            self.run_literals_on_this_thread(&args[device.global], options).map_err(|e| e.to_string())
        })
        .map_err(Error::Execution)
    }

    /// Runs this process's device of a run whose devices are separate processes, one device
    /// each (`mpirun -n DEVICES`, with the `hlojit-mpi` crate's communicator): the device is
    /// the one `communicator` says this process runs ([`Communicator::local_device`], MPI's
    /// rank), `args` are its arguments as [`Executable::run`] takes them, and the program's
    /// collectives, send and recv go through `communicator`. Every process calls this with
    /// the same executable; an error on any device ends the run on every device (the MPI
    /// communicator prints it and aborts all ranks).
    ///
    /// ```no_run
    /// # use hlojit_compiler::Executable;
    /// # use hlojit_runtime::{collectives::Communicator, HostBuffer};
    /// # use std::sync::Arc;
    /// # fn demo(exe: &Executable, communicator: Arc<dyn Communicator>) -> Result<(), Box<dyn std::error::Error>> {
    /// // `communicator`: hlojit_mpi::MpiCommunicator::new(&universe) in each MPI process.
    /// let mine = HostBuffer::from_slice(&[2], &[1f32, 2.0])?;
    /// let results = exe.run_distributed(&communicator, vec![&mine])?;
    /// # Ok(()) }
    /// ```
    pub fn run_distributed<'a, A: Into<Argument<'a>>>(&self, communicator: &Arc<dyn Communicator>, args: Vec<A>) -> Result<Vec<HostBuffer>> {
        self.run_distributed_with(communicator, args, &RunOptions::default())
    }

    /// [`Executable::run_distributed`] with a deadline or a cancellation token.
    pub fn run_distributed_with<'a, A: Into<Argument<'a>>>(
        &self,
        communicator: &Arc<dyn Communicator>,
        args: Vec<A>,
        options: &RunOptions,
    ) -> Result<Vec<HostBuffer>> {
        let device = communicator.local_device().ok_or_else(|| {
            Error::InvalidArgument(
                "the communicator connects the devices of this process, not one device per process: use Executable::run_devices".into(),
            )
        })?;
        let id = self.distributed_device(communicator.as_ref(), device)?;
        let args: Vec<Argument<'a>> = args.into_iter().map(Into::into).collect();
        run_as_device(id, communicator.clone(), || self.run_on_this_thread(args, options).map_err(|e| e.to_string()))
            .map_err(Error::Execution)
    }

    /// Device `device` of this program's grid, checked against the communicator's size.
    fn distributed_device(&self, communicator: &dyn Communicator, device: usize) -> Result<DeviceId> {
        let devices = self.num_devices();
        if communicator.devices() != devices {
            return Err(Error::InvalidArgument(format!(
                "the program runs on {devices} devices, the communicator connects {}",
                communicator.devices()
            )));
        }
        if device >= devices {
            return Err(Error::InvalidArgument(format!("device {device} does not exist: the program runs on {devices}")));
        }
        let partitions = self.grid.partitions;
        Ok(DeviceId { global: device, replica: device / partitions, partition: device % partitions, devices })
    }

    /// Runs this process's part of a run whose devices are separate processes (or anything
    /// else `communicator` connects): this thread is global device `device`, `args` its
    /// logical arguments, and the collectives, send and recv of the program go through
    /// `communicator` (the `hlojit-mpi` crate implements it on MPI). Every process runs the
    /// same program; an error on this device aborts the run through the communicator.
    pub fn run_literals_distributed(
        &self,
        communicator: Arc<dyn Communicator>,
        device: usize,
        args: &[Literal],
        options: &RunOptions,
    ) -> Result<Literal> {
        let id = self.distributed_device(communicator.as_ref(), device)?;
        run_as_device(id, communicator, || self.run_literals_on_this_thread(args, options).map_err(|e| e.to_string()))
            .map_err(Error::Execution)
    }
}
