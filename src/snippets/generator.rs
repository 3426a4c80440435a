//! The snippet generator: asks the chat model for the snippets of a list of jobs with a
//! fixed number of requests in flight, within a budget, and stops when the model keeps
//! failing.
//!
//! Jobs come grouped per document and a worker takes a whole document at a time, so the
//! requests about one document go out one after another and each after the first reads the
//! document from the provider's prompt cache. Outcomes are handed to a sink on the calling
//! thread, which owns the index; every job gets exactly one outcome. A job whose chunk left
//! the index after the run was planned (its file was saved or removed meanwhile) is dropped
//! unsent: nothing would index its answer.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, mpsc};
use std::time::Duration;

use super::prompt::SnippetMode;
use super::reply::{Rejected, clean_reply};
use super::{Snippet, SnippetConfig, SnippetSetup, now_secs};
use crate::providers::chat::{ChatRequest, Usage};
use crate::providers::http::ErrorKind;

/// Jobs failing one after another (each after its own retries) before a run stops.
pub const FAILURE_LIMIT: u32 = 3;

/// One chunk's snippet to write.
#[derive(Debug, Clone)]
pub struct SnippetJob {
    pub chunk_id: u64,
    pub key: u128,
    /// The chunk's file: jobs of one file are sent one after another.
    pub path: String,
    pub request: ChatRequest,
}

/// What became of one job.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The model answered. A reply that was rejected is kept as an empty snippet, so the
    /// model is not asked again for the same key.
    Written { chunk_id: u64, key: u128, snippet: Snippet, usage: Usage },
    /// The call failed after its retries, or its reply says the model's settings are wrong
    /// (whatever it cost is in `usage`); the chunk keeps its header context.
    Failed { chunk_id: u64, error: String, usage: Usage },
    /// Not attempted: the run ended (budget, failures, interruption) before its turn.
    NotRun { chunk_id: u64 },
    /// Not sent: the chunk left the index before its turn ([`Withdrawn`]).
    Withdrawn { chunk_id: u64 },
}

impl Outcome {
    pub fn chunk_id(&self) -> u64 {
        match self {
            Outcome::Written { chunk_id, .. }
            | Outcome::Failed { chunk_id, .. }
            | Outcome::NotRun { chunk_id }
            | Outcome::Withdrawn { chunk_id } => *chunk_id,
        }
    }
}

/// Calls and tokens spent, summed over the runs of a budget period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Calls made, failed ones included.
    pub calls: u64,
    pub failed: u64,
    /// Replies rejected as empty or junk.
    pub rejected: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Totals {
    /// Counts an outcome in.
    pub fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Written { snippet, usage, .. } => {
                self.calls += 1;
                self.rejected += u64::from(snippet.text.is_empty());
                self.input_tokens += usage.input_tokens;
                self.output_tokens += usage.output_tokens;
                self.cache_read_tokens += usage.cache_read_tokens;
                self.cache_write_tokens += usage.cache_write_tokens;
            }
            Outcome::Failed { usage, .. } => {
                self.calls += 1;
                self.failed += 1;
                self.input_tokens += usage.input_tokens;
                self.output_tokens += usage.output_tokens;
                self.cache_read_tokens += usage.cache_read_tokens;
                self.cache_write_tokens += usage.cache_write_tokens;
            }
            Outcome::NotRun { .. } | Outcome::Withdrawn { .. } => {}
        }
    }
}

impl std::fmt::Display for Totals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} calls ({} failed, {} replies rejected), {} input tokens ({} from the prompt cache",
            self.calls, self.failed, self.rejected, self.input_tokens, self.cache_read_tokens,
        )?;
        // Anthropic bills writes to its cache above plain input; OpenAI reports none.
        if self.cache_write_tokens > 0 {
            write!(f, ", {} written to it", self.cache_write_tokens)?;
        }
        write!(f, "), {} output tokens", self.output_tokens)
    }
}

/// The limits of a budget period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub max_calls: Option<u64>,
    /// Input plus output tokens.
    pub max_tokens: Option<u64>,
}

