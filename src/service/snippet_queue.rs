//! The snippet queue of a folder as a state machine: one run at a time, a budget period that
//! a full reindex renews, a pause when the budget is spent, and after a run that ends on
//! failures a retry whose wait doubles with each stop in a row. Pure: it is told what
//! happened and when, and says what to tell the user; the folder's writer does the rest.

use std::time::{Duration, Instant};

use crate::engine::SnippetProgress;
use crate::snippets::generator::{Outcome, RunEnd, Totals};

/// The wait before a stopped queue tries again; it doubles with each stop in a row, up to
/// [`RETRY_MAX`].
const RETRY: Duration = Duration::from_secs(60);
const RETRY_MAX: Duration = Duration::from_secs(15 * 60);

/// What the queue is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnippetState {
    /// Nothing waits, or the queue is about to start.
    Idle,
    /// Requests are out.
    Running,
    /// The budget of this period is spent (a full reindex starts a new one).
    Paused,
    /// The model kept failing; the queue tries again later.
    Stopped,
}

/// The queue as status reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct SnippetLive {
    pub state: SnippetState,
    /// Why the queue is paused or stopped.
    pub reason: Option<String>,
    /// Jobs of the running (or last) run: answered so far, and in all.
    pub done: usize,
    pub total: usize,
    /// Calls and tokens spent in this budget period.
    pub totals: Totals,
    /// Unix seconds of the next attempt, when stopped.
    pub retry_at: Option<u64>,
}

/// How a run ended, for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnded {
    /// One line for the end of the run's progress report.
    pub summary: String,
    /// Why the queue paused or stopped, if it did.
    pub reason: Option<String>,
    /// Whether to show `reason` to the user: once per pause, once per outage (a queue that
    /// stops again before it has recovered only updates its status).
    pub tell: bool,
}

/// One folder's snippet queue.
#[derive(Debug, Default)]
pub struct SnippetQueue {
    /// The number of the running run, if one runs.
    running: Option<u32>,
    runs: u32,
    /// The running (or last) run's jobs, and the calls and tokens of this budget period.
    progress: SnippetProgress,
    paused: bool,
    /// When a stopped queue tries again, and how many stops in a row there were.
    retry_at: Option<Instant>,
    stops: u32,
    reason: Option<String>,
}

impl SnippetQueue {
    /// A fresh queue for new settings; run numbers go on, so that answers of the old
    /// settings' run are recognised as such.
    pub fn renewed(&self) -> SnippetQueue {
        SnippetQueue { runs: self.runs, ..SnippetQueue::default() }
    }

    /// Whether a run may start now: none runs, the budget is not spent, no retry is due later.
    pub fn may_start(&self) -> bool {
        self.running.is_none() && !self.paused && self.retry_at.is_none()
    }

    /// Calls and tokens spent in this budget period.
    pub fn spent(&self) -> Totals {
        self.progress.totals
    }

    /// A run of `jobs` jobs starts; returns its number.
    pub fn start(&mut self, jobs: usize) -> u32 {
        self.runs += 1;
        self.running = Some(self.runs);
        self.progress.done = 0;
        self.progress.total = jobs;
        self.reason = None;
        self.runs
    }

    /// The running run was stopped from outside (new settings, shutdown).
    pub fn abandon(&mut self) {
        self.running = None;
    }

    /// Counts one job's outcome.
    pub fn record(&mut self, outcome: &Outcome) {
        self.progress.record(outcome);
    }

    /// Jobs answered so far, and in all, of the running (or last) run.
    pub fn progress(&self) -> (usize, usize) {
        (self.progress.done, self.progress.total)
    }

    /// Run `run` has ended (`waiting` chunks still wait); `None` when it is not the running
    /// run (an old run's late word).
    pub fn ended(&mut self, run: u32, end: &RunEnd, waiting: usize, now: Instant) -> Option<RunEnded> {
        if self.running != Some(run) {
            return None;
        }
        self.running = None;
        let summary = format!("{} snippets; {}", self.progress.done, self.progress.totals);
        match end {
            RunEnd::Finished | RunEnd::Interrupted => self.stops = 0,
            RunEnd::BudgetReached => {
                self.paused = true;
                self.reason = Some(format!(
                    "the snippet budget is spent ({} calls, {} tokens this period); {waiting} chunks keep \
                     their header context until `situate.reindex` starts a new period",
                    self.progress.totals.calls,
                    self.progress.totals.input_tokens + self.progress.totals.output_tokens
                ));
            }
            RunEnd::Failing { error } => {
                let wait = RETRY.saturating_mul(1 << self.stops.min(4)).min(RETRY_MAX);
                self.stops += 1;
                self.retry_at = Some(now + wait);
                self.reason = Some(format!(
                    "snippets stopped on the model's errors ({error}); {waiting} chunks keep their \
                     header context and are tried again in {} min",
                    wait.as_secs().div_ceil(60)
                ));
            }
        }
        let tell = self.reason.is_some() && (self.paused || self.stops == 1);
        Some(RunEnded { summary, reason: self.reason.clone(), tell })
    }

