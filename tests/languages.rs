//! Notes in other languages than English, indexed by the real engine and searched by
//! keywords alone: a small Japanese and Korean smoke set (words in their own script, and the
//! English names inside them, with the matching sentence marked in the preview), questions
//! over Chinese notes (in English, and in Chinese read without its question words), and notes
//! in German, French, Spanish and Russian (`tests/data/languages`) found by other
//! inflections of their words, each stemmed by its own language's rules, in their text,
//! their titles and the snippets an LLM (a chat server on 127.0.0.1) writes for them. The
//! Chinese dev set in `../shared/data` measures the CJK analysis at scale, and
//! `tests/data/languages` with its queries the stemming (`scripts/quality`).

mod common;
mod http_server;

use common::{Counting, Fixture};
use http_server::TestServer;
use situate::config::Config;
use situate::engine::Engine;
use situate::search::preview::Previewer;
use situate::search::{Expand, Hit, SearchMode, SearchRequest};
use situate::snippets::generator::Totals;
use situate::snippets::{ChatProvider, SnippetConfig};

/// Notes in Japanese and Korean, each about one thing, two of them with English names in
/// the text.
const NOTES: &[(&str, &str)] = &[
    (
        "ja/backup.md",
        "# バックアップ\n\nスナップショットは毎晩作成され、三十日間保存されます。古いものは自動的に削除されます。\n",
    ),
    (
        "ja/network.md",
        "# ネットワーク設定\n\nプロキシを使う場合は、環境変数 `HTTPS_PROXY` にアドレスを設定してください。証明書の検証は無効にしないでください。\n",
    ),
    (
        "ja/cooking.md",
        "# 料理メモ\n\n味噌汁はだしを取ってから味噌を溶かします。沸騰させると香りが飛びます。\n",
    ),
    (
        "ko/deploy.md",
        "# 배포 절차\n\n새 버전을 배포하기 전에 데이터베이스를 백업하세요. 배포가 끝나면 로그를 확인합니다.\n",
    ),
    (
        "ko/search.md",
        "# 검색 색인\n\n문서를 저장하면 색인이 자동으로 갱신됩니다. 벡터 검색과 키워드 검색을 `hybrid` 모드에서 함께 사용합니다.\n",
    ),
];

/// Queries and the note that answers each.
const QUERIES: &[(&str, &str)] = &[
    ("スナップショットの保存期間", "ja/backup.md"),
    ("古いスナップショットを削除", "ja/backup.md"),
    ("プロキシの設定", "ja/network.md"),
    ("HTTPS_PROXY", "ja/network.md"),
    ("証明書の検証", "ja/network.md"),
    ("味噌汁の作り方", "ja/cooking.md"),
    ("데이터베이스 백업", "ko/deploy.md"),
    ("배포 로그", "ko/deploy.md"),
    ("색인 갱신", "ko/search.md"),
    ("hybrid 검색", "ko/search.md"),
];

fn request(query: &str) -> SearchRequest {
    SearchRequest {
        query: query.to_string(),
        limit: 5,
        mode: SearchMode::Bm25,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    }
}

fn indexed() -> (Fixture, Engine) {
    indexed_with(NOTES)
}

/// A workspace of `notes` (path, text), indexed.
fn indexed_with(notes: &[(&str, &str)]) -> (Fixture, Engine) {
    let f = Fixture::empty();
    for (path, text) in notes {
        f.write(path, text);
    }
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    (f, engine)
}

fn paths(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.chunk.path.as_str()).collect()
}

/// The `language` field of the one hit of `query` in `path` (the detected language stands
/// for the front matter field a note does not have).
fn language_field(engine: &Engine, path: &str, query: &str) -> Option<Vec<String>> {
    let hits = engine.search(&SearchRequest { paths: vec![path.to_string()], ..request(query) }).unwrap();
    assert_eq!(paths(&hits), [path], "{query}");
    hits[0].chunk.metadata.get("language").cloned()
}

/// The files of the hits of `query` filtered by `--where language=CODE`.
fn in_language(engine: &Engine, code: &str, query: &str) -> Vec<String> {
    let filters = situate::search::filter::parse_all(&[format!("language={code}")]).unwrap();
    let hits = engine.search(&SearchRequest { filters, ..request(query) }).unwrap();
    paths(&hits).into_iter().map(str::to_string).collect()
}

/// Each language's chunks, as status counts them.
fn chunks_by_language(engine: &Engine) -> Vec<(&'static str, usize)> {
    engine.status().languages.iter().map(|l| (l.code, l.chunks)).collect()
}

/// The first preview line of the best hit for `query` (searched by BM25 alone), its marks
/// in brackets.
fn first_preview(engine: &Engine, query: &str) -> String {
    let hits = engine.search(&request(query)).unwrap();
    let lines = Previewer::new(query, None).preview(&hits[0].chunk);
    lines[0].marked("[", "]")
}

#[test]
fn japanese_and_korean_words_find_their_notes_by_keywords_alone() {
    let (_f, engine) = indexed();
    for (query, answer) in QUERIES {
        let hits = engine.search(&request(query)).unwrap();
        assert_eq!(hits.first().map(|h| h.chunk.path.as_str()), Some(*answer), "{query}: {:?}", paths(&hits));
    }
}

#[test]
fn a_word_that_is_not_there_finds_nothing() {
    let (_f, engine) = indexed();
    // Neither pair of "天気" (weather) nor of "날씨" occurs in any note.
    for query in ["天気", "날씨"] {
        let hits = engine.search(&request(query)).unwrap();
        assert!(hits.is_empty(), "{query}: {:?}", paths(&hits));
    }
}