impl Limits {
    /// Whether `totals` leaves room for another call.
    pub fn allow(&self, calls: u64, tokens: u64) -> bool {
        self.max_calls.is_none_or(|max| calls < max) && self.max_tokens.is_none_or(|max| tokens < max)
    }
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// Every job had its turn.
    Finished,
    /// The budget ran out; the rest waits for the next period.
    BudgetReached,
    /// The model failed [`FAILURE_LIMIT`] jobs in a row; the last error.
    Failing { error: String },
    /// Stopped from outside.
    Interrupted,
}

/// The chunks whose jobs are out and that left the index since (their file was saved with
/// other contents, or removed): shared between the engine, which adds them as it applies a
/// change, and the runs, which send no request for them. Chunk ids are never reused, so an
/// id in here never names a chunk of the index again.
#[derive(Debug, Clone, Default)]
pub struct Withdrawn(Arc<Mutex<HashSet<u64>>>);

impl Withdrawn {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<u64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// These chunks left the index.
    pub fn add(&self, ids: impl IntoIterator<Item = u64>) {
        self.ids().extend(ids);
    }

    pub fn contains(&self, id: u64) -> bool {
        self.ids().contains(&id)
    }

    /// The outcome of this chunk's job came back: nothing asks about it any more.
    pub fn forget(&self, id: u64) {
        self.ids().remove(&id);
    }
}

/// What ends jobs from outside a run: a flag that stops the whole run, and the chunks that
/// left the index since it was planned.
#[derive(Clone, Copy)]
pub struct Stops<'a> {
    pub run: &'a AtomicBool,
    pub withdrawn: &'a Withdrawn,
}

struct Shared {
    groups: VecDeque<Vec<SnippetJob>>,
    calls: u64,
    tokens: u64,
    failures_in_a_row: u32,
    /// Calls sent and not answered yet.
    in_flight: usize,
    end: Option<RunEnd>,
}

/// How often a worker that waits for the calls in flight looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Runs `jobs` (grouped per file, in order) against the setup's model with its concurrency.
/// `spent` is what the budget period has used before this run; a job whose chunk is among
/// `stops.withdrawn` when its turn comes is not sent. Each outcome is shown to
/// `keep` on the worker that got it, the moment it is known, and then handed to `sink` on
/// the calling thread (which may be busy with earlier ones). Returns why the run ended.
pub fn run(
    setup: &SnippetSetup,
    jobs: Vec<SnippetJob>,
    limits: Limits,
    spent: Totals,
    stops: Stops<'_>,
    keep: &(dyn Fn(&Outcome) + Sync),
    sink: &mut dyn FnMut(Outcome),
) -> RunEnd {
    let mut groups: VecDeque<Vec<SnippetJob>> = VecDeque::new();
    for job in jobs {
        match groups.back_mut() {
            Some(group) if group[0].path == job.path => group.push(job),
            _ => groups.push_back(vec![job]),
        }
    }
    let workers = setup.config.concurrency.max(1).min(groups.len().max(1));
    let shared = Mutex::new(Shared {
        groups,
        calls: spent.calls,
        tokens: spent.input_tokens + spent.output_tokens,
        failures_in_a_row: 0,
        in_flight: 0,
        end: None,
    });
    let answered = Condvar::new();
    let (tx, rx) = mpsc::channel::<Outcome>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (shared, answered) = (&shared, &answered);
            scope.spawn(move || work(setup, (shared, answered), limits, stops, keep, &tx));
        }
        drop(tx);
        for outcome in rx {
            sink(outcome);
        }
    });
    let mut shared = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    for job in shared.groups.drain(..).flatten() {
        sink(Outcome::NotRun { chunk_id: job.chunk_id });
    }
    shared.end.unwrap_or(RunEnd::Finished)
}

