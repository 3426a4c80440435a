//! Human-readable output of the CLI.

use std::io::{Result, Write};

use crate::engine::{ChunkRecord, Engine, ReconcileReport, SnippetRun, Status};
use crate::eval::{EvalReport, Metrics};
use crate::search::Hit;
use crate::snippets::estimate::grouped;
use crate::snippets::generator::RunEnd;
use crate::team::Link;

pub fn index_summary(out: &mut impl Write, engine: &Engine, r: &ReconcileReport) -> Result<()> {
    let status = engine.status();
    writeln!(
        out,
        "indexed {} in {:.2}s: {} files seen, {} new or changed, {} removed, {} unchanged",
        engine.root().display(),
        r.seconds,
        r.files_seen,
        r.files_indexed,
        r.files_removed,
        r.files_unchanged + r.files_touched,
    )?;
    writeln!(
        out,
        "{} chunks written ({} vectors embedded, {} reused); the index holds {} files, {} chunks",
        r.chunks_written, r.vectors_embedded, r.vectors_reused, status.files, status.chunks
    )?;
    if r.vectors_refilled > 0 {
        writeln!(out, "{} vectors re-embedded from stored texts", r.vectors_refilled)?;
    }
    if let Some(team) = &status.team {
        // Why the cache gave nothing, or took nothing, belongs beside its counts: the
        // warning that said so scrolled by with the progress.
        let why = team.live.as_ref().and_then(|live| match (&live.state, &live.read_only) {
            (Link::Connected | Link::NotContactedYet, None) => None,
            (Link::Connected | Link::NotContactedYet, Some(reason)) => {
                Some(format!(" (reading only: {reason})"))
            }
            (state, _) => Some(format!(" ({state})")),
        });
        writeln!(
            out,
            "team cache {}: {} vectors taken from it, {} computed here{}",
            team.target,
            r.vectors_from_team,
            r.vectors_embedded,
            why.unwrap_or_default()
        )?;
    }
    if status.vectors_pending > 0 {
        writeln!(out, "{}", pending_vectors_line(&status))?;
    }
    writeln!(out, "index: {}", status.index_dir)?;
    for path in &r.lossy {
        writeln!(out, "warning: {path} is not valid UTF-8; decoded with replacement characters")?;
    }
    const SHOWN_WARNINGS: usize = 20;
    for warning in r.warnings.iter().take(SHOWN_WARNINGS) {
        writeln!(out, "warning: {warning}")?;
    }
    if r.warnings.len() > SHOWN_WARNINGS {
        writeln!(out, "… and {} more warnings (`--json` lists them all)", r.warnings.len() - SHOWN_WARNINGS)?;
    }
    if !r.skipped.is_empty() {
        writeln!(out, "skipped {} files:", r.skipped.len())?;
        for s in &r.skipped {
            writeln!(out, "  {}: {}", s.path, s.reason)?;
        }
    }
    Ok(())
}

/// "strong vectors: 1,240 of 5,285, about 9 min left; the quick model stands in for the rest".
pub fn pending_vectors_line(s: &Status) -> String {
    let done = s.chunks.saturating_sub(s.vectors_pending);
    let left = match s.vectors_eta_secs {
        Some(secs) => format!(", about {} left", duration(secs)),
        None => String::new(),
    };
    format!(
        "{} vectors: {} of {}{left}; the built-in static model stands in for the rest",
        s.embedder.provider,
        grouped(done as u64),
        grouped(s.chunks as u64)
    )
}

/// Seconds as a person reads them: "40 s", "9 min", "2 h 5 min".
fn duration(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs.div_ceil(60)),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600) / 60),
    }
}

