//! Where a block may be cut: after sentences in prose, after lines in code, tables and
//! lists.
//!
//! Each function returns the start offsets of the units after the first one, so the units
//! tile the range they were cut from: a unit runs from its start to the next unit's start
//! and keeps its trailing whitespace.

use std::ops::Range;

/// Words that end with a period without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "eg", "ie", "etc", "vs", "cf", "al", "approx", "mr", "mrs", "ms", "dr", "st", "no", "fig",
    "vol", "resp",
];

/// Start offsets of the lines of `text[range]` after its first line. A line ends at `\n`, or
/// at a lone `\r` (old Mac line endings), and keeps its line break.
pub(crate) fn line_starts(text: &str, range: Range<usize>) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = Vec::new();
    for i in range.clone() {
        let ends_line = match bytes[i] {
            b'\n' => true,
            b'\r' => bytes.get(i + 1) != Some(&b'\n'),
            _ => false,
        };
        if ends_line && i + 1 < range.end {
            starts.push(i + 1);
        }
    }
    starts
}

/// Like [`line_starts`], but a blank line joins the line before it instead of starting a
/// unit of its own: a unit of nothing but whitespace would make an empty chunk.
pub(crate) fn content_line_starts(text: &str, range: Range<usize>) -> Vec<usize> {
    let starts = line_starts(text, range.clone());
    units(range, &starts)
        .into_iter()
        .skip(1)
        .filter(|line| !text[line.clone()].trim().is_empty())
        .map(|line| line.start)
        .collect()
}

/// Start offsets of the sentences of `text[range]` after its first sentence.
///
/// A sentence ends after `.`, `!` or `?` (and any closing quotes, brackets or emphasis
/// markers) followed by whitespace (or, for `!` and `?`, by Chinese or Japanese text), after
/// a stop that needs no space after it (the CJK full stops, the Devanagari danda and others:
/// see `is_unspaced_stop`), or at a blank line. The next
/// sentence starts at the first non-blank character after that.
pub(crate) fn sentence_starts(text: &str, range: Range<usize>) -> Vec<usize> {
    let slice = &text[range.clone()];
    let base = range.start;
    let mut starts = Vec::new();
    let mut chars = slice.char_indices().peekable();
    // Set when a sentence has ended and the next one starts at the next non-blank character.
    let mut ended = false;
    let mut newlines_in_gap = 0;
    while let Some((i, c)) = chars.next() {
        if ended {
            if c.is_whitespace() {
                continue;
            }
            starts.push(base + i);
            ended = false;
        }
        match c {
            '.' | '!' | '?' => {
                // Swallow runs like `?!` or `...` and closing marks like `."` or `.)**`.
                while let Some(&(_, next)) = chars.peek() {
                    if matches!(next, '.' | '!' | '?' | '"' | '\'' | ')' | ']' | '*' | '_' | '”' | '’' | '»')
                    {
                        chars.next();
                    } else {
                        break;
                    }
                }
                let followed_by_space = chars.peek().is_some_and(|&(_, next)| next.is_whitespace());
                // Chinese and Japanese text set with ASCII marks puts no space after them.
                let followed_by_cjk =
                    c != '.' && chars.peek().is_some_and(|&(_, next)| is_unspaced_script(next));
                if followed_by_cjk || followed_by_space && !(c == '.' && is_abbreviation(&slice[..i])) {
                    ended = true;
                }
            }
            c if is_unspaced_stop(c) => {
                // Closing quotes and brackets after the stop belong to its sentence:
                // `他说：「好。」然后`.
                while chars.peek().is_some_and(|&(_, next)| is_unspaced_stop(next) || is_closing(next)) {
                    chars.next();
                }
                ended = true;
            }
            '\n' => {
                // A blank line (only whitespace between two line breaks) ends a sentence too.
                newlines_in_gap += 1;
                if newlines_in_gap >= 2 {
                    ended = true;
                }
                continue;
            }
            c if c.is_whitespace() => continue,
            _ => {}
        }
        newlines_in_gap = 0;
    }
    starts
}