#[test]
fn the_preview_marks_the_words_in_their_sentence() {
    let (_f, engine) = indexed();
    assert_eq!(
        first_preview(&engine, "スナップショットの保存"),
        "[スナップショット]は毎晩作成され、三十日間[保存]されます。古いものは自動的に削除されます。"
    );
    let marked = first_preview(&engine, "데이터베이스 백업");
    assert!(marked.contains("[데이터베이스]를 [백업]하세요"), "{marked}");
}

/// A borrowed word of seven katakana letters gives six pairs, an English name one term: the
/// pairs share one word's weight, so the note that holds both words of the query comes
/// before a note that repeats the long word alone.
#[test]
fn the_pairs_of_a_katakana_word_weigh_as_one_word() {
    let (_f, engine) = indexed_with(&[
        (
            "ja/scripts.md",
            "# シェルスクリプト入門\n\nシェルスクリプトは繰り返しの作業をまとめます。シェルスクリプトの一行目には、\
             どのシェルで動かすかを書きます。長いシェルスクリプトは関数に分けます。\n",
        ),
        (
            "ja/packages.md",
            "# パッケージ管理\n\n対話的な操作には apt を使い、シェルスクリプトの中では apt-get を使います。\n",
        ),
        ("ja/network.md", "# ネットワーク\n\nプロキシの設定は環境変数で行います。\n"),
        (
            "ja/packaging.md",
            "# パッケージの作成\n\n自分でパッケージを作るときは dpkg-buildpackage を使います。\n",
        ),
    ]);
    let hits = engine.search(&request("apt-get シェルスクリプト")).unwrap();
    assert_eq!(paths(&hits)[..2], ["ja/packages.md", "ja/scripts.md"]);
}

/// A paragraph of Chinese or Japanese filled to a width breaks its lines inside words; the
/// word on both sides of a break is found whole, by its pair of letters, and the stored
/// text (what previews and line ranges show) keeps its lines.
#[test]
fn a_word_broken_by_a_wrapped_line_is_found_whole() {
    let (_f, engine) = indexed_with(&[
        ("zh/ownership.md", "# 规则\n\nRust 中的每一个值都有一个所\n有者，值在任一时刻只能属于一个变量。\n"),
        ("ja/errors.md", "# メモ\n\nエラーは毎回ロ\nグに書き出されます。\n"),
        ("zh/other.md", "# 其他\n\n这里没有相关的内容。\n"),
    ]);
    for (query, answer) in [("所有", "zh/ownership.md"), ("ログ", "ja/errors.md")] {
        let hits = engine.search(&request(query)).unwrap();
        assert_eq!(paths(&hits), [answer], "{query}");
        assert_eq!((hits[0].chunk.start_line, hits[0].chunk.end_line), (1, 4), "{query}");
    }
}

/// An English question over notes mostly in Chinese: its question words (`how`, `do`, `my`)
/// are rare there, and would lead BM25 to the one note in English; left out, the question
/// meets the Chinese note that holds its subject, by the English name it keeps.
#[test]
fn an_english_question_over_chinese_notes_is_read_without_its_grammar() {
    const MEETING: (&str, &str) = (
        "en/meeting.md",
        "# Meeting\n\nHow do you book the room? Do my notes go with it? Ask how they did it.\n",
    );
    let question = request("How long do my snapshot copies stay?");
    let (_f, engine) = indexed_with(&[
        ("zh/backup.md", "# 备份\n\n每晚生成的 snapshot 保留三十天，之后自动删除。\n"),
        ("zh/network.md", "# 网络\n\n代理的地址写在环境变量里，证书的校验不要关闭。\n"),
        ("zh/cooking.md", "# 做饭\n\n先煮的汤要小火慢炖，最后放盐。\n"),
        MEETING,
    ]);
    assert_eq!(paths(&engine.search(&question).unwrap()), ["zh/backup.md"]);
    // Over notes mostly in English the same words stay in the question.
    let (_f, engine) = indexed_with(&[
        MEETING,
        ("en/backup.md", "# Backups\n\nEach snapshot is kept for thirty days.\n"),
        ("zh/backup.md", "# 备份\n\n每晚生成的 snapshot 保留三十天。\n"),
    ]);
    assert_eq!(paths(&engine.search(&question).unwrap())[0], "en/meeting.md");
}

#[test]
fn a_chinese_question_is_read_without_its_question_words() {
    // Seven notes speak of constants, immutable variables and how they differ. The one
    // about districts alone holds the pairs that the question's `有什么` gives across its
    // words (`有什`, `什么`, `么区`), each rare and so weighed as a rare word: read with them,
    // the question found it first.
    let (_f, engine) = indexed_with(&[
        (
            "zh/constants.md",
            "# 常量与不可变变量\n\n常量与不可变变量的区别：常量必须注明类型，只能设为常量表达式。\n",
        ),
        ("zh/districts.md", "# 行政区\n\n这座城市的两个行政区有什么区别？每年公布一次。\n"),
        ("zh/types.md", "# 类型\n\n常量与不可变变量都要写明类型，区别见下一节。\n"),
        ("zh/shadowing.md", "# 遮蔽\n\n不可变变量可以被遮蔽，常量不能，这是一个区别。\n"),
        ("zh/scope.md", "# 作用域\n\n常量可在任何作用域声明，不可变变量只在块内，区别不大。\n"),
        ("zh/naming.md", "# 命名\n\n常量用大写字母命名，不可变变量用小写，这个区别是约定。\n"),
        ("zh/memory.md", "# 内存\n\n常量在编译时内联，不可变变量占用内存，区别在于存放位置。\n"),
        ("zh/mut.md", "# mut\n\n加上 mut 的变量可以修改，常量、不可变变量都不行，区别仅在名字。\n"),
    ]);
    for question in ["常量和不可变变量有什么区别？", "常量和不可變變量有甚麼區別嗎"]
    {
        let hits = engine.search(&request(question)).unwrap();
        assert_eq!(paths(&hits)[0], "zh/constants.md", "{question}");
    }
    assert_eq!(
        first_preview(&engine, "常量和不可变变量有什么区别？"),
        "[常量]与[不可变变量]的[区别]：[常量]必须注明类型，只能设为[常量]表达式。"
    );
}

