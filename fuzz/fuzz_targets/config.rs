//! Fuzzes the settings readers: a `situate.toml` document (`Config::from_toml`), an editor's
//! JSON settings (`Config::from_json`) and the two laid one over the other
//! (`Config::from_layers`, what the language server does with `initializationOptions` and
//! `didChangeConfiguration`). None may panic; every value they keep must pass validation;
//! TOML and JSON read the same document the same way; and the validated values, written
//! back out as TOML or JSON, read back to the same settings with no problem.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use situate::config::{Config, LoadedConfig};
use situate::search::Fusion;

/// The invariants that validation promises of any configuration it returns.
fn check_valid(loaded: &LoadedConfig) {
    let c = &loaded.config;
    for problem in &loaded.problems {
        // A key may be empty: `"" = 1` is an unknown key like any other.
        assert!(!problem.message.is_empty(), "{problem:?}");
    }
    assert!(!c.walk.extensions.is_empty());
    assert!(c.walk.max_file_bytes >= 1);
    assert!((16..=8192).contains(&c.chunk.max_tokens));
    assert!(c.chunk.overlap_tokens < c.chunk.max_tokens / 2);
    let s = &c.search;
    for x in [
        c.chunk.semantic_threshold,
        s.rrf_k,
        s.bm25_weight,
        s.vector_weight,
        s.bm25_coverage,
        s.title_boost,
        s.headings_boost,
        s.path_boost,
        s.snippet_boost,
    ] {
        assert!(x.is_finite() && x >= 0.0, "{x}");
    }
    assert!(s.limit >= 1 && s.candidates >= 1 && s.window <= 100);
    assert!(s.merge_share > 0.0 && s.merge_share <= 1.0);
}

/// The keys that have problems, in order.
fn keys(loaded: &LoadedConfig) -> Vec<&str> {
    loaded.problems.iter().map(|p| p.key.as_str()).collect()
}

/// The validated values of the file-level, `[chunk]` and `[search]` keys, as a document.
fn written(config: &Config) -> Value {
    let (c, s, w) = (&config.chunk, &config.search, &config.walk);
    let mut doc = json!({
        "extensions": w.extensions,
        "include": w.include,
        "exclude": w.exclude,
        "max_file_bytes": w.max_file_bytes,
        "chunk": {
            "strategy": c.strategy,
            "max_tokens": c.max_tokens,
            "overlap_tokens": c.overlap_tokens,
            "semantic_threshold": c.semantic_threshold,
        },
        "context": { "header_template": config.context.header_template },
        "search": {
            "mode": s.mode,
            "limit": s.limit,
            "candidates": s.candidates,
            "fusion": match s.fusion { Fusion::Score => "score", Fusion::Rrf => "rrf" },
            "rrf_k": s.rrf_k,
            "bm25_weight": s.bm25_weight,
            "vector_weight": s.vector_weight,
            "bm25_coverage": s.bm25_coverage,
            "title_boost": s.title_boost,
            "headings_boost": s.headings_boost,
            "path_boost": s.path_boost,
            "snippet_boost": s.snippet_boost,
            "expand": s.expand,
            "window": s.window,
            "merge_share": s.merge_share,
        },
    });
    if let Some(dir) = config.index_dir.as_ref().and_then(|d| d.to_str()) {
        doc["index_dir"] = json!(dir);
    }
    doc
}

/// The part of a configuration that [`written`] writes out.
fn written_part(config: &Config) -> Config {
    Config {
        index_dir: config.index_dir.clone().filter(|d| d.to_str().is_some()),
        walk: config.walk.clone(),
        chunk: config.chunk.clone(),
        context: config.context.clone(),
        search: config.search.clone(),
        ..Config::default()
    }
}

/// Writing the validated values out and reading them back changes nothing.
fn check_round_trip(config: &Config) {
    let expected = written_part(config);
    let doc = written(config);
    let from_json = Config::from_json(doc.clone());
    assert!(from_json.problems.is_empty(), "{:?} from {doc}", from_json.problems);
    assert_eq!(from_json.config, expected, "JSON round trip of {doc}");
    if config.walk.max_file_bytes > i64::MAX as u64 {
        // TOML integers are 64-bit signed: such a size can be set from JSON only.
        return;
    }
    let text = toml::to_string(&doc).expect("a JSON object of tables writes as TOML");
    let from_toml = Config::from_toml(&text);
    assert!(from_toml.problems.is_empty(), "{:?} from {text}", from_toml.problems);
    assert_eq!(from_toml.config, expected, "TOML round trip of {text}");
}

fuzz_target!(|data: &[u8]| {
    // The settings file, then a NUL, then the editor's settings.
    let (file, editor) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let file = String::from_utf8_lossy(file);

    let from_toml = Config::from_toml(&file);
    check_valid(&from_toml);
    check_round_trip(&from_toml.config);
    if let Ok(value) = toml::from_str::<Value>(&file) {
        // The same document read as JSON is read the same way.
        let from_json = Config::from_json(value);
        assert_eq!(from_json.config, from_toml.config);
        assert_eq!(keys(&from_json), keys(&from_toml), "the same keys have problems");
        // Laying empty editor settings over a file changes nothing.
        let layered = Config::from_layers(Some(Ok(&file)), &json!({}));
        assert_eq!(layered.config, from_toml.config);
        assert_eq!(keys(&layered), keys(&from_toml));
    }

    let Some(editor) = editor.and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok()) else {
        return;
    };
    let from_json = Config::from_json(editor.clone());
    check_valid(&from_json);
    check_round_trip(&from_json.config);
    let layered = Config::from_layers(Some(Ok(&file)), &editor);
    check_valid(&layered);
    check_round_trip(&layered.config);
    let alone = Config::from_layers(None, &editor);
    check_valid(&alone);
    let unreadable = Config::from_layers(Some(Err("cannot read it")), &editor);
    check_valid(&unreadable);
    assert!(unreadable.problems.iter().any(|p| p.message == "cannot read it"));
});
