//! Command-line tests: the real `situate` binary on a fixture workspace, with its cache
//! folder in a temporary directory.

mod common;

use std::process::{Command, Output};

use common::Fixture;

struct Cli {
    fixture: Fixture,
}

impl Cli {
    fn new() -> Cli {
        Cli { fixture: Fixture::standard() }
    }

    fn notes() -> Cli {
        Cli { fixture: Fixture::copy_of("notes") }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(args)
            .current_dir(self.fixture.root())
            .env("XDG_CACHE_HOME", self.fixture.index.path())
            .env_remove("SITUATE_LOG")
            .output()
            .unwrap()
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_situate"));
        command.args(args).current_dir(self.fixture.root()).env("XDG_CACHE_HOME", self.fixture.index.path());
        command.env_remove("SITUATE_LOG").env_remove("NO_COLOR").envs(env.iter().copied());
        command.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "{args:?} failed\nstdout: {stdout}\nstderr: {stderr}");
        (stdout, stderr)
    }
}

#[test]
fn index_then_search_finds_the_answer() {
    let cli = Cli::new();
    let (out, _) = cli.ok(&["index"]);
    assert!(out.contains("4 files seen, 4 new or changed"), "{out}");
    let (out, _) = cli.ok(&["index", "."]);
    assert!(out.contains("0 new or changed") && out.contains("4 unchanged"), "{out}");

    // The answer never says "backup"; its title and headings do.
    let (out, _) = cli.ok(&["search", "how long are backups kept", "-k", "3"]);
    let answer = out.lines().find(|l| l.contains("ops/backup.md:10-13")).unwrap_or_else(|| panic!("{out}"));
    assert!(answer.starts_with("1. ") || answer.starts_with("2. "), "{out}");
    assert!(answer.contains("Backup policy › Backups › Retention"), "{out}");
}

#[test]
fn notes_without_the_query_words_far_below_the_best_hit_are_left_out() {
    let cli = Cli { fixture: Fixture::copy_of("workspace") };
    let hits = || -> Vec<serde_json::Value> {
        let (out, _) = cli.ok(&["search", "how long are backups kept?", "--json", "-k", "10"]);
        serde_json::from_str::<serde_json::Value>(&out).unwrap().as_array().unwrap().clone()
    };
    let kept = hits();
    let best = kept[0]["score"].as_f64().unwrap();
    assert_eq!(kept[0]["path"], "ops/backup.md", "{kept:?}");
    for hit in &kept {
        let words = !hit["bm25_rank"].is_null();
        assert!(words || hit["score"].as_f64().unwrap() >= 0.1 * best, "{hit}");
    }
    assert!(kept.iter().all(|h| h["path"] != "kitchen/bread.md"), "{kept:?}");
    // With the floor at 0, each of the folder's eight chunks is listed.
    cli.fixture.write("situate.toml", "[search]\nmin_score_share = 0\n");
    let all = hits();
    assert_eq!(all.len(), 8, "{all:?}");
    assert!(all.iter().any(|h| h["path"] == "kitchen/bread.md"), "{all:?}");
}

