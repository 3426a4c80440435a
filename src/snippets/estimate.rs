//! Token and call estimates of a snippet run, counted with tiktoken before any call.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::ops::{Add, AddAssign};

use crate::providers::chat::ChatRequest;

/// Version of the count's rules (its tokenizer, [`CALL_OVERHEAD_TOKENS`] and the rest):
/// bump it whenever a change makes the same requests come to another estimate, so that the
/// estimates an index folder keeps from an earlier count are counted again.
pub const COUNT_VERSION: u32 = 1;

/// Output tokens expected of one reply: the one or two sentences a snippet prompt asks for
/// take about this many.
pub const EXPECTED_OUTPUT_TOKENS: u32 = 60;

/// Input tokens a call costs beyond its texts: the role markers and framing of the system
/// and user messages and the start of the reply. OpenAI documents about four per message
/// and three for the reply; Anthropic's framing is of the same size.
pub const CALL_OVERHEAD_TOKENS: u64 = 12;

/// Shorter prefixes are not cached: OpenAI caches prompts from 1,024 tokens, Anthropic from
/// 1,024 tokens or more depending on the model. A section-mode document block never comes
/// near it.
pub const MIN_CACHED_PREFIX_TOKENS: u64 = 1024;

/// What a run of snippet calls is expected to cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate {
    pub calls: u64,
    /// All input tokens, the cached ones included.
    pub input_tokens: u64,
    /// Input tokens a prompt cache can serve: the system text and document of each call
    /// that repeats the previous call's.
    pub cached_input_tokens: u64,
    /// [`EXPECTED_OUTPUT_TOKENS`] per call (or the call's `max_tokens`, if lower).
    pub output_tokens: u64,
}

impl Add for Estimate {
    type Output = Estimate;

    fn add(self, other: Estimate) -> Estimate {
        Estimate {
            calls: self.calls + other.calls,
            input_tokens: self.input_tokens + other.input_tokens,
            cached_input_tokens: self.cached_input_tokens + other.cached_input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
        }
    }
}

impl AddAssign for Estimate {
    fn add_assign(&mut self, other: Estimate) {
        *self = *self + other;
    }
}

impl std::iter::Sum for Estimate {
    fn sum<I: Iterator<Item = Estimate>>(iter: I) -> Estimate {
        iter.fold(Estimate::default(), Add::add)
    }
}

/// A request as [`estimate_priced`] takes it: the parts a prompt cache can share, and the
/// tokens of its prompt, already counted.
#[derive(Debug, Clone)]
pub struct Priced<'a> {
    pub system: &'a str,
    pub document: Cow<'a, str>,
    pub prompt_tokens: u64,
    pub max_tokens: u32,
}

impl<'a> Priced<'a> {
    /// `request`, its prompt counted exactly.
    pub fn exactly(request: &'a ChatRequest) -> Priced<'a> {
        Priced {
            system: &request.system,
            document: Cow::Borrowed(&request.document),
            prompt_tokens: count_tokens(&request.prompt) as u64,
            max_tokens: request.max_tokens,
        }
    }
}

/// Estimates what sending `requests` costs, in the order given. Requests about one document
/// should come together, as the generator sends them: only a call whose system text and
/// document repeat the previous call's counts as served from the prompt cache.
pub fn estimate<'a>(requests: impl IntoIterator<Item = &'a ChatRequest>) -> Estimate {
    estimate_priced(requests.into_iter().map(Priced::exactly))
}

/// [`estimate`] of requests whose prompts are counted already.
///
/// Each distinct system text and document is tokenized once, so ten thousand chunks of a
/// few hundred documents cost a few hundred document counts, not ten thousand.
pub fn estimate_priced<'a>(requests: impl IntoIterator<Item = Priced<'a>>) -> Estimate {
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut count_once = |text: &str| match counts.get(text) {
        Some(&n) => n,
        None => *counts.entry(text.to_string()).or_insert(count_tokens(text) as u64),
    };
    // The previous request and the tokens of its system text and document: consecutive
    // requests about one document are compared, and not hashed again.
    let mut previous: Option<(Priced, u64)> = None;
    let mut total = Estimate::default();
    for request in requests {
        let repeated = previous
            .as_ref()
            .filter(|(p, _)| p.system == request.system && p.document == request.document)
            .map(|&(_, shared)| shared);
        let shared = match repeated {
            Some(shared) => shared,
            None => count_once(request.system) + count_once(&request.document),
        };
        let cached = repeated.is_some() && shared >= MIN_CACHED_PREFIX_TOKENS;
        total += Estimate {
            calls: 1,
            input_tokens: shared + request.prompt_tokens + CALL_OVERHEAD_TOKENS,
            cached_input_tokens: if cached { shared } else { 0 },
            output_tokens: u64::from(request.max_tokens.min(EXPECTED_OUTPUT_TOKENS)),
        };
        previous = Some((request, shared));
    }
    total
}

/// One line for people: "2,139 calls, ≈1.2M input tokens (812k from the prompt cache),
/// ≈128k output tokens".
impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.calls == 1 { "call" } else { "calls" };
        write!(f, "{} {noun}, ≈{} input tokens", grouped(self.calls), approx(self.input_tokens))?;
        if self.cached_input_tokens > 0 {
            write!(f, " ({} from the prompt cache)", approx(self.cached_input_tokens))?;
        }
        write!(f, ", ≈{} output tokens", approx(self.output_tokens))
    }
}

