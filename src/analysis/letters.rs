//! Languages told by their letters or their commonest words, where the detector, reading
//! trigrams, is not asked or not trusted: Chinese, Japanese, Korean and Lao by the share of
//! their scripts' letters; Russian from Ukrainian and Arabic from Persian and Urdu by the
//! letters one alphabet has and the others lack; Hindi, Marathi and Nepali, which share
//! Devanagari, by their function words.

use super::Language;

/// Chinese, Japanese or Korean, when at least a quarter of `prose`'s letters are of their
/// scripts: Japanese when it holds kana, Korean when most of them are Hangul. The detector
/// is not asked: the letters say it, and a Chinese clause with a few kana in it is Japanese,
/// whatever the share of its kanji.
pub(super) fn written_in_cjk(prose: &str) -> Option<Language> {
    if prose.is_ascii() {
        return None;
    }
    let (mut letters, mut cjk, mut kana, mut hangul) = (0usize, 0usize, 0usize, 0usize);
    for c in prose.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if super::cjk::is_cjk(c) {
            cjk += 1;
            kana += usize::from(super::cjk::is_kana(c));
            hangul += usize::from(
                matches!(c, '\u{1100}'..='\u{11FF}' | '\u{3131}'..='\u{318E}' | '\u{AC00}'..='\u{D7A3}'),
            );
        }
    }
    if cjk == 0 || cjk * 4 < letters {
        return None;
    }
    let code = if hangul * 2 > cjk {
        "ko"
    } else if kana > 0 {
        "ja"
    } else {
        "zh"
    };
    Language::named(code)
}

/// Russian or Ukrainian, by the letters that one alphabet has and the other lacks: `і`, `ї`,
/// `є` and `ґ` are Ukrainian's, `ы`, `э`, `ъ` and `ё` Russian's. The detector, reading
/// trigrams, takes short Russian lines for Ukrainian now and then (`динамический
/// компоновщик/загрузчик`). Ukrainian prose is never without `і`, one of its commonest
/// letters, so text with none of these letters is Russian.
pub(super) fn russian_or_ukrainian(prose: &str) -> whatlang::Lang {
    let (mut ukrainian, mut russian) = (0usize, 0usize);
    for c in prose.chars() {
        match c {
            'і' | 'ї' | 'є' | 'ґ' | 'І' | 'Ї' | 'Є' | 'Ґ' => ukrainian += 1,
            'ы' | 'э' | 'ъ' | 'ё' | 'Ы' | 'Э' | 'Ъ' | 'Ё' => russian += 1,
            _ => {}
        }
    }
    if ukrainian > russian { whatlang::Lang::Ukr } else { whatlang::Lang::Rus }
}

/// Lao, when at least a quarter of `prose`'s letters are Lao's: the detector knows no Lao,
/// and its letters are Lao's alone.
pub(super) fn written_in_lao(prose: &str) -> Option<Language> {
    if prose.is_ascii() {
        return None;
    }
    let (mut letters, mut lao) = (0usize, 0usize);
    for c in prose.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        lao += usize::from(matches!(c, '\u{0E80}'..='\u{0EFF}'));
    }
    (lao > 0 && lao * 4 >= letters).then(|| Language::named("lo")).flatten()
}

/// Hindi, Marathi or Nepali, by the function words each uses and the others do not
/// (Hindi's `है`, `और`, `में`; Marathi's `आहे`, `आणि`, `मध्ये`; Nepali's `छ`, `र`, `मा`):
/// the detector, reading trigrams, is seldom sure among the three (three sentences of Hindi
/// leave it at a confidence of 0.76, below the 0.9 it calls reliable). `None` when the text
/// uses fewer than two of them.
pub(super) fn hindi_marathi_or_nepali(prose: &str) -> Option<&'static str> {
    const WORDS: [(&str, &str); 3] = [
        ("hi", "है हैं और का की के में से यह वह भी नहीं था थे थी कि लिए इस उस"),
        ("mr", "आहे आहेत आणि हा ही हे या त्या च्या ला मध्ये पण नाही होते केले करा"),
        ("ne", "छ छन् र मा ले लाई पनि यो त्यो थियो गर्न हुन्छ भने गर्नुहोस्"),
    ];
    let mut uses = [0usize; 3];
    for word in prose.split_whitespace() {
        let word =
            word.trim_matches(|c: char| c.is_ascii_punctuation() || matches!(c, '।' | '॥' | '“' | '”'));
        for (n, (_, words)) in WORDS.iter().enumerate() {
            uses[n] += usize::from(words.split_whitespace().any(|w| w == word));
        }
    }
    // The first of the most used, Hindi on a tie: it is the most written of the three.
    let mut best = 0;
    for n in 1..WORDS.len() {
        if uses[n] > uses[best] {
            best = n;
        }
    }
    (uses[best] >= 2).then_some(WORDS[best].0)
}

/// Arabic, Persian or Urdu, by the letters that each writes and the others do not. Urdu alone
/// writes `ے`, `ں`, `ٹ`, `ڈ` and `ڑ`, common in all its prose; Persian writes `پ`, `چ`, `ژ`,
/// `گ`, and its own `ی` and `ک` where Arabic writes `ي` and `ك`, with its `ة` and `ى`. Asked
/// to choose among the three by trigrams, the detector is less often sure of any (see
/// `language.rs`'s `detector`); the letters are what a reader tells them by.
pub(super) fn arabic_persian_or_urdu(prose: &str) -> whatlang::Lang {
    let (mut letters, mut urdu, mut persian, mut arabic) = (0usize, 0usize, 0usize, 0usize);
    for c in prose.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        match c {
            'ے' | 'ں' | 'ٹ' | 'ڈ' | 'ڑ' => urdu += 1,
            'پ' | 'چ' | 'ژ' | 'گ' | 'ی' | 'ک' => persian += 1,
            'ي' | 'ك' | 'ة' | 'ى' => arabic += 1,
            _ => {}
        }
    }
    // One letter in a hundred: a word or two of Urdu quoted in Arabic or Persian text is not
    // enough.
    if urdu * 100 >= letters && urdu > 0 {
        whatlang::Lang::Urd
    } else if persian > arabic {
        whatlang::Lang::Pes
    } else {
        whatlang::Lang::Ara
    }
}
