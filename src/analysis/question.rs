//! The grammar of a question, which a query's keywords are read without where it would
//! weigh like their subject.

/// The English words that carry a question's grammar rather than its subject: question
/// words, auxiliaries and pronouns. English's stop word list (Lucene's) keeps them, and in
/// English notes they are common enough that BM25 gives them next to no weight. In notes
/// written in Chinese, Japanese or Korean they are rare, so an English question's `how`,
/// `does` and `my` would weigh like its subject and lead BM25 to the few passages that
/// happen to be in English: [`without_question_grammar`] leaves them out there.
const QUESTION_GRAMMAR: &[&str] = &[
    "how", "what", "why", "when", "where", "which", "who", "whom", "whose", "do", "does", "did", "doing",
    "can", "could", "should", "would", "may", "might", "must", "shall", "i", "me", "my", "mine", "we", "us",
    "our", "you", "your", "he", "him", "his", "she", "her", "its", "them", "am", "been", "being", "has",
    "have", "had",
];

/// `query` without the words of [`QUESTION_GRAMMAR`] (matched whole, whatever their case
/// and the punctuation around them), for a query in English over notes mostly in Chinese,
/// Japanese or Korean. Borrowed when none is there.
pub fn without_question_grammar(query: &str) -> std::borrow::Cow<'_, str> {
    let is_grammar = |word: &str| {
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase().replace('\u{2019}', "'");
        match bare.split_once('\'') {
            // A negated auxiliary (`can't`, `doesn't`, `isn't`) is grammar whatever its verb,
            // and so is a contracted question word or pronoun (`what's`, `I'm`, `it's`); a
            // possessive (`nginx's`) is not.
            Some((_, "t")) => true,
            Some((head, "s" | "re" | "ve" | "m" | "ll" | "d")) => {
                QUESTION_GRAMMAR.contains(&head) || matches!(head, "it" | "that" | "there" | "they")
            }
            Some(_) => false,
            None => QUESTION_GRAMMAR.contains(&bare.as_str()),
        }
    };
    if !query.split_whitespace().any(is_grammar) {
        return std::borrow::Cow::Borrowed(query);
    }
    std::borrow::Cow::Owned(query.split_whitespace().filter(|w| !is_grammar(w)).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_english_question_can_be_read_without_its_grammar() {
        assert_eq!(without_question_grammar("How do I keep my Cargo.lock?"), "keep Cargo.lock?");
        assert_eq!(
            without_question_grammar("Does a future run when it is created?"),
            "a future run it is created?"
        );
        assert!(matches!(without_question_grammar("snapshot retention"), std::borrow::Cow::Borrowed(_)));
        // Contracted forms, with either apostrophe; a possessive stays.
        assert_eq!(without_question_grammar("Why can't my machine send mail?"), "machine send mail?");
        assert_eq!(without_question_grammar("What\u{2019}s nginx's default port?"), "nginx's default port?");
        assert_eq!(without_question_grammar("I'm sure it's set, isn't it?"), "sure set, it?");
    }
}
