//! Debouncing, written once: the jobs that arrive close behind a first one are gathered into
//! one batch (saves in a burst become one commit; snippets that arrive together, one
//! re-index), waiting a short quiet time after each and never longer than a cap in all.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a batch waits for more.
#[derive(Debug, Clone, Copy)]
pub(super) struct Debounce {
    /// Quiet time after the last job before the batch closes.
    pub quiet: Duration,
    /// The longest the batch stays open while more keep coming.
    pub max_wait: Duration,
}

/// Gathers `first` and the jobs that follow it within `debounce`, as `take` turns them into
/// batch items. The first job that `take` hands back (another kind of work) closes the batch
/// and goes to `backlog`, to run after it; so does a closed or empty channel.
pub(super) fn gather<J, T>(
    jobs: &Receiver<J>,
    first: T,
    take: impl Fn(J) -> Result<T, J>,
    backlog: &mut VecDeque<J>,
    debounce: Debounce,
) -> Vec<T> {
    let mut batch = vec![first];
    let started = Instant::now();
    while let Some(left) = debounce.max_wait.checked_sub(started.elapsed()) {
        match jobs.recv_timeout(debounce.quiet.min(left)) {
            Ok(job) => match take(job) {
                Ok(item) => batch.push(item),
                Err(other) => {
                    backlog.push_back(other);
                    break;
                }
            },
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
        }
    }
    batch
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;

    #[derive(Debug, PartialEq)]
    enum Job {
        Save(u32),
        Other,
    }

    fn saves(job: Job) -> Result<u32, Job> {
        match job {
            Job::Save(n) => Ok(n),
            other => Err(other),
        }
    }

    const QUICK: Debounce = Debounce { quiet: Duration::from_millis(200), max_wait: Duration::from_secs(5) };

    #[test]
    fn jobs_already_queued_join_the_batch_and_another_kind_of_job_closes_it() {
        let (tx, rx) = channel();
        for job in [Job::Save(2), Job::Save(3), Job::Other, Job::Save(4)] {
            tx.send(job).unwrap();
        }
        let mut backlog = VecDeque::new();
        assert_eq!(gather(&rx, 1, saves, &mut backlog, QUICK), [1, 2, 3]);
        assert_eq!(backlog, [Job::Other]);
        // The job after the one that closed the batch is still queued, in order.
        assert_eq!(rx.try_recv().unwrap(), Job::Save(4));
    }

    #[test]
    fn a_quiet_channel_closes_the_batch_after_the_quiet_time() {
        let (tx, rx) = channel::<Job>();
        let started = Instant::now();
        let batch = gather(&rx, 1, saves, &mut VecDeque::new(), QUICK);
        assert_eq!(batch, [1]);
        assert!(started.elapsed() >= QUICK.quiet);
        drop(tx);
    }

    #[test]
    fn a_steady_stream_is_cut_at_the_cap() {
        let (tx, rx) = channel();
        let sender = std::thread::spawn(move || {
            for n in 0.. {
                if tx.send(Job::Save(n)).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let debounce = Debounce { quiet: Duration::from_millis(200), max_wait: Duration::from_millis(300) };
        let batch = gather(&rx, 0, saves, &mut VecDeque::new(), debounce);
        drop(rx);
        sender.join().unwrap();
        // The stream never paused for the quiet time, yet the batch closed: at the cap.
        assert!(batch.len() > 1 && batch.len() < 1000, "{}", batch.len());
    }

    #[test]
    fn a_closed_channel_ends_the_batch_at_once() {
        let (tx, rx) = channel();
        tx.send(Job::Save(2)).unwrap();
        drop(tx);
        assert_eq!(gather(&rx, 1, saves, &mut VecDeque::new(), QUICK), [1, 2]);
    }
}
