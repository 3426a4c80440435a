//! The encoder's forward pass: embeddings, twelve post-norm BERT layers and mean pooling,
//! over a batch of texts whose tokens are concatenated into one activation matrix. Every
//! product then reads each weight once per batch rather than once per text, and no padding
//! is computed; only attention looks at where one text ends and the next begins.

use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::attention::{attention, supports_head_dim};
use super::format::{Config, DType, ModelFile, Q4_BLOCK_BYTES, QK, f16_to_f32};
use super::kernels::{matmul, matmul_by_panels};
use super::packed::{Int8Rows, PANEL, PackedMatrix};
use super::rowwise::{add_norm_quantize, gelu_quantize, quantize};
use super::{E5Error, Isa};

/// Tokens per parallel chunk of the row-wise steps.
const ROW_CHUNK: usize = 16;
/// Batches of at most this many tokens (a query) multiply straight from the model file's
/// rows, repacking one panel at a time, until a longer batch has repacked the matrix whole.
/// The two give the same floats: the same kernel runs on the same values.
pub(super) const SHORT_BATCH_TOKENS: usize = 64;
/// Short batches read from the file until this many have run: a process that embeds query
/// after query (the language server) then repacks once rather than a panel at a time for
/// every query.
const SHORT_BATCHES_FROM_FILE: usize = 8;

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// A weight matrix where the model file has it: the Q4_0 rows of one or more tensors
/// stacked (query, key and value read the same input), with their biases. It is repacked
/// for the kernels (`packed.rs`) by the first batch long enough to pay for that: loading
/// repacks nothing, so a process that embeds one query never writes 21 MB of weights.
struct Linear {
    /// Byte offset in the model file of each stacked tensor, and its row count.
    parts: Vec<(usize, usize)>,
    rows: usize,
    cols: usize,
    /// The biases, times `scale`'s factor on its rows.
    bias: Vec<f32>,
    /// Rows whose block scales are multiplied by a factor when repacked.
    scale: (Range<usize>, f32),
    packed: OnceLock<PackedMatrix>,
}

impl Linear {
    /// Q4_0 row `r` of the stack, within the model file `data`.
    fn row<'a>(&self, data: &'a [u8], mut r: usize) -> &'a [u8] {
        let row_bytes = self.cols / QK * Q4_BLOCK_BYTES;
        for &(start, rows) in &self.parts {
            if r < rows {
                return &data[start + r * row_bytes..][..row_bytes];
            }
            r -= rows;
        }
        unreachable!("row {r} past the matrix")
    }

    /// The whole matrix repacked, made on first use.
    fn packed(&self, data: &[u8]) -> &PackedMatrix {
        self.packed.get_or_init(|| {
            let mut packed = PackedMatrix::default();
            packed.fill_rows(
                |r| self.row(data, r),
                self.cols,
                0..self.rows,
                &self.bias,
                self.scale.clone(),
                true,
            );
            packed
        })
    }

    /// `out = x × selfᵀ + bias` for the first `tokens` rows of `x`: straight from the file,
    /// a panel at a time in `panel`, when one is given and the matrix is not repacked yet.
    fn product(
        &self,
        isa: Isa,
        data: &[u8],
        x: &Int8Rows,
        tokens: usize,
        out: &mut [f32],
        panel: Option<&mut PackedMatrix>,
    ) {
        match (self.packed.get(), panel) {
            (None, Some(panel)) => {
                let fill = |rows: Range<usize>, panel: &mut PackedMatrix| {
                    panel.fill_rows(
                        |r| self.row(data, r),
                        self.cols,
                        rows,
                        &self.bias,
                        self.scale.clone(),
                        false,
                    )
                };
                matmul_by_panels(isa, self.rows, fill, x, tokens, out, panel);
            }
            _ => matmul(isa, self.packed(data), x, tokens, out),
        }
    }
}

struct Layer {
    /// Query, key and value stacked: one product for the three.
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    ffn_in: Linear,
    ffn_out: Linear,
    out_norm: Norm,
}

/// The weights, ready to run. The layers' weights and the word embeddings stay in the model
/// file (the word embeddings dequantised per token, the layers repacked on first need);
/// biases, norms and the position table are copied at load.
pub(super) struct Encoder {
    pub config: Config,
    /// Byte range of the word embeddings within the model file.
    pub word_range: Range<usize>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
    /// Short batches run so far.
    short_batches: AtomicUsize,
}

/// The buffers of one batch, reused by the next.
#[derive(Default)]
pub(super) struct Workspace {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    sublayer: Vec<f32>,
    mid: Vec<f32>,
    acts: Int8Rows,
    /// One panel of a matrix, repacked for a short batch.
    panel: PackedMatrix,
    /// Whether this batch multiplies from the model file's rows.
    from_file: bool,
}

/// A batch: token ids of all texts back to back, and each text's span of them.
#[derive(Default)]
pub(super) struct Batch {
    pub ids: Vec<u32>,
    pub texts: Vec<Range<usize>>,
}