/// The outcome of `situate index --snippets`.
pub fn snippet_run(out: &mut impl Write, run: &SnippetRun) -> Result<()> {
    writeln!(out, "snippets: {} chunks indexed with theirs; {}", run.indexed, run.totals)?;
    match &run.end {
        RunEnd::Finished if run.waiting == 0 => {}
        RunEnd::Finished => writeln!(out, "snippets: {} chunks still wait for one", run.waiting)?,
        RunEnd::BudgetReached => writeln!(
            out,
            "snippets: the budget (snippets.max_calls / snippets.max_run_tokens) is spent; \
             {} chunks wait for the next run",
            run.waiting
        )?,
        RunEnd::Failing { error } => writeln!(
            out,
            "snippets: stopped on the model's errors: {error}; {} chunks keep their header \
             context and wait for the next run",
            run.waiting
        )?,
        RunEnd::Interrupted => {
            writeln!(out, "snippets: interrupted; {} chunks wait for the next run", run.waiting)?
        }
    }
    Ok(())
}

/// The hits, each with its place, heading path and preview lines. `bold` marks the matched
/// terms with the terminal's bold; without it they show as plain text.
pub fn hits(out: &mut impl Write, hits: &[Hit], explain: bool, bold: bool) -> Result<()> {
    if hits.is_empty() {
        writeln!(out, "no results")?;
    }
    for (i, h) in hits.iter().enumerate() {
        let c = &h.chunk;
        let place = format!("{}. {}:{}-{}", i + 1, c.path, c.start_line, c.end_line);
        match breadcrumb(c) {
            crumb if crumb.is_empty() => writeln!(out, "{place}")?,
            crumb => writeln!(out, "{place}  {crumb}")?,
        }
        // A hit that its expansion left as it was (a section too little of which matched
        // to be merged) has nothing more to say.
        if let Some(e) = h.expanded.as_ref().filter(|e| e.last_ordinal > e.first_ordinal) {
            let chunks = e.last_ordinal - e.first_ordinal + 1;
            let hits = e.hit_ordinals.len();
            writeln!(
                out,
                "   expanded to lines {}-{} ({chunks} chunk{}, {hits} hit{})",
                e.start_line,
                e.end_line,
                if chunks == 1 { "" } else { "s" },
                if hits == 1 { "" } else { "s" }
            )?;
        }
        if explain {
            let arm = |rank: Option<u32>, score: Option<f32>| match (rank, score) {
                (Some(r), Some(s)) => format!("#{r} ({s:.3})"),
                _ => "-".to_string(),
            };
            writeln!(
                out,
                "   score {:.4}  bm25 {}  vector {}",
                h.score,
                arm(h.bm25_rank, h.bm25_score),
                arm(h.vector_rank, h.vector_similarity)
            )?;
        }
        // The front matter fields the header carries ("Tags: backup, ops").
        for line in c.context.lines().skip(1) {
            writeln!(out, "   {line}")?;
        }
        for line in &h.preview {
            let text = if bold { line.marked("\x1b[1m", "\x1b[0m") } else { line.text.clone() };
            writeln!(out, "   {}: {text}", line.line)?;
        }
    }
    Ok(())
}