/// A copy of the notes of `tests/data/FIXTURE` (the Thai ones, or the German, French,
/// Spanish, Russian and English ones of `languages`), indexed.
fn indexed_copy_of(fixture: &str) -> (Fixture, Engine) {
    let f = Fixture::copy_of(fixture);
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    (f, engine)
}

/// Thai writes a phrase's words without spaces between them: each query names words that
/// stand inside a longer phrase of its note, never a whole phrase.
#[test]
fn thai_words_inside_a_phrase_find_their_notes_by_keywords_alone() {
    let (f, engine) = indexed_copy_of("thai");
    let queries = std::fs::read_to_string(f.root().join("queries.jsonl")).unwrap();
    let mut checked = 0;
    for line in queries.lines() {
        let query: serde_json::Value = serde_json::from_str(line).unwrap();
        let (text, answer) = (query["query"].as_str().unwrap(), query["gold"][0]["path"].as_str().unwrap());
        let hits = engine.search(&request(text)).unwrap();
        assert_eq!(hits.first().map(|h| h.chunk.path.as_str()), Some(answer), "{text}: {:?}", paths(&hits));
        checked += 1;
    }
    assert_eq!(checked, 16);
    // Words no note holds find nothing: "weather forecast".
    let hits = engine.search(&request("พยากรณ์อากาศ")).unwrap();
    assert!(hits.is_empty(), "{:?}", paths(&hits));
}

/// Lao, Khmer and Myanmar are cut into words by their own dictionaries, as Thai is.
#[test]
fn lao_khmer_and_myanmar_words_inside_a_phrase_find_their_notes() {
    let (_f, engine) = indexed_with(&[
        ("lo.md", "ພາສາລາວເປັນພາສາທີ່ສວຍງາມ\n"),
        ("km.md", "ភាសាខ្មែរគឺជាភាសាផ្លូវការ\n"),
        ("my.md", "မြန်မာစာကိုလေ့လာသည်\n"),
    ]);
    for (query, answer) in [("ສວຍງາມ", "lo.md"), ("ລາວ", "lo.md"), ("ភាសាខ្មែរ", "km.md"), ("မြန်မာ", "my.md")]
    {
        let hits = engine.search(&request(query)).unwrap();
        assert_eq!(paths(&hits), [answer], "{query}");
    }
}

#[test]
fn the_preview_marks_thai_words_and_the_english_names_beside_them() {
    let (_f, engine) = indexed_copy_of("thai");
    let marked = first_preview(&engine, "ลบโฟลเดอร์ target");
    // Neighbouring marks are shown as one; the words around them stay unmarked.
    assert!(marked.contains("ให้[ลบโฟลเดอร์target]แล้วสั่ง"), "{marked}");
}

fn first_path(engine: &Engine, query: &str) -> Option<String> {
    engine.search(&request(query)).unwrap().first().map(|h| h.chunk.path.clone())
}

/// Asserts that each query finds its note first.
fn each_finds_its_note(engine: &Engine, cases: &[(&str, &str)]) {
    for &(query, answer) in cases {
        assert_eq!(first_path(engine, query).as_deref(), Some(answer), "{query}");
    }
}

/// Asserts that every one of `queries` finds `answer` first.
fn all_find(engine: &Engine, queries: &[&str], answer: &str) {
    for &query in queries {
        assert_eq!(first_path(engine, query).as_deref(), Some(answer), "{query}");
    }
}

#[test]
fn other_inflections_find_their_notes_in_each_language() {
    let (_f, engine) = indexed_copy_of("languages");
    // Each query's words stand in its note in another form only (a plural, a conjugated
    // verb, another case), except for function words.
    each_finds_its_note(
        &engine,
        &[
            ("Sicherung kopieren", "de/sicherung.md"),
            ("Zertifikat", "de/zertifikate.md"),
            ("Urlaubstag", "de/urlaub.md"),
            ("Migrationen", "de/datenbank.md"),
            ("sauvegarde conservée", "fr/sauvegardes.md"),
            ("déployer", "fr/deploiement.md"),
            ("cambiar contraseña compartida", "es/contrasenas.md"),
            ("solicitar vacaciones", "es/vacaciones.md"),
            ("удалить старую копию", "ru/rezervnye-kopii.md"),
            ("ошибка сборки", "ru/oshibki.md"),
            // Romanian and Turkish are told by their stop words, which tantivy has no list of:
            // by English rules these words met nothing.
            ("fișier", "ro/copii-de-rezerva.md"),
            ("formularul", "ro/concediu.md"),
            ("yedek", "tr/yedekleme.md"),
            ("dosya", "tr/yedekleme.md"),
            ("talepler", "tr/izin.md"),
            // Czech, by a light stemmer of its own: the notes have `Zálohy`, `Soubory`,
            // `archivy`, `dovolené`, `schválení` and `žádankou`.
            ("záloha", "cs/zalohy.md"),
            ("souborů", "cs/zalohy.md"),
            ("archiv", "cs/zalohy.md"),
            ("dovolenou", "cs/dovolena.md"),
            ("schválená", "cs/dovolena.md"),
            ("žádanka", "cs/dovolena.md"),
            // Typed without accents, as its stemmer reads every word.
            ("zadanka", "cs/dovolena.md"),
            // Ukrainian, by a light stemmer of its own too: Russian's, which read these notes
            // before, does not know the endings of `зовнішньому`, `щомісячні` or `керівникові`.
            ("зовнішній", "uk/rezervni-kopii.md"),
            ("щомісячний", "uk/rezervni-kopii.md"),
            ("керівник", "uk/vidpustka.md"),
        ],
    );
}

