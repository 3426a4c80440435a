//! The cleaning of a model's reply into a snippet: the reasoning, lead-ins, quotes and
//! markdown around it taken off, its complete sentences kept, and what is no snippet
//! rejected with a reason users can read.

use crate::chunk::is_atx_heading;

/// Why a reply was not kept as a snippet. The messages are shown to users.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the model's reply was empty")]
    Empty,
    #[error("the model declined to answer")]
    Refusal,
    #[error("the model's reply held no complete sentence")]
    NoSentence,
    #[error("the model's reply was too short to situate the chunk")]
    TooShort,
    #[error("the model's reply was mostly not words")]
    Junk,
    /// The model used up `max_tokens` before it got to the answer (a thinking model, most
    /// often). That says more of the model's settings than of the chunk: it is not kept,
    /// and the chunk waits.
    #[error(
        "the model ran out of tokens before it gave its answer: raise snippets.max_tokens or turn its thinking off"
    )]
    Unfinished,
}

/// The tags in which thinking models (DeepSeek-R1, Qwen3, …) put their reasoning before the
/// answer, when the server does not take it out of the reply.
const REASONING_TAGS: [&str; 2] = ["think", "thinking"];

/// The reply after the reasoning a thinking model may open it with; `Unfinished` when the
/// reasoning never closes.
fn skip_reasoning(raw: &str) -> Result<&str, Rejected> {
    let text = raw.trim_start();
    for tag in REASONING_TAGS {
        if let Some(rest) = strip_prefix_ignore_case(text, &format!("<{tag}>")) {
            let close = format!("</{tag}>");
            let at = rest.to_ascii_lowercase().find(&close).ok_or(Rejected::Unfinished)?;
            return Ok(&rest[at + close.len()..]);
        }
    }
    Ok(raw)
}

/// At most this many sentences of a reply are kept.
const MAX_SENTENCES: usize = 3;

/// Fewer words than this cannot situate a chunk.
const MIN_WORDS: usize = 3;

/// The snippet in a model's reply: a thinking model's reasoning, lead-ins ("Here is the context:"), tags, surrounding
/// quotes and markdown marks stripped, whitespace collapsed to single spaces, and only its
/// complete sentences kept (at most three), so that a reply cut off by the token limit loses
/// its last fragment rather than ending mid-word in the index.
pub fn clean_reply(raw: &str) -> Result<String, Rejected> {
    let text = unwrap_reply(skip_reasoning(raw)?);
    if text.is_empty() {
        return Err(Rejected::Empty);
    }
    if is_refusal(&text) {
        return Err(Rejected::Refusal);
    }
    let sentences = complete_sentences(&text);
    if sentences.is_empty() {
        return Err(Rejected::NoSentence);
    }
    let kept = sentences[..sentences.len().min(MAX_SENTENCES)].join(" ");
    let words = kept.split_whitespace().filter(|w| w.chars().any(char::is_alphabetic)).count();
    if words < MIN_WORDS {
        return Err(Rejected::TooShort);
    }
    let visible = kept.chars().filter(|c| !c.is_whitespace()).count();
    let letters = kept.chars().filter(|c| c.is_alphabetic()).count();
    if letters * 2 < visible {
        return Err(Rejected::Junk);
    }
    Ok(kept)
}

/// The reply without its wrapping, on one line with single spaces.
fn unwrap_reply(raw: &str) -> String {
    let text = peel(raw);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // A markdown heading above the answer ("## Context") is a title, not part of it.
    let body: Vec<&str> =
        if lines.len() > 1 { lines.iter().copied().filter(|l| !is_atx_heading(l)).collect() } else { lines };
    let flat: Vec<String> = body.into_iter().map(|l| strip_emphasis(strip_line_marks(l))).collect();
    let collapsed = flat.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    // Markdown marks may have hidden a lead-in or quotes ("**Context:** …", "> \"…\"").
    peel(&collapsed).to_string()
}

/// Strips tags, lead-ins and surrounding quotes from both ends until none is left.
fn peel(text: &str) -> &str {
    let mut text = text.trim();
    loop {
        let before = text;
        text = strip_tags(text).trim();
        text = strip_lead_in(text).trim();
        text = strip_quotes(text).trim();
        if text == before {
            return text;
        }
    }
}

/// Strips an opening tag at the start (`<context>`) and a closing tag at the end.
fn strip_tags(text: &str) -> &str {
    let mut text = text;
    if let Some(rest) = text.strip_prefix('<')
        && let Some((name, after)) = rest.split_once('>')
        && is_tag_name(name)
    {
        text = after;
    }
    if let Some(rest) = text.strip_suffix('>')
        && let Some(open) = rest.rfind("</")
        && is_tag_name(&rest[open + 2..])
    {
        text = &rest[..open];
    }
    text
}

