//! Turning a file's bytes into text: UTF-8 (with or without its byte-order mark), UTF-16
//! with its mark, and the legacy encodings notes were saved in before UTF-8 (Windows-1252,
//! GBK, Big5, Shift_JIS, EUC-KR, Windows-1251 and the others a browser knows), guessed by
//! Firefox's detector. A file of UTF-8 with a few bad bytes stays UTF-8, with replacement
//! characters for them.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, WINDOWS_1252};

use super::{FileText, SkipReason};

/// The encoding of the files that are neither valid UTF-8 nor marked as UTF-16: guessed
/// from each file's bytes, or named by the `encoding` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Legacy {
    #[default]
    Guessed,
    Named(&'static Encoding),
}

impl Legacy {
    /// `auto`, or a label of the WHATWG Encoding Standard (`gbk`, `shift_jis`, `latin1`,
    /// `windows-1251`, ...), case ignored. UTF-16 is told by its byte-order mark alone: its
    /// labels are refused, as is `replacement`.
    pub fn parse(label: &str) -> Result<Legacy, String> {
        let name = label.trim();
        if name.eq_ignore_ascii_case("auto") {
            return Ok(Legacy::Guessed);
        }
        match Encoding::for_label(name.as_bytes()) {
            Some(encoding) if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE => {
                Err(format!(
                    "{label:?}: a file in UTF-16 is read as such by its byte-order mark, and one without it is binary"
                ))
            }
            Some(encoding) if encoding != encoding_rs::REPLACEMENT => Ok(Legacy::Named(encoding)),
            _ => Err(format!(
                "must be `auto` or an encoding's name such as `gbk`, `big5`, `shift_jis`, `euc-kr`, `windows-1251` or `latin1`, got {label:?}"
            )),
        }
    }

    /// How settings and fingerprints name it: `auto`, or the encoding's canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Legacy::Guessed => "auto",
            Legacy::Named(encoding) => encoding.name(),
        }
    }
}

/// Checks and decodes file contents: a NUL byte outside UTF-16 means a binary file.
pub fn decode(bytes: &[u8], legacy: Legacy) -> Result<FileText, SkipReason> {
    let content_hash = xxhash_rust::xxh3::xxh3_64(bytes);
    let text = |text: String, lossy: bool| FileText { text, content_hash, lossy };
    if let Some((encoding, mark)) = Encoding::for_bom(bytes)
        && encoding != encoding_rs::UTF_8
    {
        // UTF-16, which holds a NUL byte in every ASCII letter. A NUL letter in what it
        // decodes to is a binary file that happens to start with the mark.
        let (decoded, lossy) = encoding.decode_without_bom_handling(&bytes[mark..]);
        if decoded.contains('\0') {
            return Err(SkipReason::Binary);
        }
        return Ok(text(decoded.into_owned(), lossy));
    }
    if bytes.contains(&0) {
        return Err(SkipReason::Binary);
    }
    // A byte-order mark is not text; dropping it keeps byte offsets of the rest aligned with
    // what an editor shows.
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Ok(s) = std::str::from_utf8(body) {
        return Ok(text(s.to_string(), false));
    }
    if mostly_utf8(body) {
        return Ok(text(String::from_utf8_lossy(body).into_owned(), true));
    }
    let encoding = match legacy {
        Legacy::Guessed => legacy_encoding(body),
        Legacy::Named(encoding) => encoding,
    };
    tracing::debug!(encoding = encoding.name(), "read in a legacy encoding");
    if encoding == encoding_rs::UTF_8 {
        // Named by the setting: no other encoding is guessed.
        return Ok(text(String::from_utf8_lossy(body).into_owned(), true));
    }
    let pasted = legacy == Legacy::Guessed && encoding.is_single_byte() && pasted_into_utf8(body);
    if encoding == WINDOWS_1252 || pasted {
        return Ok(text(utf8_and_windows_1252(body), false));
    }
    let (decoded, lossy) = encoding.decode_without_bom_handling(body);
    Ok(text(decoded.into_owned(), lossy))
}

