//! The pass interface and the pipeline that runs passes in order.
//!
//! A pass has a name and rewrites a module, saying whether it changed anything. The pipeline
//! times each pass, runs the verifier after every pass that changed the module when asked
//! (always in debug builds: a pass that breaks the IR is caught where it happens, not later as
//! a panic in code generation), and writes the module after chosen passes for inspection:
//!
//! - `HLOJIT_DUMP_DIR=DIR` writes `DIR/<module>.<NN>.<pass>.hlo` after each pass that changed
//!   the module (`NN` counts the pipeline's passes, so files sort in pipeline order), and
//!   `DIR/<module>.00.input.hlo` before the first;
//! - `HLOJIT_DUMP_PASSES=a,b` limits that to passes whose name contains `a` or `b`.

use crate::error::{Error, Result};
use crate::hlo::Module;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A rewrite of a module.
pub trait Pass {
    /// A short, stable name (`fusion`, `layout-assignment`): used in dumps, timings, errors.
    fn name(&self) -> &'static str;

    /// Rewrites `module`; returns whether anything changed.
    fn run(&self, module: &mut Module) -> Result<bool>;
}

/// What running one pass did.
#[derive(Clone, Debug, PartialEq)]
pub struct PassRecord {
    /// The pass's name.
    pub name: &'static str,
    /// Whether it changed the module.
    pub changed: bool,
    /// How long it ran (verification and dumps excluded).
    pub time: Duration,
}

/// Where and after which passes to write the module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DumpOptions {
    /// The directory the dumps go to.
    pub dir: PathBuf,
    /// Substrings of the pass names to dump after; empty: every pass.
    pub passes: Vec<String>,
}

/// Environment variable naming the dump directory.
pub const DUMP_DIR_VARIABLE: &str = "HLOJIT_DUMP_DIR";
/// Environment variable limiting dumps to some passes (comma-separated name substrings).
pub const DUMP_PASSES_VARIABLE: &str = "HLOJIT_DUMP_PASSES";

impl DumpOptions {
    /// The dump the environment asks for, if any.
    pub fn from_env() -> Option<DumpOptions> {
        let dir = std::env::var_os(DUMP_DIR_VARIABLE)?;
        let passes = std::env::var(DUMP_PASSES_VARIABLE)
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        Some(DumpOptions { dir: dir.into(), passes })
    }

    fn wants(&self, pass: &str) -> bool {
        self.passes.is_empty() || self.passes.iter().any(|p| pass.contains(p.as_str()))
    }
}

/// Passes run in order, with verification, timing and dumps.
#[derive(Default)]
pub struct PassPipeline {
    passes: Vec<Box<dyn Pass>>,
    /// Verify the module after every pass that changed it.
    pub verify: bool,
    /// Write the module after passes (see the module documentation).
    pub dump: Option<DumpOptions>,
}

impl PassPipeline {
    /// An empty pipeline that verifies after each pass in debug builds and dumps as the
    /// environment says.
    pub fn new() -> PassPipeline {
        PassPipeline { passes: Vec::new(), verify: cfg!(debug_assertions), dump: DumpOptions::from_env() }
    }

    /// Appends a pass.
    pub fn add(mut self, pass: impl Pass + 'static) -> PassPipeline {
        self.passes.push(Box::new(pass));
        self
    }

    /// The names of the passes, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// Runs every pass on `module`, in order.
    ///
    /// # Errors
    /// A pass's own error; with verification on, a module a pass left invalid (the error
    /// names the pass); a dump that cannot be written.
    pub fn run(&self, module: &mut Module) -> Result<Vec<PassRecord>> {
        let mut records = Vec::with_capacity(self.passes.len());
        if let Some(dump) = &self.dump {
            write_dump(dump, module, 0, "input")?;
        }
        for (n, pass) in self.passes.iter().enumerate() {
            let start = Instant::now();
            let changed = pass.run(module)?;
            let time = start.elapsed();
            if changed && self.verify {
                crate::hlo::verify_module(module)
                    .map_err(|e| Error::Internal(format!("the module is invalid after pass {}: {e}", pass.name())))?;
            }
            if let Some(dump) = self.dump.as_ref().filter(|d| changed && d.wants(pass.name())) {
                write_dump(dump, module, n + 1, pass.name())?;
            }
            records.push(PassRecord { name: pass.name(), changed, time });
        }
        Ok(records)
    }
}

fn write_dump(dump: &DumpOptions, module: &Module, n: usize, pass: &str) -> Result<()> {
    let file = format!("{}.{n:02}.{pass}.hlo", crate::dump::file_name(&module.name));
    crate::dump::write(dump, &file, crate::hlo::text::print_module(module).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;
    use crate::hlo::Opcode;

    /// Renames the root, or breaks the module by giving the root a wrong shape.
    struct Rename(bool);
    impl Pass for Rename {
        fn name(&self) -> &'static str {
            if self.0 { "breaker" } else { "renamer" }
        }
        fn run(&self, module: &mut Module) -> Result<bool> {
            let entry = module.entry;
            let comp = module.computation_mut(entry);
            let root = comp.root;
            let inst = comp.get_mut(root);
            inst.name = format!("{}.renamed", inst.name);
            if self.0 {
                inst.shape = hlojit_runtime::Shape::scalar(hlojit_runtime::ElementType::S8);
            }
            Ok(true)
        }
    }

    struct Nothing;
    impl Pass for Nothing {
        fn name(&self) -> &'static str {
            "nothing"
        }
        fn run(&self, _: &mut Module) -> Result<bool> {
            Ok(false)
        }
    }

    const NEG: &str = "HloModule m\nENTRY e { x = f32[2] parameter(0)  ROOT y = f32[2] negate(x) }\n";

    #[test]
    fn records_and_verification_name_the_pass() {
        let mut m = parse_module(NEG).unwrap();
        let mut pipeline = PassPipeline::new().add(Nothing).add(Rename(false));
        pipeline.verify = true;
        pipeline.dump = None;
        let records = pipeline.run(&mut m).unwrap();
        assert_eq!(records.iter().map(|r| (r.name, r.changed)).collect::<Vec<_>>(), vec![("nothing", false), ("renamer", true)]);
        assert_eq!(m.entry_computation().root_instruction().opcode, Opcode::Negate);

        let mut pipeline = PassPipeline::new().add(Rename(true));
        pipeline.verify = true;
        let e = pipeline.run(&mut parse_module(NEG).unwrap()).unwrap_err().to_string();
        assert!(e.contains("invalid after pass breaker"), "{e}");
    }

    #[test]
    fn dumps_follow_the_pipeline_order_and_the_filter() {
        let dir = tempfile::tempdir().unwrap();
        let mut pipeline = PassPipeline::new().add(Rename(false)).add(Nothing).add(Rename(false));
        pipeline.dump = Some(DumpOptions { dir: dir.path().to_path_buf(), passes: vec!["rename".into()] });
        pipeline.run(&mut parse_module(NEG).unwrap()).unwrap();
        let mut files: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        files.sort();
        assert_eq!(files, vec!["m.00.input.hlo", "m.01.renamer.hlo", "m.03.renamer.hlo"]);
        let last = std::fs::read_to_string(dir.path().join("m.03.renamer.hlo")).unwrap();
        assert!(last.contains("y.renamed.renamed"), "{last}");
        parse_module(&last).unwrap();
    }
}