/// `n` with thousands separators: "2,139".
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `n` to two significant figures or whole units of a thousand: "812", "1.2k", "128k",
/// "1M", "3.4B".
fn approx(n: u64) -> String {
    const UNITS: [&str; 3] = ["k", "M", "B"];
    if n < 1000 {
        return n.to_string();
    }
    let mut value = n as f64 / 1000.0;
    let mut unit = 0;
    // Promoted before rounding: 999,600 reads "1M", not "1000k".
    while value >= 999.5 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    let digits = if value < 9.95 { format!("{value:.1}") } else { format!("{value:.0}") };
    let digits = digits.strip_suffix(".0").unwrap_or(&digits);
    format!("{digits}{}", UNITS[unit])
}

/// cl100k token count of `text`: OpenAI's count, and close to Anthropic's (bounded segments
/// at a time, so a long run without whitespace stays cheap).
pub(crate) fn count_tokens(text: &str) -> usize {
    #[cfg(test)]
    COUNTED_BYTES.with(|n| n.set(n.get() + text.len()));
    crate::chunk::tokens::count(text)
}

#[cfg(test)]
thread_local! {
    /// Bytes [`count_tokens`] was given on this thread: what tests hold the counting to.
    static COUNTED_BYTES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Bytes tokenized on this thread so far.
#[cfg(test)]
pub(crate) fn counted_bytes() -> usize {
    COUNTED_BYTES.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(document: &str, prompt: &str, max_tokens: u32) -> ChatRequest {
        ChatRequest {
            system: "Situate the chunk.".to_string(),
            document: document.to_string(),
            prompt: prompt.to_string(),
            max_tokens,
        }
    }

    /// A document long enough for a prompt cache to take.
    fn long(name: &str) -> String {
        format!("{name}: {}", "the nightly backups are kept for thirty days. ".repeat(150))
    }

    fn input(r: &ChatRequest) -> u64 {
        (count_tokens(&r.system) + count_tokens(&r.document) + count_tokens(&r.prompt)) as u64
            + CALL_OVERHEAD_TOKENS
    }

    fn shared(r: &ChatRequest) -> u64 {
        (count_tokens(&r.system) + count_tokens(&r.document)) as u64
    }

    #[test]
    fn grouped_requests_after_the_first_of_a_document_come_from_the_cache() {
        let (a, b) = (long("alpha"), long("beta"));
        assert!(count_tokens(&a) as u64 > MIN_CACHED_PREFIX_TOKENS);
        let requests = vec![
            request(&a, "chunk one", 150),
            request(&a, "chunk two", 150),
            request(&a, "chunk three", 150),
            request(&b, "chunk four", 150),
            request(&b, "chunk five", 150),
        ];
        let e = estimate(&requests);
        assert_eq!(e.calls, 5);
        assert_eq!(e.input_tokens, requests.iter().map(input).sum::<u64>());
        assert_eq!(e.cached_input_tokens, 2 * shared(&requests[0]) + shared(&requests[3]));
        assert_eq!(e.output_tokens, 5 * u64::from(EXPECTED_OUTPUT_TOKENS));
    }

    #[test]
    fn a_document_seen_again_later_is_counted_once_but_not_cached() {
        let (a, b) = (long("alpha"), long("beta"));
        let requests = vec![request(&a, "one", 150), request(&b, "two", 150), request(&a, "three", 150)];
        let e = estimate(&requests);
        assert_eq!(e.cached_input_tokens, 0);
        assert_eq!(e.input_tokens, requests.iter().map(input).sum::<u64>());
    }

    #[test]
    fn short_documents_are_not_cached() {
        let requests = vec![request("Title: Ops", "one", 150), request("Title: Ops", "two", 150)];
        let e = estimate(&requests);
        assert_eq!((e.calls, e.cached_input_tokens), (2, 0));
    }

    #[test]
    fn output_is_the_expected_reply_or_the_limit_if_lower() {
        let requests = vec![request("d", "p", 20), request("d", "p", 500)];
        assert_eq!(estimate(&requests).output_tokens, 20 + u64::from(EXPECTED_OUTPUT_TOKENS));
        assert_eq!(estimate(&[]), Estimate::default());
    }

    #[test]
    fn estimates_add_up() {
        let one = Estimate { calls: 1, input_tokens: 10, cached_input_tokens: 4, output_tokens: 6 };
        let mut total = one + one;
        total += one;
        assert_eq!(
            total,
            Estimate { calls: 3, input_tokens: 30, cached_input_tokens: 12, output_tokens: 18 }
        );
        assert_eq!([one, one, one].into_iter().sum::<Estimate>(), total);
    }

    #[test]
    fn display_is_one_line_for_people() {
        let e = Estimate {
            calls: 2139,
            input_tokens: 1_234_567,
            cached_input_tokens: 812_000,
            output_tokens: 128_340,
        };
        assert_eq!(
            e.to_string(),
            "2,139 calls, ≈1.2M input tokens (812k from the prompt cache), ≈128k output tokens"
        );
        let e = Estimate { calls: 1, input_tokens: 950, cached_input_tokens: 0, output_tokens: 60 };
        assert_eq!(e.to_string(), "1 call, ≈950 input tokens, ≈60 output tokens");
    }

    #[test]
    fn numbers_read_at_a_glance() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1000, "1k"),
            (1234, "1.2k"),
            (9960, "10k"),
            (128_340, "128k"),
            (999_600, "1M"),
            (3_460_000, "3.5M"),
            (3_400_000_000, "3.4B"),
            (7_000_000_000_000, "7000B"),
        ];
        for (n, want) in cases {
            assert_eq!(approx(n), want, "for {n}");
        }
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