/// Whether `bytes`, guessed to be in a single-byte encoding, are UTF-8 letters and Latin-1
/// ones pasted together: the bytes that are no UTF-8 read as Windows-1252. The UTF-8
/// letters, read as single bytes, can make the whole look like another encoding (`é`'s two
/// bytes are `ĂŠ` in Windows-1250).
fn pasted_into_utf8(bytes: &[u8]) -> bool {
    let mut rest = Vec::with_capacity(bytes.len().min(GUESSED_FROM + 1));
    let mut letters = false;
    for chunk in bytes.utf8_chunks() {
        letters |= !chunk.valid().is_ascii();
        // The guess reads no more than its first bytes.
        if rest.len() <= GUESSED_FROM {
            rest.extend(chunk.valid().bytes().filter(u8::is_ascii));
            rest.extend_from_slice(chunk.invalid());
        }
    }
    letters && legacy_encoding(&rest) == WINDOWS_1252
}

/// Whether `bytes`, not valid UTF-8, are UTF-8 with a few bytes damaged: fewer than one in
/// ten of their bytes beyond ASCII are not UTF-8. Text in a legacy encoding forms UTF-8
/// letters by chance (a GBK character's two bytes often do), but in each paragraph of
/// Chinese, Japanese, Korean, Russian, Ukrainian and Greek text measured, at least a fifth
/// of its bytes beyond ASCII were no UTF-8, and in each whole file at least two fifths.
fn mostly_utf8(bytes: &[u8]) -> bool {
    let (mut letters, mut invalid) = (0usize, 0usize);
    for chunk in bytes.utf8_chunks() {
        letters += chunk.valid().bytes().filter(|b| !b.is_ascii()).count();
        invalid += chunk.invalid().len();
    }
    invalid * 10 < letters + invalid
}

/// How many bytes of a file the guess of its encoding reads: the detector takes about 60 ns
/// a byte (154 ms for a file of 2.6 MB), and a file's first 64 KB say its encoding as well
/// as all of it (every one of the Rust book's 114 chapters in GBK was guessed right from
/// them, as from the whole).
const GUESSED_FROM: usize = 64 * 1024;

/// The legacy encoding `bytes` read best in, as Firefox guesses it for a page that names
/// none (with no country's domain to go by, and never UTF-8 or ISO-2022-JP), from their
/// first [`GUESSED_FROM`] bytes.
fn legacy_encoding(bytes: &[u8]) -> &'static Encoding {
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    match bytes.get(..GUESSED_FROM) {
        // Not the end of the text: a letter cut there is no error.
        Some(head) if head.len() < bytes.len() => detector.feed(head, false),
        _ => detector.feed(bytes, true),
    };
    detector.guess(None, Utf8Detection::Deny)
}

