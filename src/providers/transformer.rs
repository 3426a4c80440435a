//! The `transformer` embedder: a sentence-transformers BERT model (all-MiniLM-L6-v2 and kin)
//! run on the CPU with candle, from a local folder.
//!
//! A text is tokenized (WordPiece, truncated to the model's maximum length), run through the
//! encoder, and its token vectors are averaged over the real tokens only — padding never
//! counts — then L2-normalised. That is what sentence-transformers does for these models, and
//! it reproduces their reference vectors. A chunk costs thousands of times what it costs the
//! static model (docs/models-and-quality.md, "The transformer provider", has measured figures), for better
//! rankings.

use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use serde_json::Value;
use tokenizers::Tokenizer;
use xxhash_rust::xxh3::Xxh3;

use super::{EmbedError, Embedder, EmbedderIdentity};

/// The value of [`EmbedderIdentity::provider`] for transformer models.
pub const PROVIDER: &str = "transformer";

/// Texts run through the encoder together when the configuration does not say.
pub const DEFAULT_BATCH_SIZE: usize = 16;

const MODEL_FILE: &str = "model.safetensors";
const TOKENIZER_FILE: &str = "tokenizer.json";
const CONFIG_FILE: &str = "config.json";
/// Optional sentence-transformers files: the sequence length the model was trained with, and
/// its pooling.
const SENTENCE_CONFIG_FILE: &str = "sentence_bert_config.json";
const POOLING_CONFIG_FILE: &str = "1_Pooling/config.json";

/// The fewest tokens per text that leave room for words besides `[CLS]` and `[SEP]`.
pub const MIN_TOKENS: usize = 8;

/// How a transformer model is run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransformerOptions {
    /// Texts per forward pass; `None` means [`DEFAULT_BATCH_SIZE`]. Larger batches hold more
    /// memory (attention is `batch × heads × tokens²` floats) for little gain on a CPU.
    pub batch_size: Option<usize>,
    /// Tokens kept per text, special tokens included; `None` means the model's own limit
    /// (`max_seq_length` of `sentence_bert_config.json`, else `max_position_embeddings`).
    /// Never more than `max_position_embeddings`.
    pub max_tokens: Option<usize>,
}

/// An embedder over a BERT-family model in a local folder.
pub struct TransformerEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    pad_id: u32,
    max_tokens: usize,
    batch_size: usize,
    identity: EmbedderIdentity,
}

/// Shows the identity only: the model's weights are not worth printing.
impl std::fmt::Debug for TransformerEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransformerEmbedder")
            .field("identity", &self.identity)
            .field("max_tokens", &self.max_tokens)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl TransformerEmbedder {
    /// Loads the model in `dir`: `model.safetensors`, `tokenizer.json` and `config.json` (a
    /// BERT config), as sentence-transformers and the Hugging Face hub lay them out.
    ///
    /// The identity's model is `<folder name>:<xxh3 of the three files>:<max tokens>`, so a
    /// changed model, or a different truncation, re-embeds. Missing or broken files give
    /// [`EmbedError::Load`] naming the file.
    pub fn from_dir(dir: impl AsRef<Path>, options: TransformerOptions) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        // Loading runs third-party parsers over the user's files; a panic among them is a
        // broken model, not a reason to take the server down.
        panic::catch_unwind(AssertUnwindSafe(|| load(dir, options))).unwrap_or_else(|_| {
            Err(EmbedError::Load {
                path: dir.display().to_string(),
                reason: "the model loader panicked".into(),
            })
        })
    }

    /// Tokens kept per text, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Embeds texts that are already tokenized and padded to the same length.
    fn embed_batch(&self, ids: Vec<u32>, mask: Vec<u32>, rows: usize) -> candle_core::Result<Vec<Vec<f32>>> {
        let device = Device::Cpu;
        let columns = ids.len() / rows;
        let ids = Tensor::from_vec(ids, (rows, columns), &device)?;
        let mask = Tensor::from_vec(mask, (rows, columns), &device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
        // Mean over the real tokens: padded positions are multiplied by zero and left out of
        // the count, so a text's vector does not depend on what it is batched with.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?;
        summed.broadcast_div(&counts)?.to_vec2::<f32>()
    }

    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| {
            EmbedError::Failed(format!("tokenizing for model {} failed: {e}", self.identity.model))
        })?;
        // Batching texts of similar length wastes less work on padding; the order is restored
        // below.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.batch_size) {
            let columns = batch.iter().map(|&i| encodings[i].len()).max().unwrap_or(0).max(1);
            let mut ids = Vec::with_capacity(batch.len() * columns);
            let mut mask = Vec::with_capacity(batch.len() * columns);
            for &i in batch {
                let encoding = &encodings[i];
                let padding = columns - encoding.len();
                ids.extend_from_slice(encoding.get_ids());
                ids.extend(std::iter::repeat_n(self.pad_id, padding));
                mask.extend_from_slice(encoding.get_attention_mask());
                mask.extend(std::iter::repeat_n(0, padding));
            }
            let pooled = self.embed_batch(ids, mask, batch.len()).map_err(|e| {
                EmbedError::Failed(format!("model {} failed to embed: {e}", self.identity.model))
            })?;
            for (&i, v) in batch.iter().zip(pooled) {
                vectors[i] = normalized(v, &self.identity.model)?;
            }
        }
        Ok(vectors)
    }
}

impl Embedder for TransformerEmbedder {
    fn identity(&self) -> EmbedderIdentity {
        self.identity.clone()
    }

    /// Embeds on the calling thread; candle spreads each matrix product over the cores.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        panic::catch_unwind(AssertUnwindSafe(|| self.embed_all(texts))).unwrap_or_else(|_| {
            Err(EmbedError::Failed(format!("model {} panicked while embedding", self.identity.model)))
        })
    }
}