/// Start offsets of the sentences of `text[range]` after its first one, for cutting by
/// meaning rather than by size: like [`sentence_starts`], but a sentence must visibly start
/// one, with anything but a lowercase letter (a capital, a digit, a quote, a bracket, a
/// code span), or follow a blank line.
///
/// A stop before a lowercase word is more often a file name, a version or an abbreviation
/// we do not know (`config.yaml. then`, `approx. ten`) than the end of a thought, and a
/// sentence wrongly joined to its neighbour costs the semantic strategy nothing but a
/// candidate breakpoint. Decimals and URLs (`2.5`, `traefik.io/docs`) never split, because a
/// stop must be followed by whitespace.
pub(crate) fn capitalised_sentence_starts(text: &str, range: Range<usize>) -> Vec<usize> {
    let mut starts = sentence_starts(text, range.clone());
    starts.retain(|&start| {
        let next = text[start..].chars().next();
        // The blanks before the sentence: scanned from its start backwards, so each costs
        // only its own gap.
        let gap_start = range.start + text[range.start..start].trim_end().len();
        let after_blank_line = text[gap_start..start].matches('\n').count() >= 2;
        after_blank_line || next.is_some_and(|c| !c.is_lowercase())
    });
    starts
}

/// Marks that end a sentence whatever follows them: the CJK full stops, exclamation and
/// question marks (full and half width), the Devanagari danda and double danda, the Thai
/// angkhankhu and khomut, the Arabic question mark and the Urdu full stop, the Armenian,
/// Ethiopic and Myanmar full stops, and the doubled Western marks.
fn is_unspaced_stop(c: char) -> bool {
    matches!(
        c,
        '。' | '！'
            | '？'
            | '｡'
            | '．'
            | '।'
            | '॥'
            | '๚'
            | '๛'
            | '؟'
            | '۔'
            | '։'
            | '።'
            | '။'
            | '‼'
            | '⁇'
            | '⁈'
            | '⁉'
    )
}

/// Closing quotes and brackets that stay with the sentence they close.
fn is_closing(c: char) -> bool {
    matches!(
        c,
        '」' | '』'
            | '）'
            | '】'
            | '〕'
            | '〉'
            | '》'
            | '〗'
            | '〙'
            | '”'
            | '’'
            | '"'
            | '\''
            | ')'
            | ']'
            | '»'
    )
}

/// Letters of scripts whose sentences follow each other without a space.
fn is_unspaced_script(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}')
}

/// Whether the word right before a period is an abbreviation or an initial ("J. Doe").
fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    let mut letters = word.chars();
    if let (Some(first), None) = (letters.next(), letters.next()) {
        return first.is_alphabetic() && first.is_uppercase();
    }
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
}