#[test]
fn a_compound_typed_as_one_word_finds_the_note_that_spells_its_words_apart() {
    let (_f, engine) = indexed_copy_of("languages");
    // No note holds these words; their parts stand apart in one (`Sicherungen … ein
    // Skript`, `Kalender des Teams`, `Zertifikate … Der Dienst`).
    each_finds_its_note(
        &engine,
        &[
            ("Sicherungsskript", "de/sicherung.md"),
            ("Teamkalender", "de/urlaub.md"),
            ("Zertifikatsdienst", "de/zertifikate.md"),
        ],
    );
    // The preview marks the parts where they stand.
    let hits = engine.view().search(&request("Teamkalender")).unwrap();
    let line = hits[0].preview[0].marked("[", "]");
    assert!(line.contains("[Kalender] des [Teams]"), "{line}");
}

#[test]
fn words_typed_without_their_accents_find_their_notes() {
    let (_f, engine) = indexed_copy_of("languages");
    // Each word stands in its note with accents (`Épluchez`, `mañana`, `précédente`), and
    // in no path; typed without them, it found nothing or another note.
    each_finds_its_note(
        &engine,
        &[
            ("epluchez", "fr/recette.md"),
            ("pate", "fr/recette.md"),
            ("equipe", "fr/reunions.md"),
            ("verifiez precedente", "fr/deploiement.md"),
            ("manana", "es/huerto.md"),
            // Romanian and Turkish endings spelt with marks (`păstrează`, `betiği`): their
            // stemmers read them only so, and the chunk holds the word folded first as well.
            ("pastreaza", "ro/copii-de-rezerva.md"),
            ("betigi", "tr/yedekleme.md"),
        ],
    );
    // Typed with them, or with an accent written apart from its letter, as before.
    all_find(&engine, &["Épluchez", "E\u{301}pluchez"], "fr/recette.md");
    // The preview marks the word as the note writes it.
    let marked = first_preview(&engine, "epluchez pommes");
    assert!(marked.contains("[Épluchez] quatre [pommes]"), "{marked}");
}

#[test]
fn words_in_the_arabic_script_are_found_however_they_are_typed() {
    let (_f, engine) = indexed_copy_of("languages");
    // The Persian note writes `کاربران`, `بررسی` and `کارشناس` with Persian letters,
    // `می‌توانند` and `گزارش‌ها` with a zero-width non-joiner, and `۳۰` in Persian digits.
    // Typed on an Arabic keyboard (`ي`, `ك`), joined, or in ASCII digits, these words found
    // nothing, or the Arabic note first.
    each_finds_its_note(
        &engine,
        &[
            ("كاربران", "fa/pashtibangiri.md"),
            ("بررسي", "fa/pashtibangiri.md"),
            ("كارشناس", "fa/pashtibangiri.md"),
            ("میتوانند", "fa/pashtibangiri.md"),
            ("گزارشها", "fa/pashtibangiri.md"),
            ("30 روز", "fa/pashtibangiri.md"),
        ],
    );
    // Typed as the note writes them, as before.
    all_find(&engine, &["کاربران", "می\u{200C}توانند"], "fa/pashtibangiri.md");
    // The preview marks the word as the note writes it.
    let marked = first_preview(&engine, "كاربران");
    assert!(marked.contains("[کاربران]"), "{marked}");
}

#[test]
fn chinese_words_are_found_in_either_script() {
    // Two notes in Traditional characters and one in Simplified ones.
    let (_f, engine) = indexed_with(&[
        ("zh-hant/backup.md", "# 備份\n\n資料庫每晚備份一次，備份檔案保存三十天，過期的會自動刪除。\n"),
        ("zh-hant/update.md", "# 軟體更新\n\n更新軟體之前，請先關閉所有開啟的程式並儲存檔案。\n"),
        (
            "zh-hans/network.md",
            "# 网络设置\n\n使用代理时，请在环境变量 `HTTPS_PROXY` 中设置地址。不要关闭证书验证。\n",
        ),
    ]);
    // Each word is spelt in the other script than its note's, every pair of its characters
    // too: these queries found nothing.
    each_finds_its_note(
        &engine,
        &[
            ("备份", "zh-hant/backup.md"),
            ("软体", "zh-hant/update.md"),
            ("網絡", "zh-hans/network.md"),
            ("證書", "zh-hans/network.md"),
        ],
    );
    // Spelt as the note spells it, as before.
    all_find(&engine, &["備份", "备份"], "zh-hant/backup.md");
    // The preview marks the word as the note writes it.
    let marked = first_preview(&engine, "软体更新");
    assert!(marked.contains("[更新軟體]之前"), "{marked}");
}

