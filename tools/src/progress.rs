//! Progress of long commands (`conformance`, `bench`, compiling a big module): a progress
//! bar on standard error when it is a terminal, plain lines otherwise (CI logs, pipes), and
//! nothing at all with `quiet` (JSON output, where standard error stays for errors).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Progress over a known number of items.
pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    done: AtomicU64,
    /// Plain mode: a line every this many items.
    step: u64,
    quiet: bool,
}

impl Progress {
    pub fn new(label: &str, total: usize, quiet: bool) -> Progress {
        let total = total as u64;
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} {elapsed} {msg}") {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(label.to_string());
            bar
        });
        Progress { bar, label: label.to_string(), total, done: AtomicU64::new(0), step: (total / 10).max(1), quiet }
    }

    /// One more item done; `what` names it.
    pub fn tick(&self, what: &str) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        match &self.bar {
            Some(bar) => {
                bar.set_message(what.to_string());
                bar.inc(1);
            }
            None if !self.quiet && (done % self.step == 0 || done == self.total) => {
                eprintln!("{}: {done}/{} done", self.label, self.total)
            }
            None => {}
        }
    }

    /// Prints a line without breaking the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => println!("{line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A spinner while something of unknown length runs (compiling a module), on a terminal
/// only; it goes away when dropped.
pub struct Spinner(Option<ProgressBar>);

impl Spinner {
    pub fn new(message: &str) -> Spinner {
        Spinner(std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_message(message.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        }))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
