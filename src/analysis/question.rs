//! The grammar of a question, which a query's keywords are read without where it would
//! weigh like their subject: an English question's over notes mostly in Chinese, Japanese
//! or Korean, and a Chinese question's everywhere.

use std::borrow::Cow;

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
pub fn without_question_grammar(query: &str) -> Cow<'_, str> {
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
        return Cow::Borrowed(query);
    }
    Cow::Owned(query.split_whitespace().filter(|w| !is_grammar(w)).collect::<Vec<_>>().join(" "))
}

/// The words of a Chinese question that carry its grammar rather than its subject, in
/// Simplified and Traditional characters and their common variants (`麽`, `甚麼`, `爲`),
/// longer ones first, a blank between two: the question words (`为什么`, `什么`, `怎么`,
/// `如何`, `哪些`), the forms that ask whether (`是否`, `是不是`, `能不能`, `有没有`) and the
/// particles that end a question (`吗`, `呢`).
/// The verb before a question word stays (`有` of `有什么问题`): it can be the subject's.
///
/// Chinese is written without spaces, and a query is read as pairs of letters: `有什么区别`
/// gives `有什`, `什么` and `么区` besides `区别`. A pair that runs across two words is rare
/// in every passage, so BM25 weighs it as a rare word and leads to the few passages that
/// happen to hold it, and the share of the query that the best hit holds (which sets BM25's
/// weight in the fusion) counts it as a word that hit lacks.
const CHINESE_QUESTION_WORDS: &str = concat!(
    "可不可以 为什么 為什麼 爲什麼 為甚麼 爲甚麼 為什麽 怎么样 怎麼樣 怎麽樣 ",
    "有没有 有沒有 是不是 能不能 会不会 會不會 ",
    "要不要 什么 什麼 什麽 甚麼 为何 為何 爲何 怎么 怎麼 怎麽 怎样 怎樣 如何 是否 ",
    "能否 可否 哪些 哪个 哪個 哪里 哪裡 吗 嗎 呢",
);

/// `query` with the words of [`CHINESE_QUESTION_WORDS`] turned into blanks, so that its
/// pairs of letters are those of its subject: `常量和不可变变量有什么区别？` is read as
/// `常量和不可变变量有 区别？`. Borrowed when it holds none; its other letters stay as they are.
pub fn without_chinese_question_words(query: &str) -> Cow<'_, str> {
    // Only the words the query holds are replaced: each replacement copies the text.
    let mut held = CHINESE_QUESTION_WORDS.split(' ').filter(|word| query.contains(word)).peekable();
    if held.peek().is_none() {
        return Cow::Borrowed(query);
    }
    Cow::Owned(held.fold(query.to_string(), |text, word| text.replace(word, " ")))
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
        assert!(matches!(without_question_grammar("snapshot retention"), Cow::Borrowed(_)));
        // Contracted forms, with either apostrophe; a possessive stays.
        assert_eq!(without_question_grammar("Why can't my machine send mail?"), "machine send mail?");
        assert_eq!(without_question_grammar("What\u{2019}s nginx's default port?"), "nginx's default port?");
        assert_eq!(without_question_grammar("I'm sure it's set, isn't it?"), "sure set, it?");
    }

    #[test]
    fn a_chinese_question_is_read_without_its_question_words() {
        for (question, read) in [
            ("常量和不可变变量有什么区别？", "常量和不可变变量有 区别？"),
            ("为什么 Rc<T> 不能在线程间共享？", "  Rc<T> 不能在线程间共享？"),
            ("該怎麼設定語系嗎", "該 設定語系 "),
            ("爲甚麼要備份？什麽時候", " 要備份？ 時候"),
            ("main 函数里能不能使用 ? 运算符", "main 函数里 使用 ? 运算符"),
        ] {
            assert_eq!(without_chinese_question_words(question), read, "{question}");
        }
        assert!(matches!(without_chinese_question_words("所有权规则"), Cow::Borrowed(_)));
        assert!(matches!(without_chinese_question_words("How do I keep my Cargo.lock?"), Cow::Borrowed(_)));
    }
}