impl Encoder {
    pub fn load(file: &ModelFile<'_>, data_start: usize) -> Result<Self, E5Error> {
        let c = file.config;
        if !supports_head_dim(c.hidden / c.heads)
            || !c.hidden.is_multiple_of(PANEL)
            || !c.intermediate.is_multiple_of(PANEL)
        {
            return Err(E5Error::Corrupt(format!(
                "hidden size {}, {} heads and intermediate size {} are not supported",
                c.hidden, c.heads, c.intermediate
            )));
        }
        let word = file.tensor("emb.word", DType::Q4_0, c.vocab * c.hidden)?;
        let word_start = word.as_ptr() as usize - data_start;
        let norm = |prefix: &str| -> Result<Norm, E5Error> {
            Ok(Norm {
                weight: file.f32_tensor(&format!("{prefix}.w"), c.hidden)?,
                bias: file.f32_tensor(&format!("{prefix}.b"), c.hidden)?,
            })
        };
        let linear = |names: &[&str], rows: usize, cols: usize, factor: f32| -> Result<Linear, E5Error> {
            let (mut parts, mut bias) = (Vec::new(), Vec::new());
            for name in names {
                let w = file.tensor(&format!("{name}.w"), DType::Q4_0, rows * cols)?;
                parts.push((w.as_ptr() as usize - data_start, rows));
                bias.extend(file.f32_tensor(&format!("{name}.b"), rows)?);
            }
            // The factor applies to the first part's rows (the query's, in `qkv`).
            let scaled = 0..if factor == 1.0 { 0 } else { rows };
            for b in &mut bias[scaled.clone()] {
                *b *= factor;
            }
            let rows = bias.len();
            Ok(Linear { parts, rows, cols, bias, scale: (scaled, factor), packed: OnceLock::new() })
        };
        let (h, ff) = (c.hidden, c.intermediate);
        // Attention divides q·k by √d; dividing the query's weights once instead saves a
        // multiply per score (exact when d is a power of four, as 16 and 64; for d = 32 a
        // rounding of the scales, far below their 4-bit precision).
        let query_factor = 1.0 / ((h / c.heads) as f32).sqrt();
        let layers = (0..c.layers)
            .map(|l| {
                let p = |s: &str| format!("l{l}.{s}");
                Ok(Layer {
                    qkv: linear(&[&p("q"), &p("k"), &p("v")], h, h, query_factor)?,
                    attn_out: linear(&[&p("ao")], h, h, 1.0)?,
                    attn_norm: norm(&p("aln"))?,
                    ffn_in: linear(&[&p("fi")], ff, h, 1.0)?,
                    ffn_out: linear(&[&p("fo")], h, ff, 1.0)?,
                    out_norm: norm(&p("oln"))?,
                })
            })
            .collect::<Result<Vec<_>, E5Error>>()?;
        Ok(Encoder {
            config: c,
            word_range: word_start..word_start + word.len(),
            positions: file.f32_tensor("emb.pos", c.max_positions * h)?,
            token_type: file.f32_tensor("emb.type", c.type_vocab * h)?,
            emb_norm: norm("emb.ln")?,
            layers,
            short_batches: AtomicUsize::new(0),
        })
    }

    /// The mean-pooled, L2-normalised vector of each text of `batch`, in order. `data` is
    /// the model file.
    pub fn forward(&self, isa: Isa, data: &[u8], batch: &Batch, ws: &mut Workspace) -> Vec<Vec<f32>> {
        let word = &data[self.word_range.clone()];
        let c = &self.config;
        let (h, ff, tokens) = (c.hidden, c.intermediate, batch.ids.len());
        ws.x.resize(tokens * h, 0.0);
        ws.qkv.resize(tokens * 3 * h, 0.0);
        ws.ctx.resize(tokens * h, 0.0);
        ws.sublayer.resize(tokens * h, 0.0);
        ws.mid.resize(tokens * ff, 0.0);
        ws.acts.reshape(tokens, h);
        ws.from_file = tokens <= SHORT_BATCH_TOKENS
            && self.short_batches.fetch_add(1, Ordering::Relaxed) < SHORT_BATCHES_FROM_FILE;

        self.embed_tokens(isa, word, batch, ws);
        for (i, layer) in self.layers.iter().enumerate() {
            let last = i + 1 == self.layers.len();
            layer.qkv.product(
                isa,
                data,
                &ws.acts,
                tokens,
                &mut ws.qkv,
                ws.from_file.then_some(&mut ws.panel),
            );
            attention(isa, &ws.qkv, h, c.heads, &batch.texts, &mut ws.ctx);
            quantize_rows(isa, &ws.ctx, &mut ws.acts);
            layer.attn_out.product(
                isa,
                data,
                &ws.acts,
                tokens,
                &mut ws.sublayer,
                ws.from_file.then_some(&mut ws.panel),
            );
            self.add_norm(isa, &layer.attn_norm, ws, true);

            layer.ffn_in.product(
                isa,
                data,
                &ws.acts,
                tokens,
                &mut ws.mid,
                ws.from_file.then_some(&mut ws.panel),
            );
            ws.acts.reshape(tokens, ff);
            ws.mid
                .par_chunks(ROW_CHUNK * ff)
                .zip(ws.acts.par_row_chunks(ROW_CHUNK))
                .for_each(|(x, ((v, s), o))| gelu_quantize(isa, x, v, s, o));
            layer.ffn_out.product(
                isa,
                data,
                &ws.acts,
                tokens,
                &mut ws.sublayer,
                ws.from_file.then_some(&mut ws.panel),
            );
            ws.acts.reshape(tokens, h);
            // The last layer's output is pooled, not multiplied again: no quantisation.
            self.add_norm(isa, &layer.out_norm, ws, !last);
        }
        batch.texts.iter().map(|span| pool(&ws.x[span.start * h..span.end * h], h)).collect()
    }

