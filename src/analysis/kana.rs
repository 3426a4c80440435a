//! Japanese kana in one form: half-width katakana as full-width letters, and a voicing
//! mark written apart joined to its letter.
//!
//! Japanese text spells one word several ways that a reader takes for the same: half-width
//! katakana (`ｲﾝｽﾄｰﾙ`, from older systems, forms and some input methods) against the
//! full-width letters of almost all text (`インストール`), and a voiced letter as one
//! character (`ガ`) or as the letter followed by a combining voicing mark (`カ` + U+3099,
//! as macOS stores file names, or the half-width `ｶﾞ`). Each term in either form is
//! rewritten into the full-width, precomposed one by Unicode's compatibility composition
//! (NFKC), as Lucene's `CJKWidthFilter` and Elasticsearch's `cjk_width` do, in documents
//! and queries alike. The pairs of a run take a voicing mark with its letter (`cjk.rs`), so
//! `ﾃﾞｨｽｸ` gives the pairs of `ディスク`.
//!
//! The same rewrite puts the text that embedders read in one form ([`super::embedded_text`]):
//! e5 reads `ﾊﾞｯｸｱｯﾌﾟ` and `バックアップ` as different words.
//!
//! Only runs of kana holding such a character are rewritten: NFKC also changes other
//! characters (ligatures, superscripts), which the analyzer leaves as they are elsewhere.

use unicode_normalization::UnicodeNormalization;

/// Whether `c` is a half-width katakana letter or mark, or a voicing mark written apart
/// ([`super::cjk::is_combining_mark`]).
fn is_width_or_voicing_form(c: char) -> bool {
    matches!(c, '\u{FF66}'..='\u{FF9D}') || super::cjk::is_combining_mark(c)
}

/// Rewrites each run of kana in `text` that holds a half-width letter or a voicing mark
/// written apart into full-width, precomposed letters, in place; other text is untouched.
pub(super) fn full_width(text: &mut String) {
    if text.is_ascii() || !text.chars().any(is_width_or_voicing_form) {
        return;
    }
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |out: &mut String, run: &mut String| {
        if run.chars().any(is_width_or_voicing_form) {
            out.extend(run.nfkc());
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if super::cjk::is_kana(c) || is_width_or_voicing_form(c) {
            run.push(c);
        } else {
            flush(&mut out, &mut run);
            out.push(c);
        }
    }
    flush(&mut out, &mut run);
    *text = out;
}

/// The rewrite of each term's kana into full-width, precomposed letters
/// ([`super::rewrite::EachTerm`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct FullWidth;

impl super::rewrite::Rewrite for FullWidth {
    fn rewrite(&self, term: &mut String) {
        full_width(term);
    }
}

#[cfg(test)]
mod tests {
    use super::super::rewrite::Rewrite;
    use super::*;

    fn full_width(word: &str) -> String {
        let mut term = word.to_string();
        FullWidth.rewrite(&mut term);
        term
    }

    #[test]
    fn half_width_katakana_become_full_width_letters() {
        assert_eq!(full_width("ｲﾝｽﾄｰﾙ"), "インストール");
        assert_eq!(full_width("ﾃﾞｨｽｸ"), "ディスク");
        assert_eq!(full_width("ﾊﾟｽﾜｰﾄﾞ"), "パスワード");
        assert_eq!(full_width("ｧｯｮｦ"), "ァッョヲ");
    }

    #[test]
    fn a_voicing_mark_written_apart_joins_its_letter() {
        assert_eq!(full_width("カ\u{3099}ス"), "ガス");
        assert_eq!(full_width("ハ\u{309A}ス"), "パス");
        assert_eq!(full_width("か\u{3099}"), "が");
    }

    #[test]
    fn other_terms_are_left_as_they_are() {
        for word in ["インストール", "ガス", "设置", "backup", "ﬁle", "x²", "벡터"] {
            assert_eq!(full_width(word), word);
        }
        // Around a run that is rewritten too.
        assert_eq!(full_width("ﬁle ｲﾝｽﾄｰﾙ x²"), "ﬁle インストール x²");
    }
}
