//! A notes vault as Obsidian, Logseq or Foam keep one, through the real `situate` binary:
//! how its notes are titled, what of a drawing is indexed, how a note in an older encoding
//! reads, and previews that read as the rendered note does (no `[[link|alias]]` syntax,
//! callout markers, highlights, comment markers, block ids or layout tags).

mod common;

use std::process::Command;

use common::Fixture;

fn vault() -> Fixture {
    Fixture::copy_of("vault")
}

/// Runs the binary in the vault and returns its stdout, checking that it succeeded.
fn ok(vault: &Fixture, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_situate"))
        .args(args)
        .current_dir(vault.root())
        .env("XDG_CACHE_HOME", vault.index.path())
        .env_remove("SITUATE_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{args:?} failed\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The first hit's preview lines of a search by words, as printed.
fn first_preview(vault: &Fixture, query: &str) -> String {
    let out = ok(vault, &["search", query, "-k", "1", "--mode", "bm25"]);
    out.lines()
        .filter(|l| l.starts_with("   ") && l.trim_start().starts_with(char::is_numeric))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_note_without_a_title_is_named_as_its_file_without_the_extension() {
    let vault = vault();
    ok(&vault, &["index", "--quick"]);
    let out = ok(&vault, &["show", "Daily/2026-11-27.md"]);
    assert!(out.contains("context: Document: 2026-11-27 > Tasks"), "{out}");
    assert!(!out.contains("2026-11-27.md >"), "{out}");
}

#[test]
fn previews_read_as_the_rendered_note() {
    let vault = vault();
    ok(&vault, &["index", "--quick"]);
    let cases = [
        ("dentist", "9: Met Anni for lunch; she recommended a dentist called Dr. Okafor."),
        ("drive bays", "13: The case is a Fractal Node 304 with six drive bays for the disks."),
        ("Jonsbo offsite", "15: Nightly snapshots are sent offsite, see pruning. compare with the Jonsbo N2"),
        ("warning", "10: > Warning"),
        ("tip memory", "7: > Memory for the pool"),
        ("读取文件内容", "11: 示例 12-4：读取第二个参数所指定的文件内容"),
        ("pipeline reads", "13: Figure 2: how the pipeline reads a file"),
    ];
    for (query, line) in cases {
        let preview = first_preview(&vault, query);
        assert!(preview.lines().any(|l| l.trim() == line), "{query}: {preview}");
        for markup in ["[[", "]]", "==", "%%", "[!", "<span", "<fig", "{{#", "^lunch"] {
            assert!(!preview.contains(markup), "{query}: {preview}");
        }
    }
}

#[test]
fn a_drawing_is_searched_by_the_words_in_it_not_by_its_data() {
    let vault = vault();
    ok(&vault, &["index", "--quick"]);
    let out = ok(&vault, &["show", "Drawings/Garden layout.excalidraw.md"]);
    assert!(out.contains("chunk 1 of 1"), "{out}");
    assert!(out.contains("context: Document: Garden layout > Excalidraw Data > Text Elements"), "{out}");
    assert!(!out.contains("compressed-json") && !out.contains("EXCALIDRAW VIEW"), "{out}");
    let out = ok(&vault, &["search", "compost heap", "-k", "1", "--mode", "bm25"]);
    assert!(out.starts_with("1. Drawings/Garden layout.excalidraw.md"), "{out}");
    assert!(out.contains(": Compost heap\n"), "{out}");
    let out = ok(&vault, &["search", "decompress the command palette", "--mode", "bm25"]);
    assert!(!out.contains("Garden layout"), "{out}");
}

#[test]
fn a_note_saved_as_latin_1_reads_with_its_letters() {
    let vault = vault();
    vault.write(
        "Inbox/Reisekosten.md",
        b"# Reisekosten\n\nGeb\xfchren f\xfcr die \xdcbernachtung in M\xfcnchen.\n",
    );
    let out = ok(&vault, &["index", "--quick"]);
    assert!(!out.contains("not valid UTF-8"), "{out}");
    let preview = first_preview(&vault, "Gebühren München");
    assert_eq!(preview.trim(), "3: Gebühren für die Übernachtung in München.");
}

#[test]
fn a_note_of_only_a_title_is_found_by_it() {
    let vault = vault();
    ok(&vault, &["index", "--quick"]);
    let out = ok(&vault, &["search", "ferry timetable", "-k", "1", "--mode", "bm25"]);
    assert!(out.starts_with("1. Inbox/Ferry.md:1-1  Ferry timetable\n"), "{out}");
    let out = ok(&vault, &["show", "Inbox/Ferry.md"]);
    assert!(out.contains("chunk 1 of 1") && out.contains("| # Ferry timetable"), "{out}");
}

#[test]
fn a_note_of_headings_alone_comes_by_its_words_only() {
    let vault = vault();
    let untouched = "# 2026-12-01\n\n## Tasks\n- [ ] \n\n## Journal\n\n## Meetings\n- \n";
    vault.write("Daily/2026-12-01.md", untouched);
    ok(&vault, &["index", "--quick"]);
    // A question nothing answers: the vectors of the template, the untouched daily note and
    // the note of one title, which say nothing but their headings, do not bring them in.
    let hits = |args: &[&str]| {
        let out = ok(&vault, &[&["search", "-k", "50"], args].concat());
        out.lines().filter(|l| !l.starts_with(' ')).map(|l| l.to_string()).collect::<Vec<_>>().join("\n")
    };
    let headings_alone = ["templates/Daily.md", "Daily/2026-12-01.md", "Inbox/Ferry.md"];
    for mode in ["hybrid", "vector"] {
        let out = hits(&["birthday present ideas for mum", "--mode", mode]);
        assert!(!out.is_empty(), "{out}");
        for note in headings_alone {
            assert!(!out.contains(note), "{mode}: {out}");
        }
    }
    // Their words bring them, and so does a search narrowed to them.
    assert!(hits(&["ferry timetable"]).starts_with("1. Inbox/Ferry.md:1-1"));
    assert!(hits(&["2026-12-01"]).starts_with("1. Daily/2026-12-01.md:1-"));
    let out = hits(&["birthday present ideas for mum", "--path", "Daily"]);
    assert!(out.contains("Daily/2026-12-01.md"), "{out}");
}

#[test]
fn a_template_is_titled_by_its_name_not_by_its_placeholder() {
    let vault = vault();
    ok(&vault, &["index", "--quick"]);
    let out = ok(&vault, &["show", "templates/Daily.md"]);
    // Its one section holds no word (`- [ ]`): the template is a note of headings alone.
    assert!(out.contains("templates/Daily.md:1-4  chunk 1 of 1"), "{out}");
    assert!(out.contains("context: Document: Daily > {{date:YYYY-MM-DD}}\n"), "{out}");
}

#[test]
fn a_section_without_a_word_is_no_chunk_of_its_own() {
    let vault = vault();
    vault.write(
        "Daily/2026-11-28.md",
        "# 2026-11-28\n\n## Tasks\n- [ ] \n\n## Journal\nMended the fence by the shed.\n\n## Meetings\n- \n\n---\n",
    );
    ok(&vault, &["index", "--quick"]);
    let out = ok(&vault, &["show", "Daily/2026-11-28.md"]);
    assert!(out.contains("Daily/2026-11-28.md:6-7  chunk 1 of 1"), "{out}");
    assert!(out.contains("context: Document: 2026-11-28 > Journal\n"), "{out}");
    // A search by the empty section's heading finds the notes that hold tasks.
    let out = ok(&vault, &["search", "tasks", "--mode", "bm25"]);
    assert!(!out.contains("2026-11-28.md"), "{out}");
    assert!(out.contains("Daily/2026-11-27.md:"), "{out}");
}

#[test]
fn a_logseq_page_is_found_once_not_again_in_its_backup_copies() {
    let vault = vault();
    let page = "- Prune the apple tree in late winter\n";
    vault.write("pages/Orchard.md", page);
    vault.write("logseq/bak/pages/Orchard/2026-11-27T10_00_00.000Z.Desktop.md", page);
    vault.write("logseq/config.edn", "{:preferred-format :markdown}\n");
    let out = ok(&vault, &["search", "prune apple tree", "--mode", "bm25"]);
    assert!(out.starts_with("1. pages/Orchard.md"), "{out}");
    assert!(!out.contains("logseq/bak"), "{out}");
}

#[test]
fn a_term_met_only_in_a_link_target_is_shown_where_it_is() {
    // The reader's form, "Met Anni for lunch", would show no term of the query.
    let vault = vault();
    let preview = first_preview(&vault, "Anna Schmidt");
    assert_eq!(
        preview.trim(),
        "9: Met [[People/Anna Schmidt|Anni]] for lunch; she recommended a dentist called Dr. Okafor. ^lunch1"
    );
}

#[test]
fn a_note_of_front_matter_alone_is_found_by_its_aliases() {
    let vault = vault();
    vault.write("People/Anna Schmidt.md", "---\naliases: [Anni, A. Schmidt]\ntags: [person]\n---\n");
    vault.write("People/Empty.md", "---\n---\n");
    let out = ok(&vault, &["search", "Anni", "--mode", "bm25"]);
    assert!(out.starts_with("1. People/Anna Schmidt.md:1-4\n"), "{out}");
    let out = ok(&vault, &["search", "Schmidt", "--mode", "bm25", "--where", "tags=person"]);
    assert!(out.starts_with("1. People/Anna Schmidt.md:1-4\n") && !out.contains("2. "), "{out}");
    let out = ok(&vault, &["show", "People/Anna Schmidt.md"]);
    assert!(out.contains("chunk 1 of 1") && out.contains("Aliases: Anni, A. Schmidt"), "{out}");
    let out = ok(&vault, &["show", "People/Empty.md"]);
    assert!(!out.contains("chunk 1"), "{out}");
}

#[test]
fn a_tag_written_in_a_note_filters_like_one_in_its_front_matter() {
    let vault = vault();
    vault.write(
        "Daily/2026-11-28.md",
        "---\ntags: [daily]\n---\n## Journal\nSlept badly. #journal/mood/good was yesterday.\n\n\
         ## Work\nReviewed the plan for #project/alpha and issue #123.\n",
    );
    vault.write("Inbox/Scratch.md", "Reviewed the plan: `#project/alpha` is code, #1234 an issue.\n");
    vault.write("pages/Reading.md", "tags:: [[Deep Work]], books\n- Reviewed the plan of chapter one\n");
    let hits = |filter: &str| {
        let out = ok(&vault, &["search", "reviewed the plan", "--mode", "bm25", "--where", filter]);
        let mut paths: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with(char::is_numeric))
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect();
        paths.sort();
        paths
    };
    // The note's tags, wherever they are written, hold for each of its chunks.
    assert_eq!(hits("tags=project/alpha"), ["1. Daily/2026-11-28.md"]);
    assert_eq!(hits("tags=journal"), ["1. Daily/2026-11-28.md"]);
    assert_eq!(hits("tags=#Journal/Mood/Good"), ["1. Daily/2026-11-28.md"]);
    assert_eq!(hits("tags=daily"), ["1. Daily/2026-11-28.md"]);
    assert!(hits("tags=123").is_empty() && hits("tags=1234").is_empty());
    assert_eq!(hits("tags=deep work"), ["1. pages/Reading.md"]);
    // The header carries the front matter's tags alone: the text already holds the others.
    let out = ok(&vault, &["show", "Daily/2026-11-28.md"]);
    assert!(out.contains("Tags: daily\n") && !out.contains("Tags: daily,"), "{out}");
}

#[test]
fn a_comment_or_a_query_is_shown_only_when_it_alone_matches() {
    let vault = vault();
    vault.write(
        "Topics/Tax return 2025.md",
        "# Tax return 2025\n\nThe deadline for the declaration is the end of July.\n\n\
         %%\nTODO: ask whether the deadline moves\n%%\n\n```dataview\nTABLE deadline FROM #finance\n```\n",
    );
    ok(&vault, &["index", "--quick"]);
    // The comment and the query hold more of the query's words; the note's text is shown.
    let preview = first_preview(&vault, "deadline moves finance");
    assert_eq!(preview.trim(), "3: The deadline for the declaration is the end of July.");
    let preview = first_preview(&vault, "whether moves");
    assert_eq!(preview.trim(), "6: TODO: ask whether the deadline moves");
}