/// One worker: takes a document's jobs at a time and sends them one after another. While
/// the last call answered failed, it sends nothing new until the calls in flight are
/// answered: a model that fails does so for all of them, and a run that is about to stop
/// must not start a call that it then has to wait out (a stalled server holds each one for
/// all its retries).
fn work(
    setup: &SnippetSetup,
    (shared, answered): (&Mutex<Shared>, &Condvar),
    limits: Limits,
    stops: Stops<'_>,
    keep: &(dyn Fn(&Outcome) + Sync),
    tx: &mpsc::Sender<Outcome>,
) {
    let stop = stops.run;
    let lock = || shared.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        let Some(group) = ({
            let mut s = lock();
            if s.end.is_some() { None } else { s.groups.pop_front() }
        }) else {
            return;
        };
        let mut jobs = group.into_iter();
        while let Some(job) = jobs.next() {
            let (go, withdrawn) = {
                let mut s = lock();
                while s.end.is_none()
                    && s.failures_in_a_row > 0
                    && s.in_flight > 0
                    && !stop.load(Ordering::Relaxed)
                {
                    s = answered.wait_timeout(s, STOP_CHECK).unwrap_or_else(PoisonError::into_inner).0;
                }
                if stop.load(Ordering::Relaxed) && s.end.is_none() {
                    s.end = Some(RunEnd::Interrupted);
                }
                // Looked at last, after any wait: a save may have come meanwhile.
                let withdrawn = s.end.is_none() && stops.withdrawn.contains(job.chunk_id);
                if s.end.is_none() && !withdrawn && !limits.allow(s.calls, s.tokens) {
                    s.end = Some(RunEnd::BudgetReached);
                }
                if s.end.is_none() && !withdrawn {
                    s.calls += 1;
                    s.in_flight += 1;
                }
                (s.end.is_none(), withdrawn)
            };
            if withdrawn {
                tracing::debug!(path = %job.path, chunk = job.chunk_id, "snippet not asked: the chunk left the index");
                let _ = tx.send(Outcome::Withdrawn { chunk_id: job.chunk_id });
                continue;
            }
            if !go {
                let _ = tx.send(Outcome::NotRun { chunk_id: job.chunk_id });
                for rest in jobs.by_ref() {
                    let _ = tx.send(Outcome::NotRun { chunk_id: rest.chunk_id });
                }
                break;
            }
            let (outcome, hopeless) = generate(setup, &job);
            {
                let mut s = lock();
                s.in_flight -= 1;
                answered.notify_all();
                match &outcome {
                    Outcome::Written { usage, .. } => {
                        s.failures_in_a_row = 0;
                        s.tokens += usage.input_tokens + usage.output_tokens;
                    }
                    Outcome::Failed { error, usage, .. } => {
                        s.failures_in_a_row += 1;
                        s.tokens += usage.input_tokens + usage.output_tokens;
                        if (hopeless || s.failures_in_a_row >= FAILURE_LIMIT) && s.end.is_none() {
                            s.end = Some(RunEnd::Failing { error: error.clone() });
                        }
                    }
                    Outcome::NotRun { .. } | Outcome::Withdrawn { .. } => {}
                }
            }
            keep(&outcome);
            let _ = tx.send(outcome);
        }
    }
}

/// One call, its reply cleaned; and whether its failure will be every other call's too
/// (the run then stops at once instead of after [`FAILURE_LIMIT`] failures).
fn generate(setup: &SnippetSetup, job: &SnippetJob) -> (Outcome, bool) {
    let outcome = match setup.chat.complete(&job.request) {
        Ok(reply) => {
            let cleaned = match clean_reply(&reply.text) {
                // Nothing whole before the token limit: the limit is at fault, not the chunk.
                Err(Rejected::Empty | Rejected::NoSentence) if reply.cut_off => Err(Rejected::Unfinished),
                cleaned => cleaned,
            };
            let text = match cleaned {
                Ok(text) => text,
                Err(reason @ Rejected::Unfinished) => {
                    tracing::warn!(path = %job.path, chunk = job.chunk_id, "snippet failed: {reason}");
                    let error = format!("{}: {reason}", setup.model_label);
                    return (Outcome::Failed { chunk_id: job.chunk_id, error, usage: reply.usage }, false);
                }
                Err(reason) => {
                    tracing::info!(path = %job.path, chunk = job.chunk_id, "snippet rejected: {reason}");
                    String::new()
                }
            };
            let snippet = Snippet { text, model: setup.model_label.clone(), created_at: now_secs() };
            Outcome::Written { chunk_id: job.chunk_id, key: job.key, snippet, usage: reply.usage }
        }
        Err(e) => {
            tracing::warn!(path = %job.path, chunk = job.chunk_id, "snippet failed: {e}");
            let (error, hopeless) = match hint(&setup.config, &e.kind) {
                Some((hint, hopeless)) => (format!("{e}; {hint}"), hopeless),
                None => (e.to_string(), false),
            };
            return (Outcome::Failed { chunk_id: job.chunk_id, error, usage: Usage::default() }, hopeless);
        }
    };
    (outcome, false)
}