    /// Whether every matrix is repacked whole (after a long batch).
    #[cfg(test)]
    pub fn repacked(&self) -> bool {
        let matrices = self.layers.iter().flat_map(|l| [&l.qkv, &l.attn_out, &l.ffn_in, &l.ffn_out]);
        matrices.map(|m| m.packed.get().is_some()).collect::<Vec<_>>().iter().all(|&p| p)
    }

    /// `x = word + position + type embeddings`, normalised, and quantised into `acts`.
    fn embed_tokens(&self, isa: Isa, word: &[u8], batch: &Batch, ws: &mut Workspace) {
        let h = self.config.hidden;
        let row_bytes = h / QK * Q4_BLOCK_BYTES;
        let mut positions = Vec::with_capacity(batch.ids.len());
        for span in &batch.texts {
            positions.extend(0..span.len());
        }
        ws.x.par_chunks_mut(ROW_CHUNK * h)
            .zip(ws.acts.par_row_chunks(ROW_CHUNK))
            .zip(batch.ids.par_chunks(ROW_CHUNK).zip(positions.par_chunks(ROW_CHUNK)))
            .for_each(|((x, ((values, scales), offsets)), (ids, pos))| {
                for ((row, &id), &p) in x.chunks_exact_mut(h).zip(ids).zip(pos) {
                    let blocks = word[id as usize * row_bytes..][..row_bytes].chunks_exact(Q4_BLOCK_BYTES);
                    let position = &self.positions[p * h..][..h];
                    for (b, block) in blocks.enumerate() {
                        let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
                        for j in 0..QK / 2 {
                            let (lo, hi) = (block[2 + j] & 0x0f, block[2 + j] >> 4);
                            row[b * QK + j] = (f32::from(lo) - 8.0) * d;
                            row[b * QK + j + QK / 2] = (f32::from(hi) - 8.0) * d;
                        }
                    }
                    for ((v, p), t) in row.iter_mut().zip(position).zip(&self.token_type[..h]) {
                        *v += p + t;
                    }
                }
                let n = &self.emb_norm;
                add_norm_quantize(isa, x, &[], &n.weight, &n.bias, self.config.eps, values, scales, offsets);
            });
    }

    /// `x = LayerNorm(x + sublayer)`, and `x` quantised into `acts` when `quantise`.
    fn add_norm(&self, isa: Isa, norm: &Norm, ws: &mut Workspace, quantise: bool) {
        let h = self.config.hidden;
        let eps = self.config.eps;
        ws.x.par_chunks_mut(ROW_CHUNK * h)
            .zip(ws.sublayer.par_chunks(ROW_CHUNK * h))
            .zip(ws.acts.par_row_chunks(ROW_CHUNK))
            .for_each(|((x, y), ((values, scales), offsets))| {
                let (values, scales, offsets) = if quantise {
                    (values, scales, offsets)
                } else {
                    (&mut [][..], &mut [][..], &mut [][..])
                };
                add_norm_quantize(isa, x, y, &norm.weight, &norm.bias, eps, values, scales, offsets);
            });
    }
}

fn quantize_rows(isa: Isa, x: &[f32], acts: &mut Int8Rows) {
    let cols = acts.cols;
    x.par_chunks(ROW_CHUNK * cols)
        .zip(acts.par_row_chunks(ROW_CHUNK))
        .for_each(|(x, ((v, s), o))| quantize(isa, x, v, s, o));
}

/// The mean of `rows` (each `h` floats), scaled to unit length.
fn pool(rows: &[f32], h: usize) -> Vec<f32> {
    let mut mean = vec![0f32; h];
    for row in rows.chunks_exact(h) {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += v;
        }
    }
    let n = (rows.len() / h).max(1) as f32;
    let norm = mean.iter().map(|v| (v / n) * (v / n)).sum::<f32>().sqrt().max(1e-12);
    mean.iter().map(|v| v / n / norm).collect()
}