#[test]
fn index_and_status_take_the_folder_as_an_argument_or_as_dir() {
    // Run from elsewhere, as a user names a notes folder.
    let cli = Cli::new();
    let root = cli.fixture.root().to_str().unwrap().to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(args)
            .current_dir(elsewhere.path())
            .env("XDG_CACHE_HOME", cli.fixture.index.path())
            .output()
            .unwrap()
    };
    let text = |out: &Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let out = run(&["index", "--dir", &root]);
    assert!(out.status.success() && text(&out).contains("4 files seen"), "{out:?}");
    for args in [vec!["status", &root], vec!["status", "--dir", &root]] {
        let out = run(&args);
        assert!(out.status.success() && text(&out).contains("files:     4"), "{args:?}: {out:?}");
    }
    let out = run(&["status", &root, "--dir", &root]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

#[test]
fn a_search_names_a_file_left_out_once_and_status_lists_it() {
    let cli = Cli::new();
    cli.fixture.write("ops/dump.md", b"# Dump\n\x00\x01binary\n");
    let (_, err) = cli.ok(&["search", "backups"]);
    assert!(err.contains("situate: skipped ops/dump.md: binary file"), "{err}");
    // Run after run, the same file left out for the same reason is not named again.
    let (_, err) = cli.ok(&["search", "backups"]);
    assert!(!err.contains("skipped"), "{err}");
    let (out, _) = cli.ok(&["status"]);
    assert!(out.contains("ops/dump.md"), "{out}");
    // A new reason is news.
    cli.fixture.write("ops/dump.md", vec![b'x'; 5 * 1024 * 1024]);
    let (_, err) = cli.ok(&["search", "backups"]);
    assert!(err.contains("situate: skipped ops/dump.md: too large"), "{err}");
}

/// Notes saved in UTF-16 (as Windows PowerShell and older Notepads save "Unicode") or in a
/// legacy encoding (GBK, Shift_JIS, Windows-1251) are searched as their text: none is
/// skipped as binary or read with replacement characters.
#[test]
fn notes_in_utf16_and_legacy_encodings_are_searched_as_their_text() {
    let cli = Cli { fixture: Fixture::empty() };
    let mut utf16 = vec![0xFF, 0xFE];
    let meeting = "Meeting notes\r\n\r\nThe quarterly budget review moved to Thursday afternoon.\r\n";
    utf16.extend(meeting.encode_utf16().flat_map(u16::to_le_bytes));
    cli.fixture.write("utf16.txt", utf16);
    let encoded = |encoding: &'static encoding_rs::Encoding, text: &str| encoding.encode(text).0.into_owned();
    cli.fixture.write(
        "gbk.md",
        encoded(encoding_rs::GBK, "# 备份\n\n数据库每天凌晨两点备份一次，快照保留三十天。\n"),
    );
    cli.fixture.write(
        "sjis.txt",
        encoded(encoding_rs::SHIFT_JIS, "スナップショットは毎晩作成され、三十日間保存されます。\n"),
    );
    cli.fixture.write(
        "cp1251.md",
        encoded(encoding_rs::WINDOWS_1251, "# Копии\n\nРезервные копии хранятся тридцать дней.\n"),
    );
    let (out, err) = cli.ok(&["index", "--quick"]);
    assert!(out.contains("4 files seen, 4 new or changed"), "{out}");
    assert!(!err.contains("skipped") && !err.contains("UTF-8"), "{err}");
    for (query, hit, line) in [
        (
            "budget review",
            "1. utf16.txt:1-3",
            "   3: The quarterly budget review moved to Thursday afternoon.",
        ),
        ("快照保留", "1. gbk.md:1-3  备份", "   3: 数据库每天凌晨两点备份一次，快照保留三十天。"),
        (
            "スナップショット",
            "1. sjis.txt:1-1",
            "   1: スナップショットは毎晩作成され、三十日間保存されます。",
        ),
        ("резервные копии", "1. cp1251.md:1-3  Копии", "   3: Резервные копии хранятся тридцать дней."),
    ] {
        let (out, _) = cli.ok(&["search", query, "--mode", "bm25", "-k", "1", "--no-update"]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[..2], [hit, line], "{query}: {out}");
    }
    let (out, _) = cli.ok(&["show", "gbk.md:3"]);
    assert!(out.contains("\n  language: Chinese (zh)"), "{out}");
    let (out, _) = cli.ok(&["status"]);
    assert!(!out.contains("skipped") && !out.contains("UTF-8"), "{out}");
}

/// Korean written on a Mac may be stored in jamo, three characters to a syllable (macOS
/// keeps file names so, and text pasted from them or from some PDFs follows): such a note
/// is found by the syllables a query types, and shown as it is written.
#[test]
fn a_korean_note_stored_in_jamo_is_found_by_the_syllables_typed() {
    use unicode_normalization::UnicodeNormalization;
    let cli = Cli { fixture: Fixture::empty() };
    let jamo = |text: &str| text.nfd().collect::<String>();
    let (name, line) = (jamo("백업.md"), jamo("데이터베이스 스냅샷은 삼십 일 동안 보관됩니다."));
    assert_ne!(line, "데이터베이스 스냅샷은 삼십 일 동안 보관됩니다.");
    cli.fixture.write(&name, format!("{}\n\n{line}\n", jamo("# 백업 정책")));
    cli.fixture.write("meeting.md", "# 회의\n\n회의는 목요일 오후로 옮겨졌습니다.\n");
    cli.ok(&["index", "--quick"]);
    for query in ["스냅샷 보관", "데이터베이스", "백업"] {
        let (out, _) = cli.ok(&["search", query, "--mode", "bm25", "-k", "1", "--no-update"]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() >= 2 && lines[0].starts_with(&format!("1. {name}:1-3")), "{query}: {out}");
        assert_eq!(lines[1], format!("   3: {line}"), "{query}: {out}");
    }
}

/// Hebrew with its points (a prayer book, a dictionary, Scripture's cantillation) is found by
/// the words a reader types, which have none.
#[test]
fn a_hebrew_note_with_its_points_is_found_by_the_words_typed_without_them() {
    let cli = Cli { fixture: Fixture::empty() };
    let verse = "בְּרֵאשִׁ֖ית בָּרָ֣א אֱלֹהִ֑ים אֵ֥ת הַשָּׁמַ֖יִם וְאֵ֥ת הָאָֽרֶץ׃";
    cli.fixture.write("genesis.md", format!("# בראשית\n\n{verse}\n"));
    cli.fixture.write("shopping.md", "# קניות\n\nלחם, חלב וביצים.\n");
    cli.ok(&["index", "--quick"]);
    for query in ["השמים והארץ", "ברא"] {
        let (out, _) = cli.ok(&["search", query, "--mode", "bm25", "-k", "1", "--no-update"]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() >= 2 && lines[0].starts_with("1. genesis.md:1-3"), "{query}: {out}");
        assert_eq!(lines[1], format!("   3: {verse}"), "{query}: {out}");
    }
}

/// Two letters of Shift_JIS are too few for the guess: the `encoding` setting names the
/// encoding, and naming it reads the files that did not change again.
#[test]
fn the_encoding_setting_reads_a_note_too_short_to_guess() {
    let cli = Cli { fixture: Fixture::empty() };
    cli.fixture.write("memo.txt", &encoding_rs::SHIFT_JIS.encode("メモ").0);
    cli.fixture.write("other.md", "# Other\n\nSomething else.\n");
    let found = |cli: &Cli| {
        let (out, _) = cli.ok(&["search", "メモ", "--mode", "bm25", "-k", "1"]);
        out.starts_with("1. memo.txt:1-1\n   1: メモ\n")
    };
    cli.ok(&["index", "--quick"]);
    assert!(!found(&cli), "the guess reads the two letters in another encoding");
    cli.fixture.write("situate.toml", "encoding = \"shift_jis\"\n");
    assert!(found(&cli));
    cli.fixture.write("situate.toml", "encoding = \"utf-16\"\n");
    // A value that names no encoding to read such files in is said so, and the guess
    // stands in for it.
    let (_, err) = cli.ok(&["search", "メモ", "--mode", "bm25"]);
    assert!(err.contains("config key `encoding`: \"utf-16\": a file in UTF-16 is read"), "{err}");
    assert!(err.contains("(using the default)"), "{err}");
    assert!(!found(&cli));
}

#[test]
fn search_json_has_the_stable_fields() {
    let cli = Cli::new();
    let (out, err) = cli.ok(&["search", "sourdough starter", "--json", "-k", "2", "--mode", "hybrid"]);
    let hits: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let hits = hits.as_array().unwrap();
    assert_eq!(hits.len(), 2);
    let h = &hits[0];
    for key in ["path", "start_line", "end_line", "title", "heading_path", "score", "text", "context"] {
        assert!(h.get(key).is_some(), "missing {key}: {h}");
    }
    assert_eq!(h["path"], "kitchen/bread.md");
    assert_eq!(h["title"], "Sourdough");
    assert!(h["heading_path"].is_array());
    // The language whose rules analysed it, as `show` prints it, in its JSON too.
    assert_eq!(h["language"], "en", "{h}");
    let (out, _) = cli.ok(&["show", "kitchen/bread.md:3", "--json"]);
    let chunks: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(chunks[0]["language"], "en", "{chunks}");
}

#[test]
fn a_hit_shows_the_line_that_matched_with_its_terms_marked() {
    let cli = Cli::new();
    // "legal hold" is on the last line of its chunk (lines 10-13): that line is shown.
    let (out, _) = cli.ok(&["search", "legal hold", "-k", "1"]);
    assert!(out.contains("ops/backup.md:10-13"), "{out}");
    assert!(out.contains("   13: legal hold is placed on them."), "{out}");
    // Piped output carries no terminal codes.
    assert!(!out.contains('\x1b'), "{out:?}");

    let (out, _) = cli.ok(&["search", "legal hold", "-k", "1", "--json"]);
    let hits: serde_json::Value = serde_json::from_str(&out).unwrap();
    let preview = &hits[0]["preview"];
    assert_eq!(preview[0]["line"], 13, "{preview}");
    assert_eq!(preview[0]["text"], "legal hold is placed on them.", "{preview}");
    assert_eq!(preview[0]["marks"], serde_json::json!([[0, 5], [6, 10]]), "{preview}");
}

#[test]
fn a_long_line_cut_after_a_no_break_space_is_shown() {
    // French puts a no-break space (two bytes) before `«`; a long line's preview starts
    // after the first blank of the forty characters before the match.
    let cli = Cli::new();
    let line =
        format!("{}abc\u{a0}{} «aiguille» et le reste {}", "x".repeat(300), "y".repeat(30), "z ".repeat(100));
    std::fs::write(cli.fixture.root().join("long.md"), format!("# Long\n\n{line}\n")).unwrap();
    let (out, _) = cli.ok(&["search", "aiguille", "-k", "1", "--mode", "bm25"]);
    assert!(out.contains("1. long.md:1-3"), "{out}");
    assert!(out.contains(&format!("   3: …{} «aiguille» et le reste", "y".repeat(30))), "{out}");
}

#[test]
fn a_line_is_shown_once_however_many_overlapping_hits_hold_it() {
    // A section longer than a chunk is cut into chunks that overlap by a few lines (11-14,
    // 20-23, 29-32, …); the lines that hold both of the query's words lie in overlaps.
    let cli = Cli { fixture: Fixture::empty() };
    let lines: Vec<String> = (3..=62)
        .map(|n| match n {
            21 | 30 => format!("Line {n} says the lantern is lit at dusk."),
            _ => format!("Line {n} says the lantern is lit."),
        })
        .collect();
    cli.fixture.write("long.md", format!("# Lanterns\n\n{}\n", lines.join("\n")));
    cli.fixture.write("situate.toml", "[chunk]\nmax_tokens = 120\noverlap_tokens = 40\n");
    let (out, _) = cli.ok(&["search", "lantern dusk", "-k", "20", "--mode", "bm25", "--json"]);
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let holding = |line: u64| {
        hits.iter()
            .filter(|h| h["start_line"].as_u64() <= Some(line) && Some(line) <= h["end_line"].as_u64())
            .count()
    };
    assert!(holding(21) >= 2 && holding(30) >= 2, "{out}");
    let mut shown: Vec<u64> = hits
        .iter()
        .flat_map(|h| h["preview"].as_array().unwrap().clone())
        .map(|l| l["line"].as_u64().unwrap())
        .collect();
    let count = shown.len();
    shown.sort_unstable();
    shown.dedup();
    assert_eq!(shown.len(), count, "{out}");
    assert!(shown.contains(&21) && shown.contains(&30), "{shown:?}");
}

#[test]
fn a_hit_says_what_it_was_widened_to_only_when_it_was() {
    let cli = Cli::new();
    // Too little of its section matched for the section to replace it: it stays as it is.
    let (out, _) = cli.ok(&["search", "legal hold", "-k", "1", "--expand", "merge"]);
    assert!(out.starts_with("1. ops/backup.md:10-13  Backup policy › Backups › Retention\n   13: "), "{out}");
    let (out, _) = cli.ok(&["search", "legal hold", "-k", "1", "--expand", "window"]);
    assert!(out.contains("\n   expanded to lines 5-18 (3 chunks, 1 hit)\n"), "{out}");
}

#[test]
fn a_hit_does_not_name_its_file_twice() {
    let cli = Cli::new();
    // A note without a title or a first-level heading is titled by its file's name, which
    // its place already gives.
    cli.fixture.write("notes/ch03.md", "## 变量和可变性\n\n变量默认是不可变的。\n");
    let (out, _) = cli.ok(&["search", "变量", "-k", "1", "--mode", "bm25"]);
    assert!(out.starts_with("1. notes/ch03.md:1-3  变量和可变性\n"), "{out}");
    let (out, _) = cli.ok(&["search", "herons canal", "-k", "1", "--mode", "bm25"]);
    assert!(out.starts_with("1. journal/2026-03-02.txt:1-3\n"), "{out}");
}

fn hit_paths(out: &str) -> Vec<String> {
    let hits: serde_json::Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let mut paths: Vec<String> =
        hits.as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect();
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn front_matter_fields_are_shown_searched_and_filtered_on() {
    let cli = Cli::notes();
    // Malformed front matter is a warning; the file is indexed all the same.
    let (out, _) = cli.ok(&["index"]);
    assert!(out.contains("5 files seen, 5 new or changed"), "{out}");
    assert!(
        out.contains("content/posts/broken.md: line 2: front matter: the list of `tags` is not closed"),
        "{out}"
    );

    let search = |filters: &[&str]| {
        let mut args = vec!["search", "snapshots", "--json", "-k", "20"];
        for f in filters {
            args.extend(["--where", f]);
        }
        hit_paths(&cli.ok(&args).0)
    };
    let all =
        ["content/posts/broken.md", "content/posts/restore.md", "docs/retention.md", "vault/Backup plan.md"];
    // Obsidian (`#backup` in a block list), MkDocs (a list at the key's indentation), Hugo
    // (TOML), and the half-broken file's readable part: all tagged backup, any case.
    assert_eq!(search(&["tags=backup"]), all);
    assert_eq!(search(&["TAGS=#Backup"]), all);
    // Repeated filters must all match; a parent tag matches a nested one.
    assert_eq!(search(&["tags=backup", "tags=ops"]), ["content/posts/restore.md", "vault/Backup plan.md"]);
    assert_eq!(search(&["tags=ops/storage"]), ["vault/Backup plan.md"]);
    assert_eq!(search(&["categories=runbooks"]), ["content/posts/restore.md"]);
    assert_eq!(search(&["category=ops"]), ["content/posts/broken.md"]);
    assert_eq!(search(&["draft=false"]), ["content/posts/restore.md"]);
    assert_eq!(search(&["tags=cooking"]), ["vault/Recipes.md"]);
    assert!(search(&["tags=gardening"]).is_empty());
    // Nested maps are not fields; other values are.
    assert!(search(&["search=2"]).is_empty());
    assert_eq!(search(&["created=2024-03-01"]), ["vault/Backup plan.md"]);

    // An alias is searched like a title: the note never says "disaster recovery plan".
    let (out, _) = cli.ok(&["search", "DR plan", "-k", "1", "--mode", "bm25"]);
    assert!(out.contains("vault/Backup plan.md"), "{out}");
    // Hits show the fields of the header, and JSON carries all of them.
    assert!(out.contains("   Tags: #backup, ops/storage\n   Aliases: Snapshot schedule, DR plan\n"), "{out}");
    let (out, _) = cli.ok(&["search", "restoring", "--json", "-k", "1", "--where", "tags=ops"]);
    let hits: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(hits[0]["metadata"]["categories"], serde_json::json!(["runbooks"]), "{out}");
    assert_eq!(hits[0]["metadata"]["draft"], serde_json::json!(["false"]), "{out}");
    assert!(hits[0]["metadata"].get("author").is_none(), "a table's keys are not the document's: {out}");
    assert_eq!(hits[0]["context"], "Document: Restoring a database\nTags: backup, ops", "{out}");

    // A filter that is not FIELD=VALUE is a usage error.
    let out = cli.run(&["search", "x", "--where", "tags"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("write FIELD=VALUE"));
}

#[test]
fn explain_shows_both_arms() {
    let cli = Cli::new();
    let (out, _) = cli.ok(&["search", "rollback traffic", "--explain", "-k", "1"]);
    assert!(out.contains("bm25 #1") && out.contains("vector #"), "{out}");
}

/// Every file under `dir` for which `wanted` holds.
fn files_where(dir: &std::path::Path, wanted: &dyn Fn(&std::path::Path) -> bool) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_where(&path, wanted));
        } else if wanted(&path) {
            found.push(path);
        }
    }
    found
}