/// What to do about a refusal, and whether no other chunk would escape it (a key the server
/// does not take, a model or endpoint it does not know). `None` when there is nothing to say.
fn hint(config: &SnippetConfig, kind: &ErrorKind) -> Option<(String, bool)> {
    let ErrorKind::Client { status, message } = kind else { return None };
    match status {
        401 | 403 => Some((
            match &config.api_key_env {
                Some(var) => format!("the server refused the API key in {var}"),
                None => "the server wants an API key: name its variable in snippets.api_key_env".to_string(),
            },
            true,
        )),
        404 => Some((
            format!(
                "the server knows no model `{}` at {}: check snippets.model and snippets.base_url",
                config.model, config.base_url
            ),
            true,
        )),
        400 | 413 if config.mode == SnippetMode::Document && is_context_overflow(message) => Some((
            format!(
                "the document is more than the model can read at once: lower snippets.document_budget \
                 (now {}) or use mode = \"section\"",
                config.document_budget
            ),
            false,
        )),
        _ => None,
    }
}

/// Whether a refusal says the prompt is longer than the model's context, in the words of
/// OpenAI, Anthropic, vLLM and llama.cpp's server.
fn is_context_overflow(message: &str) -> bool {
    let message = message.to_lowercase();
    ["context length", "context size", "context window", "too long", "too many tokens"]
        .iter()
        .any(|words| message.contains(words))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::providers::chat::{Chat, ChatReply};
    use crate::providers::http::ProviderError;
    use crate::snippets::ChatProvider;

    fn refused(status: u16, message: &str) -> ErrorKind {
        ErrorKind::Client { status, message: message.to_string() }
    }

    #[test]
    fn a_prompt_longer_than_the_model_reads_names_the_budget_to_lower() {
        let config =
            SnippetConfig { mode: SnippetMode::Document, ..SnippetConfig::new(ChatProvider::Anthropic, "m") };
        for message in [
            "prompt is too long: 2277 tokens > 2000 maximum",
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "the request exceeds the available context size, try increasing it",
        ] {
            let (hint, hopeless) = hint(&config, &refused(400, message)).unwrap();
            assert!(hint.contains("snippets.document_budget (now 6000)"), "{hint}");
            assert!(!hopeless, "other documents may fit");
        }
        assert_eq!(hint(&config, &refused(400, "invalid value for temperature")), None);
        let section = SnippetConfig { mode: SnippetMode::Section, ..config };
        assert_eq!(hint(&section, &refused(400, "prompt is too long")), None);
    }

    /// A model that always gives the same reply.
    struct Canned(ChatReply);

    impl Chat for Canned {
        fn complete(&self, _: &ChatRequest) -> Result<ChatReply, ProviderError> {
            Ok(self.0.clone())
        }
    }

    fn run_one(reply: &str, cut_off: bool) -> (Vec<Outcome>, RunEnd) {
        let usage = Usage { input_tokens: 80, output_tokens: 150, ..Usage::default() };
        let chat = Arc::new(Canned(ChatReply { text: reply.to_string(), usage, cut_off }));
        let setup = SnippetSetup::with_chat(SnippetConfig::new(ChatProvider::OpenAi, "m"), chat, "host");
        let request = ChatRequest {
            system: String::new(),
            document: String::new(),
            prompt: String::new(),
            max_tokens: 150,
        };
        let job = SnippetJob { chunk_id: 7, key: 9, path: "a.md".to_string(), request };
        let mut outcomes = Vec::new();
        let end = run(
            &setup,
            vec![job],
            Limits::default(),
            Totals::default(),
            Stops { run: &AtomicBool::new(false), withdrawn: &Withdrawn::default() },
            &|_| {},
            &mut |o| outcomes.push(o),
        );
        (outcomes, end)
    }

    #[test]
    fn a_reply_cut_off_before_a_whole_sentence_fails_instead_of_being_kept_empty() {
        for reply in ["", "This chunk sits under the heading"] {
            let (outcomes, _) = run_one(reply, true);
            match &outcomes[..] {
                [Outcome::Failed { error, usage, .. }] => {
                    assert!(error.contains("snippets.max_tokens"), "{error}");
                    assert_eq!(usage.output_tokens, 150);
                }
                other => panic!("{reply:?}: {other:?}"),
            }
        }
        // Without the limit to blame, an empty reply is the chunk's: kept empty, not asked again.
        let (outcomes, end) = run_one("", false);
        assert!(
            matches!(&outcomes[..], [Outcome::Written { snippet, .. }] if snippet.text.is_empty()),
            "{outcomes:?}"
        );
        assert_eq!(end, RunEnd::Finished);
        // A whole sentence before the limit is a snippet; the fragment after it is dropped.
        let (outcomes, _) = run_one("This chunk sets the retention of backups. It also", true);
        assert!(
            matches!(&outcomes[..], [Outcome::Written { snippet, .. }] if snippet.text == "This chunk sets the retention of backups."),
            "{outcomes:?}"
        );
    }

    /// A model that counts the calls it gets.
    struct Counting(std::sync::atomic::AtomicUsize);

    impl Chat for Counting {
        fn complete(&self, _: &ChatRequest) -> Result<ChatReply, ProviderError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Ok(ChatReply { text: "A sentence.".to_string(), usage: Usage::default(), cut_off: false })
        }
    }

    #[test]
    fn a_withdrawn_job_is_not_sent_and_costs_nothing() {
        let chat = Arc::new(Counting(Default::default()));
        let setup =
            SnippetSetup::with_chat(SnippetConfig::new(ChatProvider::OpenAi, "m"), chat.clone(), "host");
        let request = ChatRequest {
            system: String::new(),
            document: String::new(),
            prompt: String::new(),
            max_tokens: 50,
        };
        let jobs: Vec<SnippetJob> = (1..=3)
            .map(|id| SnippetJob {
                chunk_id: id,
                key: id.into(),
                path: "a.md".to_string(),
                request: request.clone(),
            })
            .collect();
        let withdrawn = Withdrawn::default();
        withdrawn.add([2]);
        let mut outcomes = Vec::new();
        let stops = Stops { run: &AtomicBool::new(false), withdrawn: &withdrawn };
        let end = run(&setup, jobs, Limits::default(), Totals::default(), stops, &|_| {}, &mut |o| {
            outcomes.push(o)
        });
        assert_eq!(end, RunEnd::Finished);
        assert_eq!(chat.0.load(Ordering::Relaxed), 2);
        assert!(matches!(outcomes[1], Outcome::Withdrawn { chunk_id: 2 }), "{outcomes:?}");
        let mut totals = Totals::default();
        outcomes.iter().for_each(|o| totals.count(o));
        assert_eq!(totals.calls, 2);
    }

    #[test]
    fn totals_tell_the_tokens_written_to_the_prompt_cache_when_there_are_any() {
        let mut totals = Totals { calls: 3, input_tokens: 900, output_tokens: 60, ..Totals::default() };
        totals.cache_read_tokens = 500;
        assert_eq!(
            totals.to_string(),
            "3 calls (0 failed, 0 replies rejected), 900 input tokens (500 from the prompt cache), 60 output tokens"
        );
        totals.cache_write_tokens = 250;
        assert_eq!(
            totals.to_string(),
            "3 calls (0 failed, 0 replies rejected), 900 input tokens (500 from the prompt cache, 250 \
             written to it), 60 output tokens"
        );
    }
}
