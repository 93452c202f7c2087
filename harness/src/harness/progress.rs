//! Progress of long runs, on stderr, only when stderr is a terminal.
//!
//! libtest prints a trial's result when it ends, so a run of scenarios that take seconds each
//! can sit silent for a long time. While trials run, a background thread prints a line such as
//! `gpumem: 2 of 6 trials done; running simple_cycle::gc_every=0` every few seconds. Nothing is
//! printed when stderr is not a terminal, so logs and captured output stay deterministic.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Time between two progress lines.
const INTERVAL: Duration = Duration::from_secs(5);

/// A shared handle; cheap to clone into every trial. Disabled handles do nothing.
#[derive(Clone, Default)]
pub struct Progress {
    inner: Option<Arc<Inner>>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    total: usize,
    done: usize,
    running: Vec<String>,
    finished: bool,
    ticker: bool,
}

/// Marks a trial as running until dropped.
pub struct Running {
    inner: Option<Arc<Inner>>,
    name: String,
}

impl Progress {
    /// A handle that reports only when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool) -> Progress {
        use std::io::IsTerminal;
        let on = enabled && std::io::stderr().is_terminal();
        Progress {
            inner: on.then(|| Arc::new(Inner::default())),
        }
    }

    /// The number of trials that will run.
    pub fn set_total(&self, total: usize) {
        if let Some(inner) = &self.inner
            && let Ok(mut state) = inner.state.lock()
        {
            state.total = total;
        }
    }

    /// Marks `name` as running (and starts the reporting thread with the first trial).
    pub fn running(&self, name: &str) -> Running {
        if let Some(inner) = &self.inner
            && let Ok(mut state) = inner.state.lock()
        {
            state.running.push(name.to_string());
            if !state.ticker {
                state.ticker = true;
                let inner = Arc::clone(inner);
                std::thread::spawn(move || report_until_finished(&inner));
            }
        }
        Running {
            inner: self.inner.clone(),
            name: name.to_string(),
        }
    }

    /// Stops the reporting thread.
    pub fn finish(&self) {
        if let Some(inner) = &self.inner {
            if let Ok(mut state) = inner.state.lock() {
                state.finished = true;
            }
            inner.wake.notify_all();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(inner) = &self.inner
            && let Ok(mut state) = inner.state.lock()
        {
            state.done += 1;
            if let Some(i) = state.running.iter().position(|n| *n == self.name) {
                state.running.remove(i);
            }
        }
    }
}

fn report_until_finished(inner: &Inner) {
    let Ok(mut state) = inner.state.lock() else {
        return;
    };
    loop {
        state = match inner.wake.wait_timeout(state, INTERVAL) {
            Ok((state, _)) => state,
            Err(_) => return,
        };
        if state.finished {
            return;
        }
        if !state.running.is_empty() {
            eprintln!("{}", line(&state));
        }
    }
}

fn line(state: &State) -> String {
    format!(
        "gpumem: {} of {} trials done; running {}",
        state.done,
        state.total,
        state.running.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_names_counts_and_running_trials() {
        let state = State {
            total: 6,
            done: 2,
            running: vec!["a::x=1".into(), "b".into()],
            ..State::default()
        };
        assert_eq!(
            line(&state),
            "gpumem: 2 of 6 trials done; running a::x=1, b"
        );
    }

    #[test]
    fn running_guard_counts_a_finished_trial() {
        let progress = Progress {
            inner: Some(Arc::new(Inner::default())),
        };
        progress.set_total(2);
        {
            let _guard = progress.running("a");
            let state = progress.inner.as_ref().unwrap().state.lock().unwrap();
            assert_eq!(state.running, ["a"]);
        }
        progress.finish();
        let state = progress.inner.as_ref().unwrap().state.lock().unwrap();
        assert_eq!((state.done, state.running.len()), (1, 0));
    }

    #[test]
    fn disabled_progress_does_nothing() {
        let progress = Progress::new(false);
        let _guard = progress.running("a");
        progress.finish();
        assert!(progress.inner.is_none());
    }
}