fn is_tag_name(name: &str) -> bool {
    name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Words a model opens with before it gets to the answer ("Sure, …"). Longer forms come
/// before their prefixes.
const INTERJECTIONS: [&str; 8] =
    ["certainly", "absolutely", "of course", "alright", "okay", "great", "sure", "ok"];

/// Labels a model puts before the answer ("Context: …").
const LABELS: [&str; 9] = [
    "context",
    "situating context",
    "succinct context",
    "short context",
    "context note",
    "note",
    "snippet",
    "answer",
    "summary",
];

/// How lead-in sentences start ("Here is the context for this chunk:").
const LEAD_INS: [&str; 5] = ["here is", "here's", "here\u{2019}s", "here are", "below is"];

/// A lead-in line says at most this many words.
const LEAD_IN_WORDS: usize = 12;

/// Strips one lead-in: an interjection, a line introducing the answer, or a label.
fn strip_lead_in(text: &str) -> &str {
    for word in INTERJECTIONS {
        if let Some(rest) = strip_prefix_ignore_case(text, word)
            && let Some(rest) = rest.strip_prefix([',', '!', '.', ':', ';'])
        {
            return rest;
        }
    }
    let is_lead_in = |head: &str| {
        let head = head.trim();
        head.split_whitespace().count() <= LEAD_IN_WORDS
            && (LEAD_INS.iter().any(|p| strip_prefix_ignore_case(head, p).is_some())
                || LABELS.iter().any(|l| head.eq_ignore_ascii_case(l)))
    };
    // A line of its own: "Here is the context:" or "Here's a short context for the chunk."
    if let Some((first, rest)) = text.split_once('\n')
        && !rest.trim().is_empty()
        && (is_lead_in(first)
            || (first.trim_end().ends_with(':') && first.split_whitespace().count() <= LEAD_IN_WORDS))
    {
        return rest;
    }
    // The same on the answer's own line: "Context: This chunk …".
    if let Some((head, rest)) = text.split_once(':')
        && !head.contains('\n')
        && is_lead_in(head)
    {
        return rest;
    }
    text
}

fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// Quote pairs a reply may be wrapped in.
const QUOTES: [(char, char); 6] = [
    ('"', '"'),
    ('\u{201c}', '\u{201d}'),
    ('\'', '\''),
    ('\u{2018}', '\u{2019}'),
    ('\u{ab}', '\u{bb}'),
    ('`', '`'),
];

/// Strips quotes around the whole text, or an opening quote whose closing one was cut off.
/// Quotes around a term inside the text ("\"Retention\" covers …") stay.
fn strip_quotes(text: &str) -> &str {
    for (open, close) in QUOTES {
        let Some(inner) = text.strip_prefix(open) else { continue };
        if let Some(inner) = inner.strip_suffix(close)
            && !inner.contains([open, close])
        {
            return inner;
        }
        if !inner.contains(close) {
            return inner;
        }
        return text;
    }
    text
}

/// Strips the marks that open a markdown line: headings, block quotes, bullets, numbers.
fn strip_line_marks(line: &str) -> &str {
    let mut line = line.trim();
    loop {
        let before = line;
        if is_atx_heading(line) {
            line = line.trim_start_matches('#');
        }
        if let Some(rest) = line.strip_prefix('>') {
            line = rest;
        }
        for bullet in ["- ", "* ", "+ ", "\u{2022} "] {
            if let Some(rest) = line.strip_prefix(bullet) {
                line = rest;
            }
        }
        let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if (1..=2).contains(&digits)
            && let Some(rest) =
                line[digits..].strip_prefix(". ").or_else(|| line[digits..].strip_prefix(") "))
        {
            line = rest;
        }
        line = line.trim_start();
        if line == before {
            return line;
        }
    }
}

/// Drops markdown emphasis and code marks. An underscore inside a word (`max_tokens`) stays.
fn strip_emphasis(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let is_word = |i: Option<usize>| i.and_then(|i| chars.get(i)).is_some_and(|c| c.is_alphanumeric());
    let mut out = String::with_capacity(line.len());
    for (i, &c) in chars.iter().enumerate() {
        let drop = match c {
            '*' | '`' => true,
            '~' => chars.get(i + 1) == Some(&'~') || i > 0 && chars[i - 1] == '~',
            '_' => !(is_word(i.checked_sub(1)) && is_word(Some(i + 1))),
            _ => false,
        };
        if !drop {
            out.push(c);
        }
    }
    out
}

/// How a refusal or an apology opens, lowercased.
const REFUSAL_OPENINGS: [&str; 17] = [
    "i'm sorry",
    "i am sorry",
    "sorry",
    "i apologi",
    "i cannot",
    "i can't",
    "i can not",
    "i'm unable",
    "i am unable",
    "i'm not able",
    "i am not able",
    "i don't have",
    "i do not have",
    "i won't",
    "unfortunately, i",
    "as an ai",
    "as a language model",
];

/// Phrases that mark a refusal wherever they stand, lowercased. A snippet speaks about the
/// document in the third person, so none of them belongs in one.
const REFUSAL_PHRASES: [&str; 6] =
    ["as an ai", "as a language model", "i'm sorry", "i am sorry", "i apologize", "i apologise"];

fn is_refusal(text: &str) -> bool {
    let lower = text.to_lowercase().replace('\u{2019}', "'");
    REFUSAL_OPENINGS.iter().any(|p| lower.starts_with(p)) || REFUSAL_PHRASES.iter().any(|p| lower.contains(p))
}

/// Words that end in a period without ending a sentence, lowercased, without that period.
const ABBREVIATIONS: [&str; 13] =
    ["e.g", "i.e", "cf", "vs", "approx", "incl", "esp", "fig", "mr", "mrs", "ms", "dr", "st"];

/// Marks that may follow a sentence's final punctuation and still belong to it.
fn is_closer(c: char) -> bool {
    matches!(c, '"' | '\'' | '\u{201d}' | '\u{2019}' | ')' | ']' | '\u{bb}')
}

/// The complete sentences of `text` (single-spaced), in order. A sentence ends at `.`, `!` or
/// `?` (possibly followed by closing quotes or brackets) before a space or the end of the
/// text, except for an ellipsis, a known abbreviation, and a period followed by a lowercase
/// letter or a digit ("e.g. the", "see fig. 3"). Punctuation inside a token ("v2.1") ends
/// nothing. Whatever follows the last sentence end is a fragment, and dropped.
fn complete_sentences(text: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let is_terminator = |c: char| matches!(c, '.' | '!' | '?');
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        if !is_terminator(chars[i].1) {
            i += 1;
            continue;
        }
        let run_start = i;
        while i < chars.len() && is_terminator(chars[i].1) {
            i += 1;
        }
        let run = &chars[run_start..i];
        let only_periods = run.iter().all(|&(_, c)| c == '.');
        while i < chars.len() && is_closer(chars[i].1) {
            i += 1;
        }
        let end = chars.get(i).map_or(text.len(), |&(b, _)| b);
        let next = match chars.get(i) {
            None => None,
            Some(&(_, ' ')) => chars.get(i + 1).map(|&(_, c)| c),
            // Punctuation inside a token ("v2.1", "example.com").
            Some(_) => continue,
        };
        let ellipsis = only_periods && run.len() > 1;
        let continues = only_periods
            && (next.is_some_and(|c| c.is_lowercase() || c.is_ascii_digit())
                || is_abbreviation(text, chars[run_start].0));
        if ellipsis || continues {
            continue;
        }
        let sentence = text[start..end].trim();
        if sentence.chars().any(char::is_alphabetic) {
            sentences.push(sentence);
        }
        start = end;
    }
    sentences
}

