//! The encoder's forward pass: embeddings, twelve post-norm BERT layers and mean pooling,
//! over a batch of texts whose tokens are concatenated into one activation matrix. Every
//! product then reads each weight once per batch rather than once per text, and no padding
//! is computed; only attention looks at where one text ends and the next begins.

use std::ops::Range;

use rayon::prelude::*;

use super::attention::{attention, supports_head_dim};
use super::format::{Config, DType, ModelFile, Q4_BLOCK_BYTES, QK, f16_to_f32};
use super::kernels::matmul;
use super::packed::{Int8Rows, PANEL, PackedMatrix};
use super::rowwise::{add_norm_quantize, gelu_quantize, quantize};
use super::{E5Error, Isa};

/// Tokens per parallel chunk of the row-wise steps.
const ROW_CHUNK: usize = 16;

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value stacked: one product for the three.
    qkv: PackedMatrix,
    attn_out: PackedMatrix,
    attn_norm: Norm,
    ffn_in: PackedMatrix,
    ffn_out: PackedMatrix,
    out_norm: Norm,
}

/// The weights, ready to run. The word embeddings stay in the model file (4-bit rows,
/// dequantised per token); everything else is repacked or copied at load.
pub(super) struct Encoder {
    pub config: Config,
    /// Byte range of the word embeddings within the model file.
    pub word_range: Range<usize>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
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
        let linear = |names: &[&str], rows: usize, cols: usize| -> Result<PackedMatrix, E5Error> {
            let mut parts = Vec::new();
            for name in names {
                let w = file.tensor(&format!("{name}.w"), DType::Q4_0, rows * cols)?;
                parts.push((w, file.f32_tensor(&format!("{name}.b"), rows)?));
            }
            let views: Vec<(&[u8], &[f32])> = parts.iter().map(|(w, b)| (*w, b.as_slice())).collect();
            Ok(PackedMatrix::from_q4(&views, cols))
        };
        let (h, ff) = (c.hidden, c.intermediate);
        let layers = (0..c.layers)
            .into_par_iter()
            .map(|l| {
                let p = |s: &str| format!("l{l}.{s}");
                let mut qkv = linear(&[&p("q"), &p("k"), &p("v")], h, h)?;
                // Attention divides q·k by √d; dividing the query's weights once instead
                // saves a multiply per score (exact when d is a power of four, as 16 and 64;
                // for d = 32 a rounding of the scales, far below their 4-bit precision).
                qkv.scale_rows(0..h, 1.0 / ((h / c.heads) as f32).sqrt());
                Ok(Layer {
                    qkv,
                    attn_out: linear(&[&p("ao")], h, h)?,
                    attn_norm: norm(&p("aln"))?,
                    ffn_in: linear(&[&p("fi")], ff, h)?,
                    ffn_out: linear(&[&p("fo")], h, ff)?,
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
        })
    }

    /// The mean-pooled, L2-normalised vector of each text of `batch`, in order. `word` is
    /// the word-embedding table (`word_range` of the model file).
    pub fn forward(&self, isa: Isa, word: &[u8], batch: &Batch, ws: &mut Workspace) -> Vec<Vec<f32>> {
        let c = &self.config;
        let (h, ff, tokens) = (c.hidden, c.intermediate, batch.ids.len());
        ws.x.resize(tokens * h, 0.0);
        ws.qkv.resize(tokens * 3 * h, 0.0);
        ws.ctx.resize(tokens * h, 0.0);
        ws.sublayer.resize(tokens * h, 0.0);
        ws.mid.resize(tokens * ff, 0.0);
        ws.acts.reshape(tokens, h);

        self.embed_tokens(isa, word, batch, ws);
        for (i, layer) in self.layers.iter().enumerate() {
            let last = i + 1 == self.layers.len();
            matmul(isa, &layer.qkv, &ws.acts, tokens, &mut ws.qkv);
            attention(isa, &ws.qkv, h, c.heads, &batch.texts, &mut ws.ctx);
            quantize_rows(isa, &ws.ctx, &mut ws.acts);
            matmul(isa, &layer.attn_out, &ws.acts, tokens, &mut ws.sublayer);
            self.add_norm(isa, &layer.attn_norm, ws, true);

            matmul(isa, &layer.ffn_in, &ws.acts, tokens, &mut ws.mid);
            ws.acts.reshape(tokens, ff);
            ws.mid
                .par_chunks(ROW_CHUNK * ff)
                .zip(ws.acts.par_row_chunks(ROW_CHUNK))
                .for_each(|(x, ((v, s), o))| gelu_quantize(isa, x, v, s, o));
            matmul(isa, &layer.ffn_out, &ws.acts, tokens, &mut ws.sublayer);
            ws.acts.reshape(tokens, h);
            // The last layer's output is pooled, not multiplied again: no quantisation.
            self.add_norm(isa, &layer.out_norm, ws, !last);
        }
        batch.texts.iter().map(|span| pool(&ws.x[span.start * h..span.end * h], h)).collect()
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