/// `bytes` with their UTF-8 letters read as UTF-8 and every other byte as Windows-1252: a
/// note pasted together from a UTF-8 text and a Latin-1 one reads whole. Latin-1 text forms
/// a UTF-8 letter only where an accented capital meets a symbol (`Ã©`); other single-byte
/// encodings are read as they are, since Cyrillic or Greek letters often form one.
fn utf8_and_windows_1252(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() + bytes.len() / 2);
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        // Windows-1252 gives each of the 256 bytes a letter: nothing is replaced.
        text.push_str(&WINDOWS_1252.decode_without_bom_handling(chunk.invalid()).0);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> FileText {
        decode(bytes).unwrap()
    }

    fn decode(bytes: &[u8]) -> Result<FileText, SkipReason> {
        super::decode(bytes, Legacy::Guessed)
    }

    fn encoded(name: &str, text: &str) -> Vec<u8> {
        let encoding = Encoding::for_label(name.as_bytes()).unwrap();
        let (bytes, _, unmappable) = encoding.encode(text);
        assert!(!unmappable, "{text} in {name}");
        bytes.into_owned()
    }

    #[test]
    fn utf8_is_read_as_it_is_and_its_mark_dropped() {
        let plain = read("# 备份\n保留三十天。".as_bytes());
        assert_eq!((plain.text.as_str(), plain.lossy), ("# 备份\n保留三十天。", false));
        let marked = read(b"\xEF\xBB\xBF# Title");
        assert_eq!((marked.text.as_str(), marked.lossy), ("# Title", false));
    }

    #[test]
    fn utf16_with_its_mark_is_text_and_without_it_binary() {
        let text = "# Notes\r\n\r\nBudget review on Thursday. 预算\r\n";
        let mut le = vec![0xFF, 0xFE];
        le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        let mut be = vec![0xFE, 0xFF];
        be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        for bytes in [&le, &be] {
            let read = read(bytes);
            assert_eq!((read.text.as_str(), read.lossy), (text, false));
        }
        // The same letters without the mark: nothing says they are text.
        assert_eq!(decode(&le[2..]).unwrap_err(), SkipReason::Binary);
        // A lone surrogate is replaced and reported.
        let broken = read(&[0xFF, 0xFE, b'a', 0, 0x00, 0xD8, b'b', 0]);
        assert_eq!((broken.text.as_str(), broken.lossy), ("a\u{FFFD}b", true));
        // A binary file that starts with the mark.
        assert_eq!(decode(&[0xFF, 0xFE, 0, 0, 1, 2]).unwrap_err(), SkipReason::Binary);
    }

    #[test]
    fn a_nul_byte_outside_utf16_is_a_binary_file() {
        assert_eq!(decode(b"abc\0def").unwrap_err(), SkipReason::Binary);
        assert_eq!(decode(b"\xEF\xBB\xBFabc\0").unwrap_err(), SkipReason::Binary);
    }

    #[test]
    fn legacy_encodings_are_guessed_and_decoded() {
        let notes = [
            ("windows-1252", "Le café est servi à huit heures précises, après la réunion."),
            ("gbk", "数据库每天凌晨两点备份一次，快照保留三十天，之后永久删除。"),
            ("big5", "資料庫每天凌晨兩點備份一次，快照保留三十天，之後永久刪除。"),
            (
                "shift_jis",
                "データベースは毎晩二時にバックアップされ、スナップショットは三十日間保存されます。",
            ),
            ("euc-jp", "データベースは毎晩二時にバックアップされ、スナップショットは三十日間保存されます。"),
            ("euc-kr", "데이터베이스는 매일 새벽 두 시에 백업되며 스냅샷은 삼십 일 동안 보관됩니다."),
            ("windows-1251", "Резервные копии базы данных хранятся тридцать дней, потом удаляются."),
            ("koi8-r", "Резервные копии базы данных хранятся тридцать дней, потом удаляются."),
            ("iso-8859-7", "Τα αντίγραφα ασφαλείας της βάσης δεδομένων φυλάσσονται τριάντα ημέρες."),
        ];
        for (name, text) in notes {
            let read = read(&encoded(name, text));
            assert_eq!((read.text.as_str(), read.lossy), (text, false), "{name}");
        }
        // A long file is guessed from its start, and read whole.
        let chapter = "数据库每天凌晨两点备份一次，快照保留三十天，之后永久删除。\n".repeat(3000);
        let long = read(&encoded("gbk", &chapter));
        assert!(encoded("gbk", &chapter).len() > GUESSED_FROM);
        assert_eq!((long.text.as_str(), long.lossy), (chapter.as_str(), false));
        // A short note, as the tests of the walk have it.
        assert_eq!(read(b"caf\xe9 au lait").text, "café au lait");
        assert_eq!(read(b"\xc4\xe3\xba\xc3\xca\xc0\xbd\xe7").text, "你好世界");
    }

    #[test]
    fn utf8_with_a_few_bad_bytes_stays_utf8() {
        // Cut in the middle of its last letter.
        let mut chinese = "数据库每天凌晨两点备份".as_bytes().to_vec();
        chinese.extend(&"一".as_bytes()[..2]);
        let cut = read(&chinese);
        assert_eq!((cut.text.as_str(), cut.lossy), ("数据库每天凌晨两点备份\u{FFFD}", true));
        let mut french = "Les crèmes brûlées sont servies à l'été, après la fête. ".as_bytes().to_vec();
        french.extend(b"Caf\xe9.");
        let damaged = read(&french);
        assert!(damaged.lossy);
        assert!(damaged.text.ends_with("fête. Caf\u{FFFD}."), "{}", damaged.text);
    }

    #[test]
    fn utf8_and_latin1_pasted_together_read_whole() {
        let mixed = read(b"Cr\xc3\xa8me br\xfbl\xe9e needs a blowtorch.");
        assert_eq!((mixed.text.as_str(), mixed.lossy), ("Crème brûlée needs a blowtorch.", false));
        let mixed = read(b"caf\xc3\xa9 or caf\xe9");
        assert_eq!((mixed.text.as_str(), mixed.lossy), ("café or café", false));
    }

    #[test]
    fn a_named_encoding_reads_what_is_not_utf8_and_guesses_nothing() {
        let named = |label: &str| Legacy::parse(label).unwrap();
        // Two words of Shift_JIS, too few for the detector.
        let memo = encoded("shift_jis", "メモ");
        assert_ne!(read(&memo).text, "メモ");
        let read = |bytes: &[u8], label: &str| super::decode(bytes, named(label)).unwrap();
        assert_eq!((read(&memo, "Shift_JIS").text.as_str(), read(&memo, "sjis").lossy), ("メモ", false));
        // UTF-8, UTF-16 with its mark and UTF-8 with a bad byte are read as they are.
        assert_eq!(read("メモ".as_bytes(), "sjis").text, "メモ");
        assert_eq!(read(&[0xFF, 0xFE, b'a', 0], "sjis").text, "a");
        let mut damaged = "数据库每天凌晨两点备份".as_bytes().to_vec();
        damaged.push(0xFF);
        assert!(read(&damaged, "gbk").lossy);
        // `utf-8` guesses no other encoding; Latin-1 is read as Windows-1252, as browsers do.
        let latin = b"caf\xe9 au lait";
        assert_eq!(
            (read(latin, "utf-8").text.as_str(), read(latin, "utf8").lossy),
            ("caf\u{FFFD} au lait", true)
        );
        assert_eq!(read(b"\x93caf\xe9\x94", "latin1").text, "\u{201C}café\u{201D}");
        // A named Cyrillic encoding reads bytes that also make UTF-8 letters as Cyrillic.
        let ukrainian = encoded("windows-1251", "Рік і ніч");
        assert_eq!(read(&ukrainian, "cp1251").text, "Рік і ніч");
    }

    #[test]
    fn encodings_are_named_by_their_labels() {
        for (label, name) in [
            ("auto", "auto"),
            ("GBK", "GBK"),
            ("gb2312", "GBK"),
            (" sjis ", "Shift_JIS"),
            ("latin1", "windows-1252"),
            ("utf8", "UTF-8"),
        ] {
            assert_eq!(Legacy::parse(label).unwrap().name(), name, "{label}");
        }
        for label in ["utf-16", "utf-16be", "replacement", "klingon", ""] {
            assert!(Legacy::parse(label).is_err(), "{label}");
        }
    }

    #[test]
    fn any_bytes_decode_to_text_without_a_nul_or_are_binary() {
        use proptest::prelude::*;
        proptest!(|(bytes in proptest::collection::vec(any::<u8>(), 0..200))| {
            match decode(&bytes) {
                Ok(read) => {
                    prop_assert!(!read.text.contains('\0'));
                    if let Ok(text) = std::str::from_utf8(&bytes) {
                        prop_assert_eq!(read.text.as_str(), text.strip_prefix('\u{feff}').unwrap_or(text));
                        prop_assert!(!read.lossy);
                    }
                }
                Err(reason) => prop_assert_eq!(reason, SkipReason::Binary),
            }
        });
    }

    #[test]
    fn the_content_hash_is_of_the_bytes() {
        let bytes = encoded("gbk", "备份");
        assert_eq!(read(&bytes).content_hash, xxhash_rust::xxh3::xxh3_64(&bytes));
    }
}