/// Every file under `dir` named `name`.
fn files_named(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    files_where(dir, &|p| p.file_name().is_some_and(|n| n == name))
}

#[test]
fn a_search_by_words_on_the_index_as_it_is_reads_no_vector_file() {
    let cli = Cli::new();
    // The default model's vectors wait: the static model's stand in, kept in quick.vec.
    cli.ok(&["index", "--quick"]);
    let quick = files_named(cli.fixture.index.path(), "quick.vec");
    assert_eq!(quick.len(), 1, "{quick:?}");
    std::fs::write(&quick[0], b"not a vector file").unwrap();

    let (out, err) = cli.ok(&["search", "snapshots kept", "-k", "1", "--mode", "bm25", "--no-update"]);
    assert!(out.starts_with("1. ops/backup.md"), "{out}");
    assert!(!err.contains("quick"), "a search by words never opened the vector files: {err}");
    // A search by meaning reads them, finds the damage, and still answers.
    let (out, err) = cli.ok(&["search", "snapshots kept", "-k", "1", "--no-update"]);
    assert!(out.starts_with("1. ops/backup.md"), "{out}");
    assert!(err.contains("quick vectors are made in memory"), "{err}");
}

#[test]
fn a_reader_meeting_a_damaged_chunk_store_says_so_and_the_next_writer_rebuilds_it() {
    let cli = Cli::new();
    cli.ok(&["index", "--quick"]);
    let root = cli.fixture.index.path();
    let segments =
        files_where(root, &|p| p.extension().is_some_and(|e| e == "idx" || e == "store" || e == "term"));
    assert!(!segments.is_empty());
    for path in &segments {
        std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(0).unwrap();
    }
    // A search that may not update the index cannot mend it: it says what is wrong and
    // what mends it, in one line, without tantivy's message twice.
    let out = cli.run(&["search", "snapshots kept", "--no-update"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("is damaged") && err.contains("`situate index"), "{err}");
    assert_eq!(err.matches("File corrupted").count(), 1, "{err}");
    // A run that writes finds the damage as it opens the index and rebuilds it.
    let (_, err) = cli.ok(&["index", "--quick"]);
    assert!(err.contains("damaged"), "{err}");
    let (out, _) = cli.ok(&["search", "snapshots kept", "-k", "1", "--no-update"]);
    assert!(out.starts_with("1. ops/backup.md"), "{out}");
}

#[test]
fn search_brings_the_index_up_to_date_first() {
    let cli = Cli::new();
    cli.ok(&["index"]);
    cli.fixture.write("ops/oncall.md", "# On-call\n\nThe pager rotation changes every Monday at noon.\n");
    let (out, _) = cli.ok(&["search", "pager rotation", "-k", "1", "--mode", "bm25"]);
    assert!(out.starts_with("1. ops/oncall.md:1-3"), "{out}");
    std::fs::remove_file(cli.fixture.root().join("ops/oncall.md")).unwrap();
    let (out, _) = cli.ok(&["search", "pager rotation", "-k", "1", "--mode", "bm25"]);
    assert_eq!(out.trim(), "no results");
}

#[test]
fn show_names_a_chunk_s_language_and_heading_path_as_status_and_search_do() {
    let cli = Cli { fixture: Fixture::empty() };
    cli.fixture
        .write("ops.md", "# Ops\n\n## Backups\n\n### Retention\n\nSnapshots are kept for thirty days.\n");
    // Chinese letters are cut into pairs whatever the rules, and `show` says so.
    cli.fixture.write(
        "zh.md",
        "# 所有权\n\n所有权是 Rust 最为与众不同的特性，它让 Rust 无需垃圾回收即可保障内存安全。\n",
    );
    cli.ok(&["index"]);
    let (out, _) = cli.ok(&["show", "ops.md:7"]);
    // Counted as the hover counts: from 1, of the file's chunks.
    assert!(out.starts_with("ops.md:5-7  chunk 1 of 1 ("), "{out}");
    assert!(out.contains("\n  headings: Ops › Backups › Retention\n"), "{out}");
    assert!(out.contains("\n  language: English (en)\n"), "{out}");
    let (out, _) = cli.ok(&["show", "zh.md"]);
    assert!(
        out.contains("\n  language: Chinese (zh); its Chinese, Japanese or Korean letters in pairs\n"),
        "{out}"
    );
}

#[test]
fn show_prints_context_and_status_reports_the_index() {
    let cli = Cli::new();
    cli.ok(&["index"]);
    let (out, _) = cli.ok(&["show", "ops/backup.md:12"]);
    assert!(out.contains("context: Document: Backup policy > Backups > Retention"), "{out}");
    assert!(out.contains("| Snapshots are kept for thirty days."), "{out}");
    assert!(out.contains("language: English (en)"), "{out}");

    let (out, _) = cli.ok(&["status", "--json"]);
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["files"], 4);
    assert_eq!(s["chunks"], s["vectors"]);
    let model = if situate::providers::has_builtin_e5() { "e5" } else { "static" };
    assert_eq!(s["embedder"]["provider"], model);
    let (out, _) = cli.ok(&["status"]);
    assert!(out.contains("files:     4"), "{out}");
    // An English workspace: every chunk by English rules, and no line to say so.
    assert_eq!(s["languages"], serde_json::json!([{"code": "en", "name": "english", "chunks": s["chunks"]}]));
    assert!(!out.contains("languages:"), "{out}");

    // A note in German is analysed by German rules, and the status says how many chunks.
    cli.fixture.write(
        "de/sicherung.md",
        "# Sicherungen\n\nDie Sicherungen werden jede Nacht auf den zweiten Server kopiert und dort \
         dreißig Tage lang aufbewahrt, bevor sie gelöscht werden.\n",
    );
    cli.ok(&["index"]);
    let (out, _) = cli.ok(&["status", "--json"]);
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    let languages = s["languages"].as_array().unwrap();
    assert_eq!(languages[0]["code"], "en", "{languages:?}");
    assert_eq!(languages[1]["code"], "de", "{languages:?}");
    let counted: u64 = languages.iter().map(|l| l["chunks"].as_u64().unwrap()).sum();
    assert_eq!(Some(counted), s["chunks"].as_u64());
    let (out, _) = cli.ok(&["status"]);
    let line = out.lines().find(|l| l.starts_with("languages: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.starts_with("languages: English ") && line.contains(", German "), "{line}");
}

#[test]
fn problems_are_reported_on_stderr_and_stdout_stays_data() {
    let cli = Cli::new();
    cli.fixture.write("situate.toml", "[search]\nmode = \"psychic\"\n");
    cli.fixture.write("blob.md", b"\0binary");
    let (out, err) = cli.ok(&["search", "herons", "--json"]);
    serde_json::from_str::<serde_json::Value>(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(err.contains("search.mode"), "{err}");
    assert!(err.contains("skipped blob.md: binary"), "{err}");
}

#[test]
fn errors_are_clear_and_exit_non_zero() {
    let cli = Cli::new();
    let out = cli.run(&["index", "/definitely/not/here"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/definitely/not/here"), "{err}");

    let out = cli.run(&["show", "ops/backup.md"]);
    assert!(!out.status.success(), "no index yet");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("situate index"), "{err}");

    cli.ok(&["index"]);
    let out = cli.run(&["show", "missing.md:3"]);
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr).unwrap().contains("no file `missing.md` in the workspace"));
}

/// Writes `files` short notes, each with a word of its own (`marker{i}`).
fn write_numbered_notes(cli: &Cli, files: usize) {
    for i in 0..files {
        cli.fixture.write(
            &format!("notes/{:02}/n{i}.md", i % 50),
            format!("# Note {i}\n\n## Body\n\nThis note mentions the token marker{i} and some filler words about gardens.\n"),
        );
    }
}

/// Times one whole `situate index` of the fixture, then kills runs at a fifth, a half and
/// four fifths of that time (before, around and after the commits a long run makes,
/// whatever the machine), and checks after each that the next run leaves a whole index:
/// every file, a vector for every chunk, the last note found by its word.
fn kill_index_runs_and_check_recovery(cli: &Cli, files: usize) {
    let started = std::time::Instant::now();
    cli.ok(&["index"]);
    let whole = started.elapsed();
    std::fs::remove_dir_all(cli.fixture.index.path().join("situate")).unwrap();
    for share in [0.2, 0.5, 0.8] {
        let delay = whole.mul_f64(share);
        let mut child = Command::new(env!("CARGO_BIN_EXE_situate"))
            .arg("index")
            .current_dir(cli.fixture.root())
            .env("XDG_CACHE_HOME", cli.fixture.index.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();

        let (out, err) = cli.ok(&["index", "--json"]);
        let report: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        assert_eq!(report["files_seen"], files, "{out}");
        let (out, _) = cli.ok(&["status", "--json"]);
        let status: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(status["files"], files, "after a kill at {delay:?}: {out}");
        assert_eq!(status["chunks"], status["vectors"], "after a kill at {delay:?}: {out}");
        let last = format!("marker{}", files - 1);
        let (out, _) = cli.ok(&["search", &last, "--json", "-k", "1", "--mode", "bm25"]);
        assert!(out.contains(&format!("notes/{:02}/n{}.md", (files - 1) % 50, files - 1)), "{out}");
        // Start over for the next kill.
        std::fs::remove_dir_all(cli.fixture.index.path().join("situate")).unwrap();
    }
}

#[test]
fn an_index_killed_while_it_reads_files_recovers_on_the_next_run() {
    // The static model embeds as it reads, so the whole run is the file phase: enough files
    // for commits by count (every 2,000) as well as by time.
    let cli = Cli { fixture: Fixture::empty() };
    cli.fixture.write("situate.toml", "[embedding]\nprovider = \"static\"\n");
    write_numbered_notes(&cli, 3000);
    kill_index_runs_and_check_recovery(&cli, 3000);
}

#[test]
fn an_index_killed_while_e5_fills_its_vectors_recovers_on_the_next_run() {
    // With the default model the files are read in a moment and most of the run is e5's
    // fill, which commits every few seconds: the kills land in it.
    let cli = Cli { fixture: Fixture::empty() };
    write_numbered_notes(&cli, 300);
    kill_index_runs_and_check_recovery(&cli, 300);
}

#[test]
fn eval_compare_prints_one_row_per_variant_and_leaves_no_temporary_index() {
    let cli = Cli { fixture: Fixture::empty() };
    common::copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/eval"),
        cli.fixture.root(),
    );
    let tmp = cli.fixture.index.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let eval = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_situate"))
            .arg("eval")
            .arg("queries.jsonl")
            .args(args)
            .current_dir(cli.fixture.root())
            .env("XDG_CACHE_HOME", cli.fixture.index.path())
            .env("TMPDIR", &tmp)
            .env_remove("SITUATE_LOG")
            .output()
            .unwrap()
    };
    let text = |out: &Output| {
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };

    let out = eval(&["--compare", "mode=bm25", "--compare", "header=on,off", "--json"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let reports: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let rows: Vec<(String, f64)> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["label"].as_str().unwrap().to_string(), r["overall"]["recall"][0].as_f64().unwrap()))
        .collect();
    assert_eq!(rows, [("mode=bm25 header=on".to_string(), 0.75), ("mode=bm25 header=off".to_string(), 0.5)]);
    assert!(reports[1]["by_kind"]["context-dependent"].is_object(), "{stdout}");

    let out =
        eval(&["--variant", "mode=bm25 expand=window", "--variant", "mode=bm25 header=off", "--per-query"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(" 1  mode=bm25 expand=window "), "{stdout}");
    assert!(stdout.contains(" 2  mode=bm25 header=off "), "{stdout}");
    let breakdown = |out: &str| out.lines().any(|l| l.trim_start().starts_with("keyword"));
    assert!(!breakdown(&stdout), "no breakdown without --by-kind: {stdout}");
    assert!(stdout.contains("   1   2  id"), "{stdout}");
    assert!(stdout.contains("   1   2  q2 "), "{stdout}");
    assert!(stdout.contains("   1   -  q3 "), "{stdout}");

    let out = eval(&["--compare", "mode=bm25", "--by-kind"]);
    assert!(breakdown(&text(&out).0), "{}", text(&out).0);

    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "temporary indexes are removed");

    let out = eval(&["--compare", "chunk.max_token=200"]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("chunk.max_token"), "{}", text(&out).1);
    let out = eval(&["--mode", "bm25", "--compare", "mode=hybrid"]);
    assert!(!out.status.success());
}

#[test]
fn size_like_inputs_are_bounded_with_a_clear_message() {
    let cli = Cli::new();
    let out = cli.run(&["search", "retry", "-k", "1000000000"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("1000000000 is not in 1..=1000"), "{err}");

    // From the settings file: each is reported by its key, and the default is used.
    cli.fixture.write("situate.toml", "[search]\nlimit = 1000000000\ncandidates = 1000000000\n");
    let (out, err) = cli.ok(&["search", "backups", "--json"]);
    assert!(err.contains("`search.limit`: must be between 1 and 1000,"), "{err}");
    assert!(err.contains("`search.candidates`: must be between 1 and 10000,"), "{err}");
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert!(!hits.is_empty() && hits.len() <= 10, "{}", hits.len());
}

#[test]
fn logs_carry_no_colour_codes_off_a_terminal() {
    let cli = Cli::new();
    cli.fixture.write("blob.md", b"\0binary");
    for env in [vec![("SITUATE_LOG", "debug")], vec![("SITUATE_LOG", "debug"), ("NO_COLOR", "1")]] {
        let out = cli.run_with(&["search", "backups"], &env);
        assert!(out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("DEBUG"), "{err}");
        assert!(!err.contains('\x1b'), "colour codes on a pipe: {err:?}");
    }
}

#[test]
fn completions_and_man_pages_come_from_the_command_line_definition() {
    let cli = Cli::new();
    let (bash, _) = cli.ok(&["completions", "bash"]);
    assert!(bash.contains("_situate()") && bash.contains("--mode"), "{bash}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let (script, _) = cli.ok(&["completions", shell]);
        assert!(script.contains("search") && script.contains("completions"), "{shell}: {script}");
    }
    let (page, _) = cli.ok(&["man"]);
    assert!(page.starts_with(".ie") || page.contains(".TH situate 1"), "{page}");
    assert!(page.contains("EXIT STATUS") && page.contains("A usage error"), "{page}");
    let out = cli.fixture.index.path().join("man");
    let (written, _) = cli.ok(&["man", "--out", out.to_str().unwrap()]);
    assert_eq!(written.lines().count(), 10, "{written}");
    let search = std::fs::read_to_string(out.join("situate-search.1")).unwrap();
    assert!(search.contains(".TH situate-search 1") && search.contains("\\-\\-expand"), "{search}");
    // Every page the main page names is one of those written.
    for named in page.split("situate\\-").skip(1).filter_map(|rest| rest.split_once("(1)")) {
        let file = format!("situate-{}.1", named.0);
        assert!(out.join(&file).exists(), "situate(1) names {file}, which was not written");
    }
}

#[test]
fn exit_codes_are_the_documented_ones() {
    let cli = Cli::new();
    let code = |args: &[&str]| cli.run(args).status.code();
    assert_eq!(code(&["status"]), Some(1), "no index yet");
    assert_eq!(code(&["index", "--quick"]), Some(0));
    assert_eq!(code(&["status"]), Some(0));
    assert_eq!(
        code(&["search", "no such words anywhere", "--mode", "bm25"]),
        Some(0),
        "nothing found is no error"
    );
    assert_eq!(code(&["search"]), Some(2), "a missing argument is a usage error");
    assert_eq!(code(&["search", "x", "-k", "0"]), Some(2), "a value out of range is a usage error");
    assert_eq!(code(&["frobnicate"]), Some(2));
    assert_eq!(code(&["show", "no/such/file.md"]), Some(1));
    assert_eq!(code(&["search", "x", "--dir", "/no/such/folder"]), Some(1));
}

impl Cli {
    /// Exit code and stderr of a run expected to fail.
    fn fails(&self, args: &[&str]) -> (Option<i32>, String) {
        let out = self.run(args);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(!out.status.success(), "{args:?} succeeded\nstderr: {stderr}");
        (out.status.code(), stderr)
    }
}

#[test]
fn show_says_why_a_file_or_line_has_nothing_to_show() {
    let cli = Cli::new();
    cli.fixture.write("empty.md", "");
    cli.fixture.write("blob.md", b"a\0b");
    cli.ok(&["index", "--quick"]);
    let (_, err) = cli.fails(&["show", "ops/backup.md:999"]);
    assert!(
        err.contains("line 999 is past the last passage of `ops/backup.md`, which ends at line 18"),
        "{err}"
    );
    let (_, err) = cli.fails(&["show", "ops/backup.md:999", "--json"]);
    assert!(err.contains("past the last passage"), "{err}");
    let (_, err) = cli.fails(&["show", "ops/backup.md:0"]);
    assert!(err.contains("lines are numbered from 1"), "{err}");
    let (_, err) = cli.fails(&["show", "backup.md"]);
    assert!(err.contains("did you mean `ops/backup.md`?"), "{err}");
    let (_, err) = cli.fails(&["show", "blob.md"]);
    assert!(err.contains("`blob.md` was skipped") && err.contains("binary"), "{err}");
    let (out, err) = cli.ok(&["show", "empty.md", "--json"]);
    assert_eq!(out.trim(), "[]");
    assert!(err.contains("`empty.md` holds no text to index"), "{err}");
    let (out, _) = cli.ok(&["show", "./ops/backup.md:12"]);
    assert!(out.contains("Snapshots are kept for thirty days."), "{out}");
    std::fs::create_dir_all(cli.fixture.root().join("drafts")).unwrap();
    let (_, err) = cli.fails(&["show", "drafts"]);
    assert!(err.contains("`drafts` is a folder that holds no indexed file"), "{err}");
}

#[test]
fn search_paths_are_read_as_workspace_relative_and_checked() {
    let cli = Cli::new();
    cli.ok(&["index", "--quick"]);
    let search = ["search", "backup", "--mode", "bm25", "--no-update", "--json", "--path"];
    let root = cli.fixture.root().canonicalize().unwrap();
    let absolute = root.join("ops").display().to_string();
    for path in ["ops", "./ops", "ops/", absolute.as_str()] {
        let (out, _) = cli.ok(&[&search[..], &[path]].concat());
        let hits: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        assert!(!hits.is_empty(), "{path}: {out}");
        assert!(hits.iter().all(|h| h["path"].as_str().unwrap().starts_with("ops/")), "{path}: {out}");
    }
    let (code, err) = cli.fails(&[&search[..], &["nosuch"]].concat());
    assert_eq!(code, Some(1));
    assert!(err.contains("no indexed file lies under `nosuch`") && err.contains("`kitchen`, `ops`"), "{err}");
    let (code, err) = cli.fails(&[&search[..], &["/etc"]].concat());
    assert_eq!(code, Some(1));
    assert!(err.contains("`/etc` lies outside the workspace"), "{err}");
}

#[test]
fn a_reader_that_stops_reading_ends_the_command_quietly() {
    use std::process::Stdio;
    let cli = Cli::new();
    cli.ok(&["index", "--quick"]);
    let commands: [&[&str]; 6] = [
        &["search", "backup", "-k", "50"],
        &["search", "backup", "--json"],
        &["status"],
        &["show", "ops/backup.md"],
        &["man"],
        &["completions", "bash"],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(args)
            .current_dir(cli.fixture.root())
            .env("XDG_CACHE_HOME", cli.fixture.index.path())
            .env_remove("SITUATE_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes before the first line is written.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe") && !err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn settings_that_cannot_be_parsed_never_let_excluded_files_in() {
    let cli = Cli::new();
    cli.fixture.write("situate.toml", "exclude = [\"kitchen/**\"]\n");
    cli.ok(&["index", "--quick"]);
    cli.fixture.write("situate.toml", "exclude = [\"kitchen/**\"]\n[search]\nmode = bm25\n");
    for args in [&["index", "--quick"][..], &["search", "sourdough"]] {
        let (code, err) = cli.fails(args);
        assert_eq!(code, Some(1), "{args:?}");
        assert!(err.contains("situate.toml:3:8: not valid TOML"), "{args:?}: {err}");
        assert!(err.contains("nothing is indexed until the file is fixed"), "{args:?}: {err}");
    }
    // Reading the index as it is stays possible, and says what is wrong.
    let (out, err) = cli.ok(&["search", "sourdough", "--no-update", "--mode", "bm25", "--json"]);
    assert!(err.contains("situate.toml:3:8") && err.contains("none of its settings are used"), "{err}");
    assert!(!out.contains("kitchen/"), "{out}");
    let (out, _) = cli.ok(&["status", "--json"]);
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["files"], 3, "{s}");
    assert!(s["config_problems"][0].as_str().unwrap().contains("situate.toml:3:8"), "{s}");
}

#[test]
fn one_bad_exclude_pattern_leaves_the_others_in_force() {
    let cli = Cli::new();
    cli.fixture.write("situate.toml", "exclude = [\"kitchen/**\", \"drafts/{a,b\"]\n");
    let (out, err) = cli.ok(&["index", "--quick", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["files_seen"], 3, "{report}");
    assert!(err.contains("bad glob `drafts/{a,b`") && err.contains("the rest of the value applies"), "{err}");
}

#[test]
fn a_settings_file_given_on_the_command_line_must_be_readable() {
    let cli = Cli::new();
    cli.ok(&["index", "--quick"]);
    for args in [&["status"][..], &["search", "backup"], &["lsp"], &["mcp"]] {
        let args = [&["--config", "/no/such/settings.toml"], args].concat();
        let (code, err) = cli.fails(&args);
        assert_eq!(code, Some(1), "{args:?}");
        assert!(err.contains("/no/such/settings.toml: cannot read this settings file"), "{args:?}: {err}");
        assert!(!err.contains("situate.toml"), "{args:?}: {err}");
    }
}

#[test]
fn eval_warns_of_a_gold_path_that_names_no_indexed_file() {
    let cli = Cli::new();
    cli.fixture.write(
        "queries.jsonl",
        concat!(
            r#"{"id": "kept", "query": "how long are backups kept", "gold": [{"path": "ops/backup.md", "start_line": 10, "end_line": 13}]}"#,
            "\n",
            r#"{"id": "typo", "query": "sourdough", "gold": [{"path": "kitchen/bred.md", "start_line": 1, "end_line": 5}]}"#,
            "\n",
            r#"{"id": "bare", "query": "deploy", "gold": [{"path": "deploy.md", "start_line": 1, "end_line": 5}]}"#,
            "\n",
        ),
    );
    let (out, err) = cli.ok(&["eval", "queries.jsonl", "--mode", "bm25", "--json"]);
    assert!(err.contains("query `typo`: gold path `kitchen/bred.md` names no indexed file"), "{err}");
    assert!(err.contains("query `bare`") && err.contains("did you mean `ops/deploy.md`?"), "{err}");
    assert!(!err.contains("query `kept`"), "{err}");
    let reports: serde_json::Value = serde_json::from_str(&out).unwrap();
    let queries = reports[0]["queries"].as_array().unwrap();
    assert_eq!(queries[1]["unknown_gold"], serde_json::json!(["kitchen/bred.md"]));
    assert!(queries[0].get("unknown_gold").is_none(), "{}", queries[0]);
}

#[test]
fn a_search_embeds_a_few_waiting_chunks_itself_and_leaves_many_to_index() {
    if !situate::providers::has_builtin_e5() {
        // The static model embeds as it reads: nothing ever waits.
        return;
    }
    let cli = Cli::new();
    let pending = |cli: &Cli| {
        let (out, _) = cli.ok(&["status", "--json"]);
        let s: serde_json::Value = serde_json::from_str(&out).unwrap();
        (s["vectors_pending"].as_u64().unwrap(), s["chunks"].as_u64().unwrap())
    };
    // A small folder's first search: its 8 chunks are embedded by e5 before it searches,
    // so the answer is ranked by e5's vectors and nothing is said to wait.
    let (out, err) = cli.ok(&["search", "how long are backups kept", "-k", "1", "--explain"]);
    assert!(!err.contains("computes them"), "{err}");
    assert!(out.contains("ops/backup.md:10-13"), "{out}");
    assert_eq!(pending(&cli), (0, 8));
    // A note saved since: its chunk too.
    cli.fixture.write(
        "ops/restore.md",
        "# Restore drill\n\nEvery quarter a snapshot is restored to a spare host.\n",
    );
    let (_, err) = cli.ok(&["search", "restore drill"]);
    assert!(!err.contains("computes them"), "{err}");
    assert_eq!(pending(&cli), (0, 9));
    // Many waiting chunks are more than a moment's work: they are left to `situate index`.
    write_numbered_notes(&cli, 200);
    let (_, err) = cli.ok(&["search", "gardens"]);
    assert!(err.contains("`situate index` computes them"), "{err}");
    assert_eq!(pending(&cli), (200, 209));
}

#[test]
fn a_note_about_the_index_is_said_once() {
    let cli = Cli::new();
    cli.ok(&["index"]);
    // Another chunk budget: the files are chunked again, and the command says so, once.
    cli.fixture.write("situate.toml", "[chunk]\nmax_tokens = 120\n");
    let (_, stderr) = cli.ok(&["search", "backups", "-k", "1"]);
    let note = "chunking or context settings changed: files are re-chunked";
    assert_eq!(stderr.matches(note).count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
