//! The threads that fill pending vectors between a server's other work. They are a rayon
//! pool of their own, at a lower scheduling priority: a search's parallel work never waits
//! in a queue behind the fill's tasks, and when both want the cores the system runs the
//! search first. Measured: without it, a language server's searches at a million chunks
//! waited on e5's fill for hundreds of milliseconds at the 99th percentile.

use std::sync::OnceLock;

/// How much the fill's threads give way (a Linux nice value: at 10, a thread gets about a
/// tenth of a core that a thread at 0 also wants).
const NICENESS: i32 = 10;

/// The fill's pool; `None` when the system would not start its threads (the caller's pool
/// serves then).
pub(super) fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .thread_name(|n| format!("situate-fill-{n}"))
            .start_handler(|_| give_way())
            .build()
            .map_err(|e| tracing::warn!("the vector fill shares the search's threads: {e}"))
            .ok()
    })
    .as_ref()
}

/// Lowers the calling thread's priority.
fn give_way() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take and return plain integers; with the calling
        // thread's own id, setpriority changes that thread's nice value and nothing else.
        let failed = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, NICENESS) };
        if failed != 0 {
            tracing::debug!(
                "the vector fill's thread keeps its priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_fill_runs_on_threads_of_lower_priority_than_the_callers() {
        // SAFETY: as in `give_way`; getpriority only reads.
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
        let here = nice();
        let there = pool().expect("the pool starts").install(nice);
        assert_eq!(there, (here + NICENESS).min(19));
        let names = pool().unwrap().install(|| std::thread::current().name().map(str::to_string));
        assert!(names.is_some_and(|n| n.starts_with("situate-fill-")));
    }
}