    /// When a stopped queue tries again.
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// The retry of a stopped queue is due: it may start again.
    pub fn retry_now(&mut self) {
        self.retry_at = None;
    }

    /// A new budget period (a full reindex): the spent budget, a pause and a pending retry
    /// are forgotten. Returns the reason that no longer holds, if there was one.
    pub fn new_period(&mut self) -> Option<String> {
        self.progress.totals = Totals::default();
        self.paused = false;
        self.retry_at = None;
        self.stops = 0;
        self.reason.take()
    }

    /// The queue as status shows it (`None` when snippets are off); `now_secs` is the Unix
    /// time at `now`.
    pub fn live(&self, on: bool, now: Instant, now_secs: u64) -> Option<SnippetLive> {
        if !on {
            return None;
        }
        let state = if self.running.is_some() {
            SnippetState::Running
        } else if self.paused {
            SnippetState::Paused
        } else if self.retry_at.is_some() {
            SnippetState::Stopped
        } else {
            SnippetState::Idle
        };
        Some(SnippetLive {
            state,
            reason: self.reason.clone(),
            done: self.progress.done,
            total: self.progress.total,
            totals: self.progress.totals,
            retry_at: self.retry_at.map(|at| now_secs + at.saturating_duration_since(now).as_secs()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing() -> RunEnd {
        RunEnd::Failing { error: "connection refused".to_string() }
    }

    #[test]
    fn one_run_at_a_time_and_a_late_word_from_an_old_run_changes_nothing() {
        let mut q = SnippetQueue::default();
        assert!(q.may_start());
        let run = q.start(10);
        assert!(!q.may_start());
        assert_eq!(q.ended(run + 1, &RunEnd::Finished, 0, Instant::now()), None);
        assert!(!q.may_start());
        let ended = q.ended(run, &RunEnd::Finished, 0, Instant::now()).unwrap();
        assert_eq!((ended.reason, ended.tell), (None, false));
        assert!(q.may_start());
        assert_eq!(q.live(true, Instant::now(), 0).unwrap().state, SnippetState::Idle);
        assert_eq!(q.live(false, Instant::now(), 0), None);
    }

    #[test]
    fn a_spent_budget_pauses_until_a_new_period_and_is_told_once() {
        let mut q = SnippetQueue::default();
        let run = q.start(5);
        let ended = q.ended(run, &RunEnd::BudgetReached, 3, Instant::now()).unwrap();
        assert!(ended.tell);
        assert!(ended.reason.as_deref().unwrap().contains("3 chunks keep their header context"));
        assert!(!q.may_start());
        assert_eq!(q.live(true, Instant::now(), 0).unwrap().state, SnippetState::Paused);
        let old = q.new_period();
        assert_eq!(old, ended.reason);
        assert!(q.may_start());
        assert_eq!(q.spent(), Totals::default());
    }

    #[test]
    fn a_failing_model_is_retried_after_a_wait_that_doubles_up_to_a_cap_and_is_told_once() {
        let mut q = SnippetQueue::default();
        let now = Instant::now();
        let mut waits = Vec::new();
        let mut told = Vec::new();
        for _ in 0..7 {
            let run = q.start(4);
            let ended = q.ended(run, &failing(), 4, now).unwrap();
            told.push(ended.tell);
            let at = q.retry_at().unwrap();
            waits.push(at.duration_since(now).as_secs() / 60);
            assert!(!q.may_start());
            assert_eq!(
                q.live(true, now, 1000).unwrap().retry_at,
                Some(1000 + at.duration_since(now).as_secs())
            );
            q.retry_now();
            assert!(q.may_start());
        }
        assert_eq!(waits, [1, 2, 4, 8, 15, 15, 15]);
        assert_eq!(told, [true, false, false, false, false, false, false]);
        // A run that finishes ends the outage: the next failure is told again.
        let run = q.start(1);
        q.ended(run, &RunEnd::Finished, 0, now);
        let run = q.start(1);
        assert!(q.ended(run, &failing(), 1, now).unwrap().tell);
    }

    #[test]
    fn renewed_settings_keep_counting_runs_and_forget_the_rest() {
        let mut q = SnippetQueue::default();
        let old = q.start(3);
        let mut fresh = q.renewed();
        assert!(fresh.may_start());
        assert!(fresh.ended(old, &RunEnd::Finished, 0, Instant::now()).is_none());
        assert!(fresh.start(1) > old);
    }
}
