//! A static model over multilingual-e5-small's vocabulary: one int8 row per SentencePiece
//! piece, distilled from e5 itself (`crates/e5/examples/distill_static.rs`), with texts cut
//! into pieces by e5's own tokenizer, which the binary already carries inside the e5 model.
//!
//! The file is a safetensors table: `embeddings` (int8, rows × dimensions), `weights` (f32,
//! one per piece: the row's scale times the piece's weight) and, when rare pieces share the
//! rows of common ones, `mapping` (i32, piece → row). A piece's vector is
//! `embeddings[mapping[id]] * weights[id]`; a text's is the sum of its pieces', normalised.

use std::sync::Arc;

use serde_json::Value;

use super::e5::E5Model;

/// The value of `tokenizer` in a model's `config.json` that selects this format.
pub const TOKENIZER_NAME: &str = "multilingual-e5-small";
/// Pieces of a text that count, as for model2vec's models.
const MAX_PIECES: usize = 512;
/// Bytes of a text given to the tokenizer: more than 512 pieces ever take in practice
/// (about 4 bytes a piece in English or code, 3 to 5 in Chinese), so that a huge text costs
/// no more than a long one.
const MAX_TEXT_BYTES: usize = 8192;

/// A loaded piece table and the tokenizer that cuts texts into its pieces.
pub struct PieceModel {
    /// The model file, read from its folder.
    table: Vec<u8>,
    /// Byte range of `embeddings` in `table`.
    rows_at: std::ops::Range<usize>,
    dims: usize,
    weights: Vec<f32>,
    mapping: Option<Vec<u32>>,
    tokenizer: Arc<E5Model>,
}

impl PieceModel {
    /// Reads and checks the table against the tokenizer: every piece must have a weight and
    /// reach a row.
    pub fn load(table: Vec<u8>, tokenizer: Arc<E5Model>) -> Result<Self, String> {
        let (header, data_start) = super::safetensors::safetensors_header(&table)?;
        let data = &table[data_start..];
        let tensor = |name: &str, dtype: &str| -> Result<(Vec<usize>, std::ops::Range<usize>), String> {
            let entry = header.get(name).ok_or_else(|| format!("no `{name}` tensor"))?;
            if entry.get("dtype").and_then(Value::as_str) != Some(dtype) {
                return Err(format!("tensor `{name}` is not {dtype}"));
            }
            let shape: Vec<usize> = entry
                .get("shape")
                .and_then(Value::as_array)
                .map(|d| d.iter().filter_map(|x| x.as_u64().map(|x| x as usize)).collect())
                .unwrap_or_default();
            let bytes = super::safetensors::tensor_bytes(name, entry, data)?;
            let start = bytes.as_ptr() as usize - data.as_ptr() as usize + data_start;
            let size = if dtype == "I8" { 1 } else { 4 };
            if shape.iter().product::<usize>() * size != bytes.len() {
                return Err(format!("tensor `{name}` holds the wrong number of bytes for its shape"));
            }
            Ok((shape, start..start + bytes.len()))
        };
        let (shape, rows_at) = tensor("embeddings", "I8")?;
        let [rows, dims] = shape[..] else {
            return Err(format!("tensor `embeddings` has shape {shape:?}, expected 2-D"));
        };
        if dims == 0 {
            return Err("tensor `embeddings` has no columns".to_owned());
        }
        let floats = |range: std::ops::Range<usize>| -> Vec<[u8; 4]> {
            table[range].chunks_exact(4).map(|b| [b[0], b[1], b[2], b[3]]).collect()
        };
        let (_, weights_at) = tensor("weights", "F32")?;
        let weights: Vec<f32> = floats(weights_at).into_iter().map(f32::from_le_bytes).collect();
        let pieces = tokenizer.piece_count();
        if weights.len() != pieces {
            return Err(format!(
                "the table has {} weights but e5's tokenizer has {pieces} pieces (made for another tokenizer?)",
                weights.len()
            ));
        }
        if let Some(bad) = weights.iter().position(|w| !w.is_finite()) {
            return Err(format!("the weight of piece {bad} is not a finite number"));
        }
        let mapping = match header.get("mapping") {
            None if rows == pieces => None,
            None => return Err(format!("the table has {rows} rows for {pieces} pieces and no `mapping`")),
            Some(_) => {
                let (_, mapping_at) = tensor("mapping", "I32")?;
                let mapping: Vec<u32> =
                    floats(mapping_at).into_iter().map(|b| i32::from_le_bytes(b) as u32).collect();
                if mapping.len() != pieces {
                    return Err(format!("`mapping` has {} entries for {pieces} pieces", mapping.len()));
                }
                if let Some(&row) = mapping.iter().find(|&&row| row as usize >= rows) {
                    return Err(format!("`mapping` points at row {row}, past the table's {rows} rows"));
                }
                Some(mapping)
            }
        };
        Ok(PieceModel { table, rows_at, dims, weights, mapping, tokenizer })
    }

    /// Length of the vectors.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The sum of `text`'s pieces' vectors (its first 512 pieces), not normalised: zero when
    /// the text is only whitespace or no piece has a vector.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        // The tokenizer gives even an empty text a piece (the space marker `▁`); a text of
        // nothing but whitespace has no direction of its own, as with model2vec's models.
        if text.trim().is_empty() {
            return vec![0.0; self.dims];
        }
        let mut cut = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let rows = &self.table[self.rows_at.clone()];
        let mut sum = vec![0.0f32; self.dims];
        for id in self.tokenizer.tokenize(&text[..cut]).into_iter().take(MAX_PIECES) {
            let id = id as usize;
            let weight = self.weights.get(id).copied().unwrap_or(0.0);
            if weight == 0.0 {
                continue;
            }
            let row = self.mapping.as_ref().map_or(id, |m| m[id] as usize);
            for (s, &q) in sum.iter_mut().zip(&rows[row * self.dims..][..self.dims]) {
                *s += weight * f32::from(q as i8);
            }
        }
        sum
    }
}
