//! Chinese characters in one script: each Traditional character folded into its Simplified
//! form, in documents and queries alike.
//!
//! Chinese is written in two scripts that share most words but spell a few thousand
//! characters differently (`軟體開發` and `软体开发`). A reader types the script of their
//! input method, whatever the note was written in, and a team's notes or a book's sources
//! mix both. A query's pairs of characters then miss every pair with one character spelt the
//! other way. Folding both sides into one script lets either find both, as accents are
//! folded in Latin letters (`fold.rs`) and Elasticsearch's users fold Chinese with ICU's or
//! STConvert's Traditional-to-Simplified transforms.
//!
//! The table (`assets/han-variants/simplified.txt`, written by `scripts/han_variants.py`) is
//! OpenCC's: 4,105 characters, each with the Simplified form that OpenCC gives it alone
//! (`開` is `开`, `乾` is `干`, `鑑` is `鉴`). Where one Simplified character stands for
//! several Traditional ones (`發` and `髮` are both `发`), they become one, as accented and
//! plain letters do. Japanese kanji are folded by the same table (`機` becomes `机`), in its
//! text and its queries alike, so they still meet.

use std::sync::OnceLock;

/// Each line is a Traditional character followed by its Simplified form.
const TABLE: &str = include_str!("../../assets/han-variants/simplified.txt");

/// The first and last characters of the blocks of unified ideographs in the Basic
/// Multilingual Plane (Extension A and the unified block), where all but a few hundred of
/// the table's characters are; their forms are looked up by index.
const DENSE: std::ops::RangeInclusive<char> = '\u{3400}'..='\u{9FFF}';

/// The table, for lookups made on every Chinese term.
struct Forms {
    /// The form of each character of [`DENSE`], by its distance from the first; the
    /// character itself when it has none.
    dense: Vec<char>,
    /// The others (compatibility ideographs, the extensions beyond the Basic Multilingual
    /// Plane), sorted by character.
    sparse: Vec<(char, char)>,
}

impl Forms {
    fn get(&self, c: char) -> Option<char> {
        if DENSE.contains(&c) {
            let form = self.dense[c as usize - *DENSE.start() as usize];
            return (form != c).then_some(form);
        }
        self.sparse.binary_search_by_key(&c, |&(from, _)| from).ok().map(|at| self.sparse[at].1)
    }
}

fn forms() -> &'static Forms {
    static FORMS: OnceLock<Forms> = OnceLock::new();
    FORMS.get_or_init(|| {
        let mut dense: Vec<char> = DENSE.collect();
        let mut sparse = Vec::new();
        for line in TABLE.lines() {
            let mut chars = line.chars();
            let (Some(from), Some(to)) = (chars.next(), chars.next()) else { continue };
            if DENSE.contains(&from) {
                dense[from as usize - *DENSE.start() as usize] = to;
            } else {
                sparse.push((from, to));
            }
        }
        sparse.sort_unstable();
        Forms { dense, sparse }
    })
}

/// Whether `c` is in a block of Han characters that the table has characters of: the
/// unified ideographs, their extensions and the compatibility ideographs.
fn is_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{3FFFF}')
}

/// Puts each Traditional character of `term` in its Simplified form, in place: a
/// character and its form most often take the same bytes, so a term is rarely moved.
fn simplify(term: &mut String) {
    if term.is_ascii() {
        return;
    }
    let forms = forms();
    let mut at = 0;
    while let Some(c) = term[at..].chars().next() {
        match is_han(c).then(|| forms.get(c)).flatten() {
            Some(form) => {
                term.replace_range(at..at + c.len_utf8(), form.encode_utf8(&mut [0; 4]));
                at += form.len_utf8();
            }
            None => at += c.len_utf8(),
        }
    }
}

/// `text` with its Traditional Chinese characters in their Simplified forms, unless it holds
/// kana: Japanese keeps its kanji as written (see [`super::embedded_text`]).
pub(super) fn simplified_unless_japanese(text: &mut String) {
    // Most text has no letter outside ASCII, and no Han character to fold.
    if !text.is_ascii() && !text.chars().any(super::cjk::is_kana) {
        simplify(text);
    }
}

/// The rewrite of each term into Simplified characters ([`super::rewrite::EachTerm`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Simplified;

impl super::rewrite::Rewrite for Simplified {
    fn rewrite(&self, term: &mut String) {
        simplify(term);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simplified(word: &str) -> String {
        let mut term = word.to_string();
        simplify(&mut term);
        term
    }

    #[test]
    fn traditional_characters_meet_their_simplified_forms() {
        assert_eq!(simplified("軟體開發"), "软体开发");
        assert_eq!(simplified("網路設定"), "网路设定");
        // Already Simplified, or the same in both scripts.
        assert_eq!(simplified("软件开发"), "软件开发");
        assert_eq!(simplified("中文"), "中文");
        // A character whose form lies beyond the Basic Multilingual Plane takes a byte more.
        assert_eq!(simplified("a㑮b"), "a𫝈b");
        // A character that is also Simplified, as OpenCC folds it alone (`乾` is `干`).
        assert_eq!(simplified("乾淨"), "干净");
        assert_eq!(simplified("鑑定"), "鉴定");
        // Two Traditional characters that share one Simplified form become one.
        assert_eq!(simplified("頭髮"), simplified("头发"));
        assert_eq!(simplified("發送"), "发送");
    }

    #[test]
    fn folding_twice_is_folding_once_and_other_scripts_are_left_alone() {
        let mut folded = 0;
        for line in TABLE.lines() {
            let traditional: String = line.chars().take(1).collect();
            let once = simplified(&traditional);
            assert_ne!(once, traditional);
            assert_eq!(simplified(&once), once, "{traditional}");
            folded += 1;
        }
        assert!(folded > 4000);
        for word in ["backup", "sauvegardé", "резервная", "バックアップ", "백업", "نسخة"]
        {
            assert_eq!(simplified(word), word);
        }
    }
}