#[test]
fn japanese_words_are_found_in_half_width_and_full_width_kana() {
    let (_f, engine) = indexed_with(&[
        // Full-width katakana, as almost all Japanese text writes them.
        ("ja/install.md", "# インストール\n\nディスクを選んでから、パスワードを設定してください。\n"),
        // Half-width katakana, as older systems and some forms write them.
        ("ja/legacy.md", "# 旧システム\n\nﾊﾞｯｸｱｯﾌﾟは毎晩ｻｰﾊﾞｰに保存されます。\n"),
        // A voicing mark written apart from its letter, as macOS stores file names.
        ("ja/mac.md", "# 入口\n\nト\u{3099}アの横から入ります。\n"),
    ]);
    // Each word typed in the other form than its note's: these queries found nothing.
    each_finds_its_note(
        &engine,
        &[
            ("ﾃﾞｨｽｸ", "ja/install.md"),
            ("ﾊﾟｽﾜｰﾄﾞ", "ja/install.md"),
            ("バックアップ", "ja/legacy.md"),
            ("サーバー", "ja/legacy.md"),
            ("ドア", "ja/mac.md"),
        ],
    );
    // As the notes write them, as before.
    all_find(&engine, &["ディスク", "パスワード"], "ja/install.md");
    all_find(&engine, &["ﾊﾞｯｸｱｯﾌﾟ"], "ja/legacy.md");
    // The preview marks the word as the note writes it.
    let marked = first_preview(&engine, "バックアップ");
    assert!(marked.contains("[ﾊﾞｯｸｱｯﾌﾟ]"), "{marked}");
}

#[test]
fn e5_reads_notes_and_queries_of_either_script_alike() {
    if situate::providers::builtin_model().is_none() {
        eprintln!("skipped: this build has no built-in e5 model (build.rs could not fetch it)");
        return;
    }
    let embedder = situate::providers::build(&situate::providers::EmbeddingConfig::E5 {
        model_path: None,
        max_tokens: None,
    })
    .unwrap();
    let f = Fixture::empty();
    for (path, text) in [
        // In Simplified characters.
        ("network.md", "# 网络设置\n\n使用代理时，请在环境变量中设置地址。不要关闭证书验证。\n"),
        ("backup.md", "# 数据库备份\n\n数据库每晚备份一次，备份文件保存三十天。\n"),
        // In Traditional characters.
        ("printer.md", "# 印表機設定\n\n新增印表機時，請先確認驅動程式已經安裝，再列印測試頁檢查連線。\n"),
        ("update.md", "# 軟體更新\n\n更新軟體之前，請先關閉所有程式並儲存檔案。\n"),
        // Japanese in half-width katakana.
        ("legacy.md", "# 旧システム\n\nﾊﾞｯｸｱｯﾌﾟは毎晩ｻｰﾊﾞｰに保存されます。\n"),
    ] {
        f.write(path, text);
    }
    // Every note is compared, however far from the query.
    let mut config = f.config();
    config.search.min_score_share = 0.0;
    let mut engine = f.engine_with(config, embedder);
    engine.reconcile(&mut |_| {}).unwrap();
    while engine.fill_pending_vectors(16).unwrap() > 0 {}
    assert_eq!(engine.pending_vectors(), 0);
    let nearest = |query: &str| -> Vec<(String, Option<f32>)> {
        let request = SearchRequest { mode: SearchMode::Vector, ..request(query) };
        engine.search(&request).unwrap().into_iter().map(|h| (h.chunk.path, h.vector_similarity)).collect()
    };
    // e5 reads notes and queries with their Chinese in one script and their kana in full
    // width, so a query typed in either form finds notes written in either with the same
    // similarities. Read as written, a query typed in Simplified characters was further from
    // a note in Traditional ones than its Traditional twin (the update note 0.870 against
    // 0.892; now 0.923 for both).
    for (typed, twin, note) in [
        ("網絡設置 證書驗證", "网络设置 证书验证", "network.md"),
        ("數據庫備份", "数据库备份", "backup.md"),
        ("印表機 驅動程式", "印表机 驱动程式", "printer.md"),
        ("更新軟體前關閉程式", "更新软体前关闭程式", "update.md"),
        // Kana in half and full width alike.
        ("ｻｰﾊﾞｰのﾊﾞｯｸｱｯﾌﾟ", "サーバーのバックアップ", "legacy.md"),
    ] {
        let hits = nearest(typed);
        assert_eq!(hits, nearest(twin), "{typed}");
        assert_eq!(hits.len(), 5);
        assert_eq!(hits[0].0, note, "{typed}");
    }
}

#[test]
fn english_notes_and_english_names_in_other_languages_are_found_as_before() {
    let (_f, engine) = indexed_copy_of("languages");
    assert_eq!(first_path(&engine, "older backups deleted").as_deref(), Some("en/backups.md"));
    assert_eq!(first_path(&engine, "certificate renewal fails").as_deref(), Some("en/certificates.md"));
    // Identifiers in a German note, whole and by their parts.
    all_find(
        &engine,
        &["maxRetries", "max retries", "runMigrations", "run migrations", "shipped_at"],
        "de/datenbank.md",
    );
}

#[test]
fn a_declared_language_overrides_detection() {
    let f = Fixture::empty();
    // Too short for the detector to be sure: English rules apply unless the note says
    // otherwise, and they do not join `Sicherungen` and `Sicherung`.
    let text = "Die Sicherungen der Datenbank.\n";
    f.write("declared.md", format!("---\nlanguage: de\n---\n\n{text}"));
    f.write("undeclared.md", text);
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    let hits = engine.search(&request("Sicherung")).unwrap();
    assert_eq!(paths(&hits), ["declared.md"]);
    // Both still match the very words they hold.
    assert_eq!(engine.search(&request("Sicherungen")).unwrap().len(), 2);
}