/// Scales a pooled vector to unit length.
fn normalized(mut v: Vec<f32>, model: &str) -> Result<Vec<f32>, EmbedError> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return Err(EmbedError::Failed(format!("model {model} produced a vector of norm {norm}")));
    }
    v.iter_mut().for_each(|x| *x /= norm);
    Ok(v)
}

fn load(dir: &Path, options: TransformerOptions) -> Result<TransformerEmbedder, EmbedError> {
    let error =
        |name: &str, reason: String| EmbedError::Load { path: dir.join(name).display().to_string(), reason };
    if !dir.is_dir() {
        let reason = if dir.exists() { "not a folder" } else { "no such folder" };
        return Err(EmbedError::Load { path: dir.display().to_string(), reason: reason.to_owned() });
    }
    let read = |name: &str| -> Result<Vec<u8>, EmbedError> {
        std::fs::read(dir.join(name)).map_err(|e| {
            error(
                name,
                if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "missing file (a transformer model folder holds {MODEL_FILE}, {TOKENIZER_FILE} \
                         and {CONFIG_FILE})"
                    )
                } else {
                    e.to_string()
                },
            )
        })
    };
    let model_bytes = read(MODEL_FILE)?;
    let tokenizer_bytes = read(TOKENIZER_FILE)?;
    let config_bytes = read(CONFIG_FILE)?;

    let config: BertConfig = serde_json::from_slice(&config_bytes)
        .map_err(|e| error(CONFIG_FILE, format!("not a BERT model config: {e}")))?;
    check_pooling(dir)?;
    let max_tokens = max_tokens(dir, &config, options.max_tokens)?;

    let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
        .map_err(|e| error(TOKENIZER_FILE, format!("cannot parse: {e}")))?;
    // Exported tokenizers often carry a fixed padding and truncation (128 tokens for
    // all-MiniLM-L6-v2) that sentence-transformers ignores; keeping them would cut texts short
    // and pad every text to the same length. Padding is done per batch instead.
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(tokenizers::TruncationParams { max_length: max_tokens, ..Default::default() }))
        .map_err(|e| error(TOKENIZER_FILE, format!("cannot truncate to {max_tokens} tokens: {e}")))?;
    let pad_id = tokenizer.token_to_id("[PAD]").unwrap_or(config.pad_token_id as u32);
    let largest_id = tokenizer.get_vocab_size(true).saturating_sub(1);
    if largest_id >= config.vocab_size {
        return Err(error(
            TOKENIZER_FILE,
            format!("has token ids up to {largest_id}, past the model's vocab_size {}", config.vocab_size),
        ));
    }

    let weights = VarBuilder::from_slice_safetensors(&model_bytes, DType::F32, &Device::Cpu)
        .map_err(|e| error(MODEL_FILE, format!("not a safetensors file: {e}")))?;
    let model = BertModel::load(weights, &config)
        .map_err(|e| error(MODEL_FILE, format!("does not hold the BERT described by {CONFIG_FILE}: {e}")))?;

    let mut hasher = Xxh3::new();
    for bytes in [&model_bytes, &tokenizer_bytes, &config_bytes] {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let identity = EmbedderIdentity {
        provider: PROVIDER.to_owned(),
        model: format!("{}:{:016x}:{max_tokens}", super::folder_name(dir), hasher.digest()),
        dimensions: config.hidden_size,
    };
    Ok(TransformerEmbedder {
        model,
        tokenizer,
        pad_id,
        max_tokens,
        batch_size: options.batch_size.unwrap_or(DEFAULT_BATCH_SIZE).max(1),
        identity,
    })
}

/// The tokens kept per text: the configured number, else the model's own limit, never more
/// than its position table holds.
fn max_tokens(dir: &Path, config: &BertConfig, configured: Option<usize>) -> Result<usize, EmbedError> {
    let limit = config.max_position_embeddings;
    let trained = match std::fs::read(dir.join(SENTENCE_CONFIG_FILE)) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| EmbedError::Load {
                path: dir.join(SENTENCE_CONFIG_FILE).display().to_string(),
                reason: format!("invalid JSON: {e}"),
            })?
            .get("max_seq_length")
            .and_then(Value::as_u64)
            .map(|n| n as usize),
        Err(_) => None,
    };
    let wanted = configured.or(trained).unwrap_or(limit);
    if wanted < MIN_TOKENS {
        return Err(EmbedError::Load {
            path: dir.display().to_string(),
            reason: format!("max_tokens must be at least {MIN_TOKENS}, got {wanted}"),
        });
    }
    if wanted > limit {
        tracing::warn!(
            model = %dir.display(),
            "max_tokens {wanted} is more than the model's {limit} positions; using {limit}"
        );
    }
    Ok(wanted.min(limit))
}

/// Refuses models that sentence-transformers pools other than by mean: their vectors would
/// come out different from the reference ones without any error.
fn check_pooling(dir: &Path) -> Result<(), EmbedError> {
    let path = dir.join(POOLING_CONFIG_FILE);
    let Ok(bytes) = std::fs::read(&path) else { return Ok(()) };
    let pooling: Value = serde_json::from_slice(&bytes).map_err(|e| EmbedError::Load {
        path: path.display().to_string(),
        reason: format!("invalid JSON: {e}"),
    })?;
    if pooling.get("pooling_mode_mean_tokens").and_then(Value::as_bool) == Some(false) {
        return Err(EmbedError::Load {
            path: path.display().to_string(),
            reason: "the model pools otherwise than by mean over tokens; only mean pooling is supported"
                .into(),
        });
    }
    Ok(())
}
