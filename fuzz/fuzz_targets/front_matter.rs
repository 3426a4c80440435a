//! Fuzzes front matter detection (`chunk::front_matter::detect`) and checks it against a
//! line-level reading of the rule written independently here: front matter opens with a
//! `---` or `+++` line (after an optional byte order mark) directly followed by a non-blank
//! line, and closes with a matching fence line; the body starts just after it, on a line
//! start; a title is non-empty, one line, trimmed, with its blanks collapsed; fields and
//! their values are bounded, and each value is one non-empty line.

#![no_main]

use libfuzzer_sys::fuzz_target;
use situate::chunk::front_matter::{Detection, detect};

/// Where the body starts and whether a fence was opened without closing, by the rule above.
fn expected(text: &str) -> (Option<usize>, bool) {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let fence = |line: &str| line.trim_end_matches(['\n', '\r', ' ', '\t']).to_string();
    let mut lines = text[bom..].split_inclusive('\n');
    let Some(first) = lines.next() else {
        return (None, false);
    };
    let closers: &[&str] = match fence(first).as_str() {
        "---" => &["---", "..."],
        "+++" => &["+++"],
        _ => return (None, false),
    };
    let mut offset = bom + first.len();
    if text[offset..].lines().next().unwrap_or("").trim().is_empty() {
        return (None, false);
    }
    for line in lines {
        offset += line.len();
        if closers.contains(&fence(line).as_str()) {
            return (Some(offset), false);
        }
    }
    (None, true)
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    let detection = detect(text);
    match (&detection, expected(text)) {
        (Detection::Found(front_matter), (Some(body_start), false)) => {
            assert_eq!(front_matter.body_start, body_start);
            assert!(text.is_char_boundary(body_start));
            assert!(body_start == text.len() || text[..body_start].ends_with('\n'));
            if let Some(title) = &front_matter.title {
                assert!(!title.is_empty(), "an empty title is no title");
                assert_eq!(title.trim(), title, "the title is trimmed");
                assert!(!title.contains(['\n', '\r', '\t']), "the title is one line: {title:?}");
                assert!(!title.contains("  "), "blanks in the title are collapsed: {title:?}");
                assert!(title.len() <= body_start, "the title comes from the front matter");
            }
            assert!(front_matter.fields.len() <= 64, "fields are bounded");
            for (key, values) in &front_matter.fields {
                assert!(!key.is_empty() && !key.contains(['\n', '\r']), "a key is one line: {key:?}");
                assert!(values.len() <= 64, "list items are bounded");
                for value in values {
                    assert!(
                        !value.is_empty() && value.chars().count() <= 256,
                        "values are bounded: {value:?}"
                    );
                    assert!(!value.contains(['\n', '\r', '\t']), "a value is one line: {value:?}");
                }
            }
        }
        (Detection::Absent, (None, false)) | (Detection::Unclosed, (None, true)) => {}
        (detection, expected) => panic!("detected {detection:?}, expected {expected:?}"),
    }
    // Detection is a pure function of the text.
    assert_eq!(detect(text), detection);
});