/// Turns a range and the start offsets inside it into the units they delimit.
pub(crate) fn units(range: Range<usize>, starts: &[usize]) -> Vec<Range<usize>> {
    let mut out = Vec::with_capacity(starts.len() + 1);
    let mut start = range.start;
    for &next in starts {
        if next > start && next < range.end {
            out.push(start..next);
            start = next;
        }
    }
    out.push(start..range.end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(text: &str) -> Vec<&str> {
        let starts = sentence_starts(text, 0..text.len());
        units(0..text.len(), &starts).into_iter().map(|r| &text[r]).collect()
    }

    fn lines(text: &str) -> Vec<&str> {
        let starts = line_starts(text, 0..text.len());
        units(0..text.len(), &starts).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn sentences_end_at_terminal_punctuation_before_whitespace() {
        assert_eq!(
            sentences("One. Two? \"Three!\" Four…\nstill four. Version 2.0 is out."),
            vec!["One. ", "Two? ", "\"Three!\" ", "Four…\nstill four. ", "Version 2.0 is out."]
        );
    }

    #[test]
    fn abbreviations_and_initials_do_not_end_sentences() {
        assert_eq!(
            sentences("Use a tool, e.g. this one. J. Doe wrote it (cf. the notes)."),
            vec!["Use a tool, e.g. this one. ", "J. Doe wrote it (cf. the notes)."]
        );
    }

    #[test]
    fn blank_lines_and_cjk_stops_end_sentences() {
        assert_eq!(sentences("no stop\n\nnext"), vec!["no stop\n\n", "next"]);
        assert_eq!(sentences("一。二！三"), vec!["一。", "二！", "三"]);
    }

    #[test]
    fn sentences_end_in_every_script() {
        // Closing quotes and brackets stay with the sentence they close.
        assert_eq!(sentences("他说：「好。」然后走了。"), vec!["他说：「好。」", "然后走了。"]);
        assert_eq!(sentences("本当？（はい）次"), vec!["本当？", "（はい）次"]);
        assert_eq!(sentences("安装完成．下一步｡終"), vec!["安装完成．", "下一步｡", "終"]);
        // ASCII marks in Chinese text are followed by no space; a period stays inside names.
        assert_eq!(sentences("为什么?因为main.rs文件!好"), vec!["为什么?", "因为main.rs文件!", "好"]);
        // Devanagari danda, Thai angkhankhu, Arabic question mark, Urdu full stop.
        assert_eq!(sentences("यह पहला है। यह दूसरा॥ अंत"), vec!["यह पहला है। ", "यह दूसरा॥ ", "अंत"]);
        assert_eq!(sentences("หนึ่ง๚สอง"), vec!["หนึ่ง๚", "สอง"]);
        assert_eq!(sentences("كيف؟ هكذا۔ تم"), vec!["كيف؟ ", "هكذا۔ ", "تم"]);
    }

    fn capitalised_sentences(text: &str) -> Vec<&str> {
        let starts = capitalised_sentence_starts(text, 0..text.len());
        units(0..text.len(), &starts).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn capitalised_sentences_start_with_anything_but_a_lowercase_letter() {
        assert_eq!(
            capitalised_sentences("Bake it. Then cool it! 3 hours? `x` works. \"Quoted.\" Done"),
            vec!["Bake it. ", "Then cool it! ", "3 hours? ", "`x` works. ", "\"Quoted.\" ", "Done"]
        );
        // A stop before a lowercase word does not end a sentence.
        assert_eq!(
            capitalised_sentences("Edit config.yaml. then restart. It works."),
            vec!["Edit config.yaml. then restart. ", "It works."]
        );
    }

    #[test]
    fn capitalised_sentences_keep_abbreviations_decimals_and_urls_whole() {
        assert_eq!(
            capitalised_sentences(
                "Use e.g. Traefik 2.5 or later. See https://doc.traefik.io/traefik/v3.0/. Dr. Who agrees."
            ),
            vec![
                "Use e.g. Traefik 2.5 or later. ",
                "See https://doc.traefik.io/traefik/v3.0/. ",
                "Dr. Who agrees."
            ]
        );
    }

    #[test]
    fn capitalised_sentences_end_at_blank_lines_and_at_the_end() {
        assert_eq!(
            capitalised_sentences("one line\n\nlowercase next"),
            vec!["one line\n\n", "lowercase next"]
        );
        assert_eq!(capitalised_sentences("Only one."), vec!["Only one."]);
        assert_eq!(capitalised_sentences(""), vec![""]);
        assert_eq!(capitalised_sentences("一。二。"), vec!["一。", "二。"]);
    }

    #[test]
    fn blank_lines_join_the_line_before_them() {
        let text = "a\n\n  \nb\n\n";
        let starts = content_line_starts(text, 0..text.len());
        let lines: Vec<&str> = units(0..text.len(), &starts).into_iter().map(|r| &text[r]).collect();
        assert_eq!(lines, vec!["a\n\n  \n", "b\n\n"]);
    }

    #[test]
    fn lines_keep_their_breaks_including_lone_carriage_returns() {
        assert_eq!(lines("a\r\nb\rc\n"), vec!["a\r\n", "b\r", "c\n"]);
        assert_eq!(lines(""), vec![""]);
    }
}
