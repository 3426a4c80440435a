//! A small Japanese and Korean smoke set: notes written for this test, indexed by the real
//! engine, searched by words in their own script (and by the English names inside them),
//! with the matching sentence marked in the preview. The Chinese dev set in
//! `../shared/data` measures the same analysis at scale (`scripts/quality`).

mod common;

use common::{Counting, Fixture};
use situate::engine::Engine;
use situate::search::preview::Previewer;
use situate::search::{Expand, Hit, SearchMode, SearchRequest};

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
    let f = Fixture::empty();
    for (path, text) in NOTES {
        f.write(path, text);
    }
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    (f, engine)
}

fn paths(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.chunk.path.as_str()).collect()
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
    let query = "スナップショットの保存";
    let hits = engine.search(&request(query)).unwrap();
    let lines = Previewer::new(query, None).preview(&hits[0].chunk);
    assert_eq!(
        lines[0].marked("[", "]"),
        "[スナップショット]は毎晩作成され、三十日間[保存]されます。古いものは自動的に削除されます。"
    );
    let query = "데이터베이스 백업";
    let hits = engine.search(&request(query)).unwrap();
    let lines = Previewer::new(query, None).preview(&hits[0].chunk);
    assert!(lines[0].marked("[", "]").contains("[데이터베이스]를 [백업]하세요"), "{:?}", lines[0]);
}
