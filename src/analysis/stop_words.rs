//! The stop words by which detection tells a language's prose: tantivy's lists, and lists of
//! our own for Romanian and Turkish, whose Snowball stemmers tantivy carries without one,
//! for Czech, which has a stemmer of ours, and for Polish, Vietnamese and Indonesian, which
//! are read by English rules.
//!
//! Detection believes the detector only for text that uses enough of the language's stop
//! words (see `language.rs`), so without a list a Romanian or Turkish note was never
//! detected, and was analysed by English rules unless its front matter named its language.
//! These lists serve detection only: the analysis of a Romanian, Turkish or Czech chunk
//! keeps its function words, as Arabic, Greek, Tamil and Ukrainian ones do, and a Polish,
//! Vietnamese or Indonesian one drops English's only. Dropping them was measured on
//! Debian's Romanian manual pages and lowered BM25 (R@5 / MRR@10 0.800 / 0.595 → 0.700 /
//! 0.508): in their terse option lines a `nu` (not) or `cu` (with) is part of the answer;
//! on the Czech ones, it lowered MRR@10 (BM25 0.386 → 0.351).
//!
//! The words are the articles, pronouns, prepositions, conjunctions and particles of each
//! language, with the forms of "to be" that stand alone. Each is also given as it is often
//! typed without its letters' marks (`si` for `și`, `icin` for `için`), and Romanian words
//! with the cedilla letters `ş` and `ţ` that older fonts and keyboards put for `ș` and `ț`;
//! Vietnamese words only as written, since without their marks they are other languages'
//! words too.

use tantivy::tokenizer::{Language as Stemming, StopWordFilter};

/// English's stop words, the list of tantivy's English analyzer (Lucene's), which detection
/// reads in one pass over a chunk (see `language.rs`).
pub(super) const ENGLISH: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to",
    "was", "will", "with",
];

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

/// Czech function words, then those typed without marks.
const CZECH: &str = "\
    a aby ale ani ano asi až bez bude budou by byl byla byli bylo být co či další do ho i jak \
    jako je jeho jej její jejich jen jenž ještě jestli již jsem jsi jsme jsou jste k kam kde \
    kdo kdy když ke která které kterou který kteří má mají mezi mi mně mnou mu my na nad nám \
    nás ne nebo než nic ní ním o od on ona oni ono pak po pod podle pokud pouze právě pro \
    proto před při s se si své svůj ta tak také takže tam tedy ten tento této tím to tohoto \
    tom tomto tomu toto tu tuto ty u už v ve vám vás však všechny z za ze že \
    az byt ci dalsi jeji jenz jeste jiz kdyz ktera ktere ktery kteri mne maji nam nas nez ni \
    nim prave pred pri svuj takze teto tim uz vam vas vsak vsechny";

/// Polish function words of two letters or more (detection passes over shorter words), then
/// those typed without marks.
const POLISH: &str = "\
    aby ale albo ani bardzo bez bo był była było byli być będzie będą co czy dla do gdy gdzie \
    go ich im jak jako jakie jaki jej jest jego jeśli jeżeli już każdy kiedy która które \
    którego której który którzy lub ma mają mi może można na nad nie niż od on ona one oni ono \
    oraz po pod ponieważ przed przez przy się są ta tak także tam te tego tej ten też to tu \
    tylko tym we więc wszystkie za ze że żeby \
    byl byla bylo byc bedzie beda jesli jezeli juz kazdy ktora ktore ktorego ktorej ktory \
    ktorzy moze mozna niz poniewaz sie sa takze tez wiec zeby";

/// Vietnamese function words, as written: every syllable is a word, and its marks tell it
/// from the same letters in other languages (`của`, `và`), so the plain spellings, which
/// English and French share (`do`, `to`, `la`), are left out.
const VIETNAMESE: &str = "\
    bạn bằng bị các cả chỉ cho chúng có còn của cũng đã đang để đến điều đó được gì hay hoặc \
    họ khi không là lại lên mà mỗi một nào này nên nếu người như những nhiều nó ở ra rằng rất \
    rồi sau sẽ tại theo thì trên trong từ và vào về vì với";

/// Indonesian function words.
const INDONESIAN: &str = "\
    ada adalah agar akan anda antara apa apabila atau bagaimana bagi bahwa bila bisa belum \
    beberapa dalam dan dapat dari demikian dengan dia hanya harus hingga ia ini itu jika juga \
    kami karena ke kepada kita lagi lain lebih maka masih mereka namun oleh pada para saat \
    sangat saya seperti sebagai secara sehingga sejak semua serta setelah setiap sudah tanpa \
    telah tentang tersebut tetapi tidak untuk yaitu yakni yang";

/// The stop words that tell the prose of the language of two-letter `code`, whose Snowball
/// stemmer is `stemming`: this file's list for Romanian, Turkish, Czech, Polish, Vietnamese
/// and Indonesian, else tantivy's. `None` for a language without one (Arabic, Greek, Tamil,
/// Ukrainian and the other languages in their own scripts), whose letters tell it instead.
pub(super) fn of(code: &str, stemming: Option<Stemming>) -> Option<StopWordFilter> {
    let words: Vec<String> = match code {
        "ro" => ROMANIAN
            .split_whitespace()
            .flat_map(|w| [w.to_string(), w.replace('ș', "ş").replace('ț', "ţ")])
            .collect(),
        "tr" => TURKISH.split_whitespace().map(str::to_string).collect(),
        "cs" => CZECH.split_whitespace().map(str::to_string).collect(),
        "pl" => POLISH.split_whitespace().map(str::to_string).collect(),
        "vi" => VIETNAMESE.split_whitespace().map(str::to_string).collect(),
        "id" => INDONESIAN.split_whitespace().map(str::to_string).collect(),
        _ => return stemming.and_then(StopWordFilter::new),
    };
    Some(StopWordFilter::remove(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn romanian_turkish_and_czech_have_lists_and_greek_has_none() {
        let dropped = |code: &str, word: &str| {
            let stemming = match code {
                "de" => Some(Stemming::German),
                "en" => Some(Stemming::English),
                "ro" => Some(Stemming::Romanian),
                "tr" => Some(Stemming::Turkish),
                _ => None,
            };
            let filter = of(code, stemming).unwrap();
            let mut analyzer =
                tantivy::tokenizer::TextAnalyzer::builder(tantivy::tokenizer::RawTokenizer::default())
                    .filter(filter)
                    .build();
            analyzer.token_stream(word).next().is_none()
        };
        for word in ["și", "şi", "si", "sînt", "după", "dupa", "în", "a", "vreun", "alti", "toti"] {
            assert!(dropped("ro", word), "ro {word}");
        }
        for word in ["için", "icin", "değil", "ve", "bir", "acaba", "zaten", "artik", "sunu"] {
            assert!(dropped("tr", word), "tr {word}");
        }
        for word in ["že", "ze", "který", "ktery", "však", "vsak", "jsou"] {
            assert!(dropped("cs", word), "cs {word}");
        }
        // Content words stay, water among them.
        assert!(!dropped("ro", "fișier"));
        assert!(!dropped("tr", "dosya") && !dropped("tr", "su"));
        assert!(!dropped("cs", "soubor"));
        // This file's copy of the English list is tantivy's.
        for word in ENGLISH {
            assert!(dropped("en", word), "en {word}");
        }
        assert!(!dropped("en", "server") && !dropped("en", "what"));
        // tantivy's own lists are handed out as they are.
        assert!(dropped("de", "und") && !dropped("de", "the"));
        assert!(of("el", Some(Stemming::Greek)).is_none());
    }
}