/// Whether the word before the period at byte `period` is a known abbreviation.
fn is_abbreviation(text: &str, period: usize) -> bool {
    let word = text[..period].rsplit(' ').next().unwrap_or("");
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_reply_keeps_whole_sentences() {
        let reply = "This chunk gives the retention periods of the nightly backups. It belongs to the \
                     Backups section of the operations runbook.";
        assert_eq!(clean_reply(reply).unwrap(), reply.split_whitespace().collect::<Vec<_>>().join(" "));
        assert_eq!(
            clean_reply("  This chunk covers\n  retention   of backups.\n").unwrap(),
            "This chunk covers retention of backups."
        );
    }

    #[test]
    fn clean_reply_drops_a_fragment_cut_off_by_the_token_limit() {
        let reply = "This chunk lists how long backups are kept. It also notes that monthly copies";
        assert_eq!(clean_reply(reply).unwrap(), "This chunk lists how long backups are kept.");
        let reply = "This chunk lists how long backups are kept. It also covers...";
        assert_eq!(clean_reply(reply).unwrap(), "This chunk lists how long backups are kept.");
    }

    #[test]
    fn clean_reply_keeps_at_most_three_sentences() {
        let reply = "One sentence is here. Two sentences are here! Three sentences, right? Four is too many.";
        assert_eq!(
            clean_reply(reply).unwrap(),
            "One sentence is here. Two sentences are here! Three sentences, right?"
        );
    }

    #[test]
    fn clean_reply_strips_lead_ins_quotes_tags_and_markdown() {
        let want = "This chunk sets the backup retention periods.";
        for reply in [
            "Here is the context:\n\"This chunk sets the backup retention periods.\"",
            "Here's a succinct context for the chunk:\n\nThis chunk sets the backup retention periods.",
            "Sure! Here is the context: This chunk sets the backup retention periods.",
            "Certainly! This chunk sets the backup retention periods.",
            "Context: This chunk sets the backup retention periods.",
            "**Context:** \u{201c}This chunk sets the backup retention periods.\u{201d}",
            "<context>\nThis chunk sets the backup retention periods.\n</context>",
            "\"<context>This chunk sets the backup retention periods.</context>\"",
            "## Context\n\nThis chunk sets the *backup* retention periods.",
            "- This chunk sets the **backup** retention periods.",
            "> This chunk sets the _backup_ retention periods.",
        ] {
            assert_eq!(clean_reply(reply).as_deref(), Ok(want), "for {reply:?}");
        }
        // An interjection is stripped only when punctuation closes it.
        assert_eq!(clean_reply("Okay, backups run nightly.").as_deref(), Ok("backups run nightly."));
        let reply = "Surely the nightly backups matter most.";
        assert_eq!(clean_reply(reply).as_deref(), Ok(reply));
    }

    #[test]
    fn clean_reply_drops_a_thinking_models_reasoning() {
        let want = "This chunk sets the backup retention periods.";
        for reply in [
            "<think>\nThe user wants a note. I should mention retention.\n</think>\n\nThis chunk sets the backup retention periods.",
            "<thinking>Mention retention.</thinking> This chunk sets the backup retention periods.",
            "<think></think>\nThis chunk sets the backup retention periods.",
        ] {
            assert_eq!(clean_reply(reply).as_deref(), Ok(want), "for {reply:?}");
        }
        // Cut off by the token limit while it was still thinking: no answer at all.
        let cut = "<think>\nThe user wants a note about the chunk. It is about retention. Let me";
        assert_eq!(clean_reply(cut), Err(Rejected::Unfinished));
    }

    #[test]
    fn clean_reply_leaves_quotes_and_underscores_inside_the_text() {
        let reply = "The \"Retention\" section sets max_age for each backup tier.";
        assert_eq!(clean_reply(reply).unwrap(), reply);
    }

    #[test]
    fn clean_reply_does_not_end_sentences_at_abbreviations_or_versions() {
        let reply = "This chunk lists backup tools, e.g. restic and borg, and their flags. Since v2.1 \
                     the default is 30 days, i.e. the team's choice, see fig. 3 of the runbook. A third \
                     sentence ends here. And a fourth";
        assert_eq!(
            clean_reply(reply).unwrap(),
            "This chunk lists backup tools, e.g. restic and borg, and their flags. Since v2.1 the default \
             is 30 days, i.e. the team's choice, see fig. 3 of the runbook. A third sentence ends here."
        );
    }

    #[test]
    fn clean_reply_rejects_what_is_no_snippet() {
        for (reply, why) in [
            ("", Rejected::Empty),
            ("  \n ", Rejected::Empty),
            ("<context></context>", Rejected::Empty),
            ("Here is the context:", Rejected::Empty),
            ("I'm sorry, but I can't help with that request.", Rejected::Refusal),
            ("I cannot situate this chunk without more of the document.", Rejected::Refusal),
            ("As an AI language model, I have no access to the document.", Rejected::Refusal),
            ("Unfortunately, I don\u{2019}t see the document.", Rejected::Refusal),
            ("...", Rejected::NoSentence),
            ("Backups retention policy for the platform team", Rejected::NoSentence),
            ("Retention.", Rejected::TooShort),
            ("x1 = 2340 + 5678; y2 = 91011 - 1213; z = 141516.", Rejected::Junk),
        ] {
            assert_eq!(clean_reply(reply), Err(why), "for {reply:?}");
        }
    }

    #[test]
    fn rejection_messages_read_as_messages() {
        assert_eq!(Rejected::Empty.to_string(), "the model's reply was empty");
        assert_eq!(Rejected::NoSentence.to_string(), "the model's reply held no complete sentence");
    }
}