/// Chunks of one file as `situate show` prints them; the file has `in_file` chunks in all,
/// counted from 1 as the language server's hover counts them.
pub fn chunks(out: &mut impl Write, chunks: &[ChunkRecord], in_file: usize) -> Result<()> {
    for c in chunks {
        writeln!(
            out,
            "{}:{}-{}  chunk {} of {} ({} tokens)",
            c.path,
            c.start_line,
            c.end_line,
            c.ordinal + 1,
            in_file.max(c.ordinal as usize + 1),
            c.token_count
        )?;
        writeln!(out, "  context: {}", c.context.replace('\n', "\n           "))?;
        match &c.snippet {
            Some(s) if !s.text.is_empty() => {
                writeln!(out, "  snippet: {} ({}, {})", s.text, s.model, ago(s.created_at))?
            }
            Some(s) => writeln!(out, "  snippet: none ({} gave no usable reply)", s.model)?,
            None => {}
        }
        writeln!(
            out,
            "  headings: {}",
            if c.heading_path.is_empty() { "-".into() } else { c.heading_path.join(" › ") }
        )?;
        // Whose stemmer and stop words turned its words into search terms; Chinese,
        // Japanese and Korean letters are cut into pairs whatever the language's rules.
        let language = c.language();
        let pairs = if crate::analysis::has_cjk(&c.text) {
            "; its Chinese, Japanese or Korean letters in pairs"
        } else {
            ""
        };
        writeln!(out, "  language: {} ({}){pairs}", capitalised(language.name()), language.code())?;
        for line in c.text.lines() {
            writeln!(out, "  | {line}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

pub fn status(out: &mut impl Write, s: &Status) -> Result<()> {
    writeln!(out, "workspace: {}", s.workspace)?;
    writeln!(
        out,
        "index:     {}{}",
        s.index_dir,
        if s.other_writer { " (another process is writing it)" } else { "" }
    )?;
    writeln!(out, "files:     {}", s.files)?;
    writeln!(out, "chunks:    {} ({} with vectors)", s.chunks, s.vectors)?;
    if s.vectors_pending > 0 {
        writeln!(out, "           {}", pending_vectors_line(s))?;
    }
    writeln!(
        out,
        "embedder:  {} {} ({} dimensions)",
        s.embedder.provider, s.embedder.model, s.embedder.dimensions
    )?;
    // Worth a line once a language other than English has chunks.
    if s.languages.iter().any(|l| l.code != "en") {
        let shares: Vec<String> =
            s.languages.iter().map(|l| format!("{} {}", capitalised(l.name), l.chunks)).collect();
        writeln!(out, "languages: {} (chunks by the rules of each)", shares.join(", "))?;
    }
    writeln!(out, "size:      {:.1} MiB", s.disk_bytes as f64 / (1024.0 * 1024.0))?;
    writeln!(
        out,
        "committed: {}",
        if s.last_commit == 0 { "never".to_string() } else { ago(s.last_commit) }
    )?;
    if let Some(sn) = &s.snippets {
        writeln!(
            out,
            "snippets:  {} ({} mode): {} chunks done, {} waiting",
            sn.model, sn.mode, sn.done, sn.pending
        )?;
        if let Some(e) = &sn.estimate {
            writeln!(out, "           to write the rest: {e}")?;
        }
    }
    if let Some(t) = &s.team {
        let state = t.live.as_ref().map(|l| format!(" ({})", l.state)).unwrap_or_default();
        writeln!(out, "team:      {}{state}", t.target)?;
        writeln!(
            out,
            "           vectors: {} from the team, {} computed here; snippets: {} from the team, {} written here",
            t.tally.vectors_from_team,
            t.tally.vectors_computed,
            t.tally.snippets_from_team,
            t.tally.snippets_written
        )?;
        if let Some(reason) = t.live.as_ref().and_then(|l| l.read_only.as_ref()) {
            writeln!(out, "           reading only: {reason}")?;
        }
    }
    for p in &s.config_problems {
        writeln!(out, "config:    {p}")?;
    }
    for n in &s.notes {
        writeln!(out, "note:      {n}")?;
    }
    if !s.skipped.is_empty() {
        writeln!(out, "skipped:   {} files", s.skipped.len())?;
        for k in &s.skipped {
            writeln!(out, "  {}: {}", k.path, k.reason)?;
        }
    }
    Ok(())
}

/// The title and heading path of a hit. A title that is only the file's name (a note
/// without a title or a first-level heading) is left out: the hit's place, just before it,
/// names the file.
fn breadcrumb(c: &ChunkRecord) -> String {
    let headings = crate::context::context_headings(&c.title, &c.heading_path);
    let title = (!c.title_is_file_name()).then_some(c.title.as_str());
    title.into_iter().chain(headings.iter().map(String::as_str)).collect::<Vec<_>>().join(" › ")
}

fn ago(unix_secs: u64) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let d = now.saturating_sub(unix_secs);
    match d {
        0..=59 => format!("{d}s ago"),
        60..=3599 => format!("{}m ago", d / 60),
        3600..=86_399 => format!("{}h ago", d / 3600),
        _ => format!("{}d ago", d / 86_400),
    }
}

/// The evaluation table: one row per report (numbered when there are several) ending with how
/// its arms were fused, optionally with a row per query kind under each, then optionally the
/// first-hit rank of every query under each report.
pub fn eval(out: &mut impl Write, reports: &[EvalReport], per_query: bool, by_kind: bool) -> Result<()> {
    let numbered = reports.len() > 1;
    let label_of =
        |i: usize, label: &str| if numbered { format!("{:>2}  {label}", i + 1) } else { label.to_string() };
    let width = reports
        .iter()
        .enumerate()
        .map(|(i, r)| label_of(i, &r.label).chars().count())
        .chain(std::iter::once(22))
        .max()
        .unwrap_or(22);
    writeln!(
        out,
        "{:<width$} {:>4} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>7} {:>6}  fusion",
        if numbered { "    variant / kind" } else { "mode / kind" },
        "n",
        "R@1",
        "R@5",
        "R@10",
        "R@20",
        "MRR@10",
        "Pass@5",
        "Pass@10",
        "Pass@20",
        "lines"
    )?;
    let row = |out: &mut dyn Write, label: &str, m: &Metrics, fusion: &str| {
        let line = format!(
            "{:<width$} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>6.1}  {}",
            label,
            m.queries,
            m.recall[0],
            m.recall[1],
            m.recall[2],
            m.recall[3],
            m.mrr_at_10,
            m.pass[1],
            m.pass[2],
            m.pass[3],
            m.lines_at_10,
            fusion
        );
        writeln!(out, "{}", line.trim_end())
    };
    let indent = if numbered { "      " } else { "  " };
    for (i, r) in reports.iter().enumerate() {
        row(out, &label_of(i, &r.label), &r.overall, &r.fusion)?;
        if by_kind && r.by_kind.len() > 1 {
            for (kind, m) in &r.by_kind {
                row(out, &format!("{indent}{kind}"), m, "")?;
            }
        }
    }
    if per_query && let Some(first) = reports.first() {
        writeln!(out)?;
        let ranks: String = (1..=reports.len())
            .map(|n| format!("{:>4}", if numbered { n.to_string() } else { "rank".into() }))
            .collect();
        writeln!(out, "{ranks}  {:<8} {:<18} query", "id", "kind")?;
        for (n, q) in first.queries.iter().enumerate() {
            let ranks: String = reports
                .iter()
                .map(|r| {
                    let rank = r.queries.get(n).and_then(|q| q.first_hit);
                    format!("{:>4}", rank.map_or("-".to_string(), |n| n.to_string()))
                })
                .collect();
            writeln!(out, "{ranks}  {:<8} {:<18} {}", q.id, q.kind, q.query)?;
        }
    }
    Ok(())
}

/// One JSON line per query: `{"id", "results": [{"path", "start_line", "end_line"}]}`.
pub fn write_run_file(path: &std::path::Path, report: &EvalReport) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for q in &report.queries {
        let results: Vec<serde_json::Value> = q
            .results
            .iter()
            .map(|(p, s, e)| serde_json::json!({"path": p, "start_line": s, "end_line": e}))
            .collect();
        serde_json::to_writer(&mut f, &serde_json::json!({"id": q.id, "results": results}))?;
        writeln!(f)?;
    }
    f.flush()
}

/// `german` as `German`.
fn capitalised(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_stopped_by_one_refusal_is_not_said_to_keep_failing() {
        let run = SnippetRun {
            totals: Default::default(),
            end: RunEnd::Failing { error: "the server refused the API key in OPENAI_API_KEY".into() },
            indexed: 0,
            waiting: 12,
        };
        let mut out = Vec::new();
        snippet_run(&mut out, &run).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("stopped on the model's errors: the server refused the API key"), "{out}");
        assert!(!out.contains("keeps failing"), "{out}");
    }
}