/// A section of one short line cannot tell its language by itself; its document can.
#[test]
fn a_short_chunk_is_analysed_by_the_language_of_its_document() {
    let f = Fixture::empty();
    let long = "Der Urlaub wird zwei Wochen vorher im Portal beantragt. Die Leitung genehmigt den \
                Antrag, und die genehmigten Tage erscheinen danach im gemeinsamen Kalender des Teams.";
    f.write("wartung.md", format!("# Wartung\n\n{long}\n\n## Aufgaben\n\nAlte Sicherungen löschen\n"));
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    let hits = engine.search(&request("Sicherung")).unwrap();
    assert_eq!(hits.len(), 1, "{:?}", paths(&hits));
    assert_eq!(hits[0].chunk.text.trim_end(), "## Aufgaben\n\nAlte Sicherungen löschen");
    // The detected language stands for the front matter field the note does not have.
    assert_eq!(hits[0].chunk.metadata.get("language"), Some(&vec!["de".to_string()]));
    // An English note records none: each of its chunks is detected on its own.
    f.write("en.md", "# Notes\n\nThe backups of the database are kept for thirty days.\n");
    engine.reconcile(&mut |_| {}).unwrap();
    let hits = engine.search(&request("backups")).unwrap();
    assert!(!hits[0].chunk.metadata.contains_key("language"));
}

#[test]
fn the_preview_marks_inflections_by_the_chunks_language() {
    let (_f, engine) = indexed_copy_of("languages");
    let marked = first_preview(&engine, "Sicherung kopieren");
    // `Sicherungen` is marked for `Sicherung`: German rules join them, English ones do not.
    assert!(marked.starts_with("Die [Sicherungen] des Servers"), "{marked}");
    assert!(marked.contains("Jede [Sicherung] wird"), "{marked}");
}

#[test]
fn an_index_analysed_by_an_older_analyzer_is_analysed_again_with_its_vectors_kept() {
    let f = Fixture::copy_of("languages");
    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    let first = engine.reconcile(&mut |_| {}).unwrap();
    drop(engine);
    let embedded = embedder.count();
    // The commit records the analyzer's version in its pipeline fingerprint: make it an
    // older one, as an index written by the previous release has.
    let meta = f.index_dir().join("tantivy/meta.json");
    let current = format!(":a{}:", situate::analysis::VERSION);
    let json = std::fs::read_to_string(&meta).unwrap();
    assert!(json.contains(&current), "{json}");
    std::fs::write(&meta, json.replace(&current, &format!(":a{}:", situate::analysis::VERSION - 1))).unwrap();

    let mut engine = f.engine(embedder.clone());
    assert!(engine.index().notes().iter().any(|n| n.contains("re-chunked")), "{:?}", engine.index().notes());
    let again = engine.reconcile(&mut |_| {}).unwrap();
    assert_eq!(again.files_indexed, first.files_indexed);
    assert_eq!(again.vectors_embedded, 0);
    assert_eq!(embedder.count(), embedded);
    assert_eq!(first_path(&engine, "Sicherung kopieren").as_deref(), Some("de/sicherung.md"));
}

