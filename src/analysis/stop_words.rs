//! The stop words by which detection tells a language's prose: tantivy's lists, and lists of
//! our own for Romanian and Turkish, whose Snowball stemmers tantivy carries without one.
//!
//! Detection believes the detector only for text that uses enough of the language's stop
//! words (see `language.rs`), so without a list a Romanian or Turkish note was never
//! detected, and was analysed by English rules unless its front matter named its language.
//! These two lists serve detection only: the analysis of a Romanian or Turkish chunk keeps
//! its function words, as Arabic, Greek and Tamil ones do. Dropping them was measured on
//! Debian's Romanian manual pages and lowered BM25 (R@5 / MRR@10 0.800 / 0.595 → 0.700 /
//! 0.508): in their terse option lines a `nu` (not) or `cu` (with) is part of the answer.
//!
//! The words are the articles, pronouns, prepositions, conjunctions and particles of each
//! language, with the forms of "to be" that stand alone. Each is also given as it is often
//! typed without its letters' marks (`si` for `și`, `icin` for `için`), and Romanian words
//! with the cedilla letters `ş` and `ţ` that older fonts and keyboards put for `ș` and `ț`.

use tantivy::tokenizer::{Language as Stemming, StopWordFilter};

/// Romanian function words, with the older spelling `sînt` beside `sunt` (manual pages and
/// much older text use it), then those typed without marks.
const ROMANIAN: &str = "\
    a acea aceasta această aceea acei aceia acel acela acele acelea acest acesta aceste \
    acestea acestei acestor acestui acolo acum ai aici al ale alt alta altă alte alți am ar \
    are aș asta astfel asupra atât atâta atunci au avea avem aveți avut ca că căci care cărei \
    căror cărui cât câte câți către ce cea cei cel cele celor ceva chiar cine cu cum da dacă \
    dar de deci decât deja deși din dintr dintre doar după ea ei el ele era este eu fi fie \
    fiecare fiind fost fără i îi îl îmi în înainte însă între încât îți la le li lor lui mai \
    mea mei mele meu mi mie ne nici nimic noi nu o oare or ori orice oricare pe pentru peste \
    poate prin să sau se și sînt sîntem sînteți sunt suntem sunteți sub tot toată toate toți \
    tu un una unde unei unele unor unui unul va vă voi vor vreo vreun \
    alti as atat atata caci carei caror carui cat cate cati catre daca decat desi dupa fara ii \
    il imi in inainte insa intre incat iti sa si sint sintem sinteti sunteti toata toti";

/// Turkish function words, then those typed without marks. `su` (`şu` typed so) is left
/// out: it is also the word for water.
const TURKISH: &str = "\
    acaba ama ancak artık aslında ayrıca az bana bazen bazı belki ben beni benim beri bile bir \
    biraz biri birkaç birçok biz bize bizi bizim böyle böylece bu buna bunda bundan bunlar \
    bunları bunların bunu bunun burada bütün çok çünkü da daha de değil diğer diye dolayı eğer \
    en gibi göre hangi hem hep hepsi her herhangi hiç için ile ise işte kadar kendi ki kim mi \
    mı mu mü nasıl ne neden nerede niçin niye o olan olarak olduğu olur ona ondan onlar onları \
    onların onu onun öyle sadece sen seni senin siz size sizi sizin şey şu şuna şunu tüm ve \
    veya ya yani yine zaten \
    artik aslinda ayrica bazi birkac bircok boyle boylece bunlari bunlarin butun cok cunku \
    degil diger dolayi eger gore hic icin iste nasil nicin oldugu onlari onlarin oyle sey suna \
    sunu tum";

/// The stop words that tell the prose of the language of `stemming`: tantivy's list, or
/// this file's for Romanian and Turkish. `None` for a language without one (Arabic, Greek,
/// Tamil), whose script tells it instead.
pub(super) fn of(stemming: Stemming) -> Option<StopWordFilter> {
    if let Some(list) = StopWordFilter::new(stemming) {
        return Some(list);
    }
    let words: Vec<String> = match stemming {
        Stemming::Romanian => ROMANIAN
            .split_whitespace()
            .flat_map(|w| [w.to_string(), w.replace('ș', "ş").replace('ț', "ţ")])
            .collect(),
        Stemming::Turkish => TURKISH.split_whitespace().map(str::to_string).collect(),
        _ => return None,
    };
    Some(StopWordFilter::remove(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn romanian_and_turkish_have_lists_and_greek_has_none() {
        let dropped = |stemming: Stemming, word: &str| {
            let filter = of(stemming).unwrap();
            let mut analyzer =
                tantivy::tokenizer::TextAnalyzer::builder(tantivy::tokenizer::RawTokenizer::default())
                    .filter(filter)
                    .build();
            analyzer.token_stream(word).next().is_none()
        };
        for word in ["și", "şi", "si", "sînt", "după", "dupa", "în", "a", "vreun", "alti", "toti"] {
            assert!(dropped(Stemming::Romanian, word), "ro {word}");
        }
        for word in ["için", "icin", "değil", "ve", "bir", "acaba", "zaten", "artik", "sunu"] {
            assert!(dropped(Stemming::Turkish, word), "tr {word}");
        }
        // Content words stay, water among them.
        assert!(!dropped(Stemming::Romanian, "fișier"));
        assert!(!dropped(Stemming::Turkish, "dosya") && !dropped(Stemming::Turkish, "su"));
        // tantivy's own lists are handed out as they are.
        assert!(dropped(Stemming::German, "und") && !dropped(Stemming::German, "the"));
        assert!(of(Stemming::Greek).is_none());
    }
}