#[test]
fn the_language_setting_stands_for_a_missing_front_matter_field() {
    let loaded = situate::config::Config::from_toml("[chunk]\nlanguage = \"de\"\n");
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    assert_eq!(loaded.config.chunk.language.as_deref(), Some("de"));
    let auto = situate::config::Config::from_toml("[chunk]\nlanguage = \"auto\"\n");
    assert_eq!((auto.problems.len(), auto.config.chunk.language), (0, None));
    let bad = situate::config::Config::from_toml("[chunk]\nlanguage = \"klingon\"\n");
    assert_eq!(bad.problems.len(), 1);
    assert_eq!(bad.problems[0].key, "chunk.language");
    assert!(
        bad.problems[0].message.contains("must be `auto` or one of en, ar"),
        "{}",
        bad.problems[0].message
    );
    assert_eq!(bad.config.chunk.language, None);

    let f = Fixture::empty();
    let text = "Die Sicherungen der Datenbank.\n";
    f.write("german.md", text);
    // A note's own front matter wins over the setting.
    f.write("french.md", format!("---\nlanguage: fr\n---\n\n{text}"));
    let mut config = f.config();
    config.chunk.language = Some("de".to_string());
    let mut engine = f.engine_with(config, Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    assert_eq!(paths(&engine.search(&request("Sicherung")).unwrap()), ["german.md"]);
    let hits = engine.search(&request("Sicherungen")).unwrap();
    assert_eq!(hits.len(), 2);
    let german = hits.iter().find(|h| h.chunk.path == "german.md").unwrap();
    assert_eq!(german.chunk.metadata.get("language"), Some(&vec!["de".to_string()]));
}

/// A German and a Russian note whose titles (from their front matter) name what the text
/// never does: the title field alone holds those words.
fn titled_notes() -> Fixture {
    let f = Fixture::empty();
    f.write(
        "de/notiz.md",
        "---\ntitle: Monatliche Rechnungen\n---\n\nAm Ende jedes Monats schreibt die Buchhaltung eine \
         Zusammenfassung der Beträge und schickt sie an die Kunden.\n",
    );
    f.write(
        "ru/zametka.md",
        "---\ntitle: Инструкции по установке\n---\n\nЗдесь описано, как подготовить новый сервер к \
         работе: какие пакеты нужны и в каком порядке их ставить.\n",
    );
    f.write("en/note.md", "---\ntitle: Monthly invoices\n---\n\nThe team sends its figures every month.\n");
    f
}

#[test]
fn a_title_is_analysed_by_its_chunks_language() {
    let f = titled_notes();
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    // Other inflections than the titles hold: only German and Russian rules join them.
    assert_eq!(paths(&engine.search(&request("Rechnung")).unwrap()), ["de/notiz.md"]);
    assert_eq!(paths(&engine.search(&request("инструкция установки")).unwrap()), ["ru/zametka.md"]);
    // The very words of a title still match, and an English title keeps English rules.
    assert_eq!(paths(&engine.search(&request("Rechnungen")).unwrap()), ["de/notiz.md"]);
    assert_eq!(paths(&engine.search(&request("monthly invoice")).unwrap()), ["en/note.md"]);
    // The stored title is the title as written.
    let hit = engine.search(&request("Rechnung")).unwrap().remove(0);
    assert_eq!(hit.chunk.title, "Monatliche Rechnungen");
}

#[test]
fn a_path_is_analysed_by_its_chunks_language_in_any_script() {
    let f = Fixture::empty();
    // Each file's name holds words that its title and text never do.
    f.write(
        "de/Zahlungsfristen.md",
        "---\ntitle: Monatliche Rechnungen\n---\n\nAm Ende jedes Monats schreibt die Buchhaltung eine \
         Zusammenfassung der Beträge und schickt sie an die Kunden.\n",
    );
    f.write(
        "ru/инструкции-по-установке.md",
        "---\ntitle: Сервер\n---\n\nЗдесь описано, как подготовить новый сервер к работе: какие \
         пакеты нужны и в каком порядке их ставить.\n",
    );
    f.write("笔记/所有权规则.md", "---\ntitle: Rules\n---\n\nEach value has one owner at a time.\n");
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    // Other inflections than the file names hold: German and Russian rules join them, as
    // they do in the notes' text.
    assert_eq!(paths(&engine.search(&request("Zahlungsfrist")).unwrap()), ["de/Zahlungsfristen.md"]);
    assert_eq!(
        paths(&engine.search(&request("инструкция установки")).unwrap()),
        ["ru/инструкции-по-установке.md"]
    );
    // A Chinese file name is cut into pairs of characters like Chinese text.
    assert_eq!(paths(&engine.search(&request("所有权")).unwrap()), ["笔记/所有权规则.md"]);
    // The names as written still match.
    assert_eq!(paths(&engine.search(&request("Zahlungsfristen")).unwrap()), ["de/Zahlungsfristen.md"]);
}

#[test]
fn a_snippet_is_analysed_by_its_chunks_language() {
    let server = TestServer::start();
    server.set_reply(|request: &str| {
        let chunk = request.rsplit("<chunk>").next().unwrap_or(request);
        if chunk.contains("Buchhaltung") {
            "Der Abschnitt beschreibt die Rechnungen der Buchhaltung.".to_string()
        } else {
            "Этот раздел содержит инструкции по установке.".to_string()
        }
    });
    let f = Fixture::empty();
    f.write(
        "de/notiz.md",
        "Am Ende jedes Monats schreibt die Buchhaltung eine Zusammenfassung der Beträge und \
         schickt sie an die Kunden.\n",
    );
    f.write(
        "ru/zametka.md",
        "Здесь описано, как подготовить новый сервер к работе: какие пакеты нужны и в каком \
         порядке их ставить.\n",
    );
    let snippets = SnippetConfig {
        base_url: server.openai_url(),
        max_retries: 1,
        timeout_secs: 5,
        ..SnippetConfig::new(ChatProvider::OpenAi, "small-chat")
    };
    let config = Config { snippets: Some(snippets), ..f.config() };
    let mut engine = f.engine_with(config, Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    assert!(engine.search(&request("Rechnung")).unwrap().is_empty());
    let run = engine.write_snippets(Totals::default(), &mut |_| {}).unwrap();
    assert_eq!(run.indexed, 2);
    // Only the snippets hold these words, in other forms than the queries'.
    assert_eq!(paths(&engine.search(&request("Rechnung")).unwrap()), ["de/notiz.md"]);
    assert_eq!(paths(&engine.search(&request("инструкция установки")).unwrap()), ["ru/zametka.md"]);
    let hit = engine.search(&request("Rechnung")).unwrap().remove(0);
    assert_eq!(hit.chunk.snippet.unwrap().text, "Der Abschnitt beschreibt die Rechnungen der Buchhaltung.");
}

/// Chinese, Japanese, Korean and Thai have no stemmer, but they are languages: their notes
/// are named so by detection, a filter and the setting, and status counts their chunks.
#[test]
fn chinese_japanese_korean_and_thai_notes_are_named_for_their_language() {
    let notes: &[(&str, &str)] = &[
        (
            "zh.md",
            "# 所有权\n\n所有权是 Rust 最为与众不同的特性，它让 Rust 无需垃圾回收即可保障内存安全。\
             因此，理解所有权在 Rust 中是如何工作的是十分重要的。\n",
        ),
        (
            "ja.md",
            "# バックアップ\n\nスナップショットは毎晩作成され、三十日間保存されます。古いものは自動的に\
             削除されます。復元するときは管理画面から日付を選んでください。\n",
        ),
        (
            "ko.md",
            "# 배포 절차\n\n새 버전을 배포하기 전에 데이터베이스를 백업하세요. 배포가 끝나면 로그를 \
             확인하고, 문제가 있으면 이전 버전으로 되돌립니다.\n",
        ),
        ("th.md", "# การสำรองข้อมูล\n\nระบบจะสำรองข้อมูลทุกคืนและเก็บไว้สามสิบวัน หลังจากนั้นข้อมูลเก่าจะถูกลบโดยอัตโนมัติ\n"),
        ("en.md", "# Notes\n\nThe backups of the database are kept for thirty days, and then deleted.\n"),
    ];
    let (f, engine) = indexed_with(notes);
    // The language detected stands for the front matter field the note does not have.
    let language_of = |path: &str, query: &str| language_field(&engine, path, query);
    let field = |code: &str| Some(vec![code.to_string()]);
    assert_eq!(language_of("zh.md", "所有权"), field("zh"));
    assert_eq!(language_of("ja.md", "スナップショット"), field("ja"));
    assert_eq!(language_of("ko.md", "데이터베이스"), field("ko"));
    assert_eq!(language_of("th.md", "สำรอง"), field("th"));
    assert_eq!(language_of("en.md", "backups"), None);

    // A filter finds a language's notes without their front matter naming it.
    let filtered = |code: &str, query: &str| in_language(&engine, code, query);
    assert_eq!(filtered("zh", "Rust 所有权"), ["zh.md"]);
    assert_eq!(filtered("ja", "スナップショット"), ["ja.md"]);
    assert!(filtered("zh", "スナップショット").is_empty());

    // Status counts each language's chunks.
    let counted = chunks_by_language(&engine);
    for code in ["zh", "ja", "ko", "th", "en"] {
        assert!(counted.contains(&(code, 1)), "{code}: {counted:?}");
    }

    // The setting names them too, and stands for a missing front matter field.
    let loaded = Config::from_toml("[chunk]\nlanguage = \"zh-TW\"\n");
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    drop(engine);
    f.write("short.md", "# 笔记\n\n内存安全。\n");
    let mut config = f.config();
    config.chunk.language = Some("zh".to_string());
    let mut engine = f.engine_with(config, Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    let filters = situate::search::filter::parse_all(&["language=zh"]).unwrap();
    let hits = engine.search(&SearchRequest { filters, ..request("内存安全") }).unwrap();
    let mut found = paths(&hits);
    found.sort();
    assert_eq!(found, ["short.md", "zh.md"]);
}

#[test]
fn notes_in_languages_without_rules_are_named_and_searched_as_before() {
    let notes: &[(&str, &str)] = &[
        (
            "he.md",
            "# גיבויים\n\nהגיבויים מועתקים בכל לילה לשרת השני ונשמרים שם שלושים יום לפני שהם נמחקים.\n",
        ),
        (
            "hi.md",
            "# बैकअप\n\nबैकअप हर रात दूसरे सर्वर पर कॉपी किए जाते हैं और मिटाए जाने से पहले तीस दिन तक वहाँ रखे \
             जाते हैं। यह काम केवल व्यवस्थापक ही कर सकता है।\n",
        ),
        (
            "pl.md",
            "# Kopie zapasowe\n\nKopie zapasowe są co noc kopiowane na drugi serwer i tam przechowywane przez \
             trzydzieści dni, zanim zostaną usunięte, jeśli nie ma innej potrzeby.\n",
        ),
        (
            "vi.md",
            "# Sao lưu\n\nCác bản sao lưu được chép sang máy chủ thứ hai mỗi đêm và được giữ ở đó trong ba \
             mươi ngày trước khi bị xóa.\n",
        ),
        (
            "id.md",
            "# Cadangan\n\nCadangan disalin ke server kedua setiap malam dan disimpan di sana selama tiga puluh \
             hari sebelum dihapus oleh sistem yang berjalan.\n",
        ),
        (
            "fa.md",
            "# پشتیبان\n\nپشتیبان‌ها هر شب روی سرور دوم کپی می‌شوند و پیش از پاک شدن سی روز آنجا نگه داشته می‌شوند.\n",
        ),
        (
            "ka.md",
            "# სარეზერვო ასლები\n\nსარეზერვო ასლები ყოველ ღამე მეორე სერვერზე კოპირდება და იქ ოცდაათი დღე ინახება.\n",
        ),
        ("en.md", "# Notes\n\nThe backups of the database are kept for thirty days, and then deleted.\n"),
        // The Polish note again, declared English: its words are analysed as the Polish
        // note's are.
        (
            "pl-as-en.md",
            "---\nlanguage: en\n---\n# Kopie zapasowe\n\nKopie zapasowe są co noc kopiowane na drugi serwer i \
             tam przechowywane przez trzydzieści dni, zanim zostaną usunięte, jeśli nie ma innej potrzeby.\n",
        ),
    ];
    let (_f, engine) = indexed_with(notes);
    let language_of = |path: &str, query: &str| language_field(&engine, path, query);
    let field = |code: &str| Some(vec![code.to_string()]);
    assert_eq!(language_of("he.md", "גיבויים"), field("he"));
    assert_eq!(language_of("hi.md", "बैकअप"), field("hi"));
    assert_eq!(language_of("pl.md", "serwer"), field("pl"));
    assert_eq!(language_of("vi.md", "máy chủ"), field("vi"));
    assert_eq!(language_of("id.md", "cadangan"), field("id"));
    assert_eq!(language_of("fa.md", "سرور"), field("fa"));
    assert_eq!(language_of("ka.md", "სერვერზე"), field("ka"));

    // A filter finds each language's notes.
    let filtered = |code: &str, query: &str| in_language(&engine, code, query);
    assert_eq!(filtered("pl", "kopie zapasowe"), ["pl.md"]);
    assert_eq!(filtered("he", "גיבויים"), ["he.md"]);
    assert!(filtered("vi", "kopie zapasowe").is_empty());

    // Status counts each language's chunks.
    let counted = chunks_by_language(&engine);
    for code in ["he", "hi", "pl", "vi", "id", "fa", "ka"] {
        assert!(counted.contains(&(code, 1)), "{code}: {counted:?}");
    }
    assert!(counted.contains(&("en", 2)), "{counted:?}");

    // Naming a language read by English rules changes no score: the Polish note and its copy
    // declared English hold the same terms, and are equally long to BM25.
    let hits = engine.search(&request("kopie zapasowe przechowywane")).unwrap();
    let score = |path: &str| hits.iter().find(|h| h.chunk.path == path).and_then(|h| h.bm25_score);
    assert!(score("pl.md").is_some());
    assert_eq!(score("pl.md"), score("pl-as-en.md"));
}
