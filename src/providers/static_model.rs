//! The built-in static embedding model (model2vec format), compiled into the binary, and
//! static models loaded from a local folder: model2vec's format, or a table over e5's pieces
//! (`static_e5`) such as `scripts/distill_e5_static` distils from the built-in e5 model.
//!
//! A static model holds one vector per tokenizer token; a text's vector is the weighted mean
//! of its tokens' vectors, L2-normalised. That costs microseconds per chunk and needs no
//! network, no GPU and no download, which is why it is the default embedder. The built-in
//! asset (`assets/static-model/`) is distilled from all-MiniLM-L6-v2 by
//! `scripts/distill_static_model.py`; its README records how.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use model2vec_rs::model::StaticModel;
use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

use super::safetensors::{safetensors_header, tensor_bytes};
use super::static_e5::{PieceModel, TOKENIZER_NAME};
use super::{EmbedError, Embedder, EmbedderIdentity};

/// Name of the built-in model; its identity is `builtin:<name>`. Give the asset a new name
/// whenever its files change, so that indexes built with the old one are rebuilt.
pub const BUILTIN_MODEL_NAME: &str = "minilm-l6-v2-distilled-256-int8";

/// The value of [`EmbedderIdentity::provider`] for static models.
pub const PROVIDER: &str = "static";
/// This model's weight in score fusion by default (BM25's is 1); also the weight of its
/// quick vectors while a slower model's are pending.
pub const VECTOR_WEIGHT: f32 = 0.3;
/// How far BM25's weight follows its best hit's share of the query with this model's
/// vectors beside it: not at all, since they are too weak to lean on when BM25 is unsure.
pub const BM25_COVERAGE: f32 = 0.0;

const MODEL_FILE: &str = "model.safetensors";
const TOKENIZER_FILE: &str = "tokenizer.json";
const CONFIG_FILE: &str = "config.json";

const BUILTIN_MODEL: &[u8] = include_bytes!("../../assets/static-model/model.safetensors");
const BUILTIN_TOKENIZER: &[u8] = include_bytes!("../../assets/static-model/tokenizer.json");
const BUILTIN_CONFIG: &[u8] = include_bytes!("../../assets/static-model/config.json");

/// An embedder over a model2vec-format static model.
///
/// Vectors are L2-normalised; only the first 512 tokens of a text count. A text with no known token (empty, only whitespace, only
/// characters outside the vocabulary) has no direction of its own; it gets a fixed unit
/// vector instead: the last axis, `[0, …, 0, 1]`. For PCA-reduced models such as the
/// built-in one that is the direction along which real texts vary least, so such a text lands
/// near-orthogonal to everything else (cosine about 0.03 on average for the built-in model)
/// rather than as a NaN or a zero vector that a cosine index cannot rank.
#[derive(Clone)]
pub struct StaticEmbedder {
    model: Backend,
    identity: EmbedderIdentity,
}

/// The kinds of static model: model2vec's, with a tokenizer.json of its own; a table over
/// e5's pieces, cut by the e5 model's tokenizer; and several of those joined, each part's
/// unit vector one slice of the whole.
#[derive(Clone)]
enum Backend {
    Model2Vec(StaticModel),
    Pieces(Arc<PieceModel>),
    Joined(Arc<[StaticEmbedder]>),
}

impl Backend {
    fn dims(&self) -> usize {
        match self {
            Backend::Model2Vec(model) => model.dim(),
            Backend::Pieces(model) => model.dims(),
            Backend::Joined(parts) => parts.iter().map(|p| p.identity.dimensions).sum(),
        }
    }
}

/// Shows the identity only: the model's own `Debug` would print its whole embedding table.
impl std::fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticEmbedder").field("identity", &self.identity).finish_non_exhaustive()
    }
}

impl StaticEmbedder {
    /// The model compiled into the binary. It is parsed on the first call only; later calls
    /// share it and cost a reference-count increment.
    pub fn builtin() -> Result<Self, EmbedError> {
        static BUILTIN: OnceLock<Result<StaticModel, (String, String)>> = OnceLock::new();
        let loaded = BUILTIN.get_or_init(|| {
            let source = ModelSource::Builtin;
            load_model(&source, BUILTIN_TOKENIZER, BUILTIN_MODEL, BUILTIN_CONFIG).map_err(|e| match e {
                EmbedError::Load { path, reason } => (path, reason),
                EmbedError::Failed(reason) => (source.describe(), reason),
                other => (source.describe(), other.to_string()),
            })
        });
        match loaded {
            Ok(model) => {
                Ok(Self::new(Backend::Model2Vec(model.clone()), format!("builtin:{BUILTIN_MODEL_NAME}")))
            }
            Err((path, reason)) => Err(EmbedError::Load { path: path.clone(), reason: reason.clone() }),
        }
    }

    /// A model2vec-format model from a local folder holding `model.safetensors`,
    /// `tokenizer.json` and `config.json`; or, when `config.json` names
    /// `"tokenizer": "multilingual-e5-small"`, a table over e5's pieces (`model.safetensors`
    /// and `config.json`), whose texts are cut by the tokenizer of the e5 model this binary
    /// carries (a build without it cannot load such a table, and says so); or, when it names
    /// `"parts": ["a", "b"]`, the models in those folders (relative to this one) joined: a
    /// text's vector is theirs side by side, each scaled by 1/√n.
    ///
    /// The identity's model is `dir:<folder name>:<xxh3 of the files>`, so a changed
    /// model gets a new identity. Missing or broken files give [`EmbedError::Load`] naming the
    /// file; so does a tokenizer whose token ids fall outside the embedding table.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::from_folder(dir.as_ref(), true)
    }

    /// [`StaticEmbedder::from_dir`], refusing a joined model unless `may_join` (a part of a
    /// joined model may not be one, which also rules out a model that names itself).
    fn from_folder(dir: &Path, may_join: bool) -> Result<Self, EmbedError> {
        if !dir.is_dir() {
            let reason = if dir.exists() { "not a folder" } else { "no such folder" };
            return Err(EmbedError::Load { path: dir.display().to_string(), reason: reason.to_owned() });
        }
        let read = |name: &str| -> Result<Vec<u8>, EmbedError> {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| EmbedError::Load {
                path: path.display().to_string(),
                reason: if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "missing file (a model2vec folder holds {MODEL_FILE}, {TOKENIZER_FILE} and {CONFIG_FILE})"
                    )
                } else {
                    e.to_string()
                },
            })
        };
        let source = ModelSource::Dir(dir.to_path_buf());
        let name = super::folder_name(dir);
        let config_bytes = read(CONFIG_FILE)?;
        if let Some(parts) = joined_parts(&source, &config_bytes)? {
            if !may_join {
                return Err(source.error(CONFIG_FILE, "a part of a joined model cannot itself be joined"));
            }
            return Self::joined(&name, &config_bytes, &parts);
        }
        if uses_e5_pieces(&config_bytes) {
            let model_bytes = read(MODEL_FILE)?;
            let hash = fingerprint(&model_bytes, &[], &config_bytes);
            let model = load_pieces(&source, model_bytes)?;
            return Ok(Self::new(Backend::Pieces(Arc::new(model)), format!("dir:{name}:{hash:016x}")));
        }
        let model_bytes = read(MODEL_FILE)?;
        let tokenizer_bytes = read(TOKENIZER_FILE)?;
        check_model_files(&source, &tokenizer_bytes, &model_bytes, &config_bytes)?;
        let model = load_model(&source, &tokenizer_bytes, &model_bytes, &config_bytes)?;
        let hash = fingerprint(&model_bytes, &tokenizer_bytes, &config_bytes);
        Ok(Self::new(Backend::Model2Vec(model), format!("dir:{name}:{hash:016x}")))
    }

    /// A model whose vector is its parts' vectors side by side: the folders `parts` names
    /// (relative to its own), each a model of another kind.
    fn joined(name: &str, config: &[u8], parts: &[PathBuf]) -> Result<Self, EmbedError> {
        let mut loaded = Vec::with_capacity(parts.len());
        let mut hasher = Xxh3::new();
        hasher.update(config);
        for part in parts {
            let embedder = Self::from_folder(part, false)?;
            hasher.update(embedder.identity.model.as_bytes());
            loaded.push(embedder);
        }
        let hash = hasher.digest();
        Ok(Self::new(Backend::Joined(loaded.into()), format!("dir:{name}:{hash:016x}")))
    }

    fn new(model: Backend, model_id: String) -> Self {
        let identity =
            EmbedderIdentity { provider: PROVIDER.to_owned(), model: model_id, dimensions: model.dims() };
        Self { model, identity }
    }

    /// The unit vector given to texts without a single known token.
    fn fallback_vector(&self) -> Vec<f32> {
        let mut v = vec![0.0; self.identity.dimensions];
        if let Some(last) = v.last_mut() {
            *last = 1.0;
        }
        v
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        // Only the first 512 tokens count (model2vec's cap, built into `encode_single`); the
        // text is first cut by characters too, so a huge text costs no more than a long one.
        let mut v = match &self.model {
            Backend::Model2Vec(model) => model.encode_single(text),
            Backend::Pieces(model) => model.embed(text),
            Backend::Joined(parts) => {
                // Each part is a unit vector; scaled by 1/√n the whole is one too, and its
                // cosine with another text is the mean of the parts' cosines.
                let scale = 1.0 / (parts.len() as f32).sqrt();
                let mut joined = Vec::with_capacity(self.identity.dimensions);
                for part in parts.iter() {
                    joined.extend(part.embed_one(text)?.into_iter().map(|x| x * scale));
                }
                joined
            }
        };
        let norm_sq: f32 = v.iter().map(|x| x * x).sum();
        if !norm_sq.is_finite() {
            return Err(EmbedError::Failed(format!(
                "model {} produced a non-finite vector (its tables hold NaN or infinite values)",
                self.identity.model
            )));
        }
        if norm_sq == 0.0 {
            return Ok(self.fallback_vector());
        }
        // model2vec-rs normalises already (the piece table does not); this also guards models
        // whose rows are so small that model2vec-rs's 1e-12 floor on the norm kicks in.
        if (norm_sq - 1.0).abs() > 1e-3 {
            let norm = norm_sq.sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
        }
        Ok(v)
    }
}

impl Embedder for StaticEmbedder {
    fn identity(&self) -> EmbedderIdentity {
        self.identity.clone()
    }

    fn embeds_fast(&self) -> bool {
        true
    }

    /// Embeds the texts one after another on the calling thread: each costs microseconds, and
    /// the caller knows better than a hidden thread pool whether to spread a batch over cores.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // A model from a user's folder may trip an assertion deep in the tokenizer; that is a
        // failed embedding, not a reason to take the server down.
        panic::catch_unwind(AssertUnwindSafe(|| texts.iter().map(|text| self.embed_one(text)).collect()))
            .unwrap_or_else(|_| {
                Err(EmbedError::Failed(format!("model {} panicked while embedding", self.identity.model)))
            })
    }
}

/// Where a model's bytes come from, for error messages.
enum ModelSource {
    Builtin,
    Dir(PathBuf),
}

impl ModelSource {
    fn describe(&self) -> String {
        match self {
            ModelSource::Builtin => format!("<built-in model {BUILTIN_MODEL_NAME}>"),
            ModelSource::Dir(dir) => dir.display().to_string(),
        }
    }

    fn file(&self, name: &str) -> String {
        match self {
            ModelSource::Builtin => format!("{}/{name}", self.describe()),
            ModelSource::Dir(dir) => dir.join(name).display().to_string(),
        }
    }

    fn error(&self, name: &str, reason: impl Into<String>) -> EmbedError {
        EmbedError::Load { path: self.file(name), reason: reason.into() }
    }
}

/// Checks a folder's three files before model2vec-rs sees them.
///
/// model2vec-rs trusts that every token id the tokenizer can produce has a row in the
/// embedding table and panics at embedding time when one does not; checking that here turns
/// a mismatched tokenizer into a load error that names the file. The built-in asset skips
/// this (it costs a full parse of tokenizer.json); a unit test holds it to the same checks.
fn check_model_files(
    source: &ModelSource,
    tokenizer: &[u8],
    model: &[u8],
    config: &[u8],
) -> Result<(), EmbedError> {
    match serde_json::from_slice::<Value>(config) {
        Ok(Value::Object(_)) => {}
        Ok(_) => return Err(source.error(CONFIG_FILE, "not a JSON object")),
        Err(e) => return Err(source.error(CONFIG_FILE, format!("invalid JSON: {e}"))),
    }
    let tokenizer_json: Value = serde_json::from_slice(tokenizer)
        .map_err(|e| source.error(TOKENIZER_FILE, format!("invalid JSON: {e}")))?;
    let token_count =
        token_count(&tokenizer_json).ok_or_else(|| source.error(TOKENIZER_FILE, "no vocabulary found"))?;
    let table = read_table_layout(model).map_err(|reason| source.error(MODEL_FILE, reason))?;
    check_token_ids(&table, token_count).map_err(|reason| source.error(MODEL_FILE, reason))
}

/// Parses the three files into a model whose vectors are always L2-normalised, whatever the
/// model's config.json says.
fn load_model(
    source: &ModelSource,
    tokenizer: &[u8],
    model: &[u8],
    config: &[u8],
) -> Result<StaticModel, EmbedError> {
    StaticModel::from_bytes(tokenizer, model, config, Some(true))
        .map_err(|e| EmbedError::Load { path: source.describe(), reason: format!("{e:#}") })
}

/// The part folders of a joined model (`"parts": ["a", "b"]` in its config.json, relative
/// to its folder), or `None` for a model of another kind.
fn joined_parts(source: &ModelSource, config: &[u8]) -> Result<Option<Vec<PathBuf>>, EmbedError> {
    let Some(parts) = serde_json::from_slice::<Value>(config).ok().and_then(|c| c.get("parts").cloned())
    else {
        return Ok(None);
    };
    let ModelSource::Dir(dir) = source else { return Ok(None) };
    let names: Option<Vec<&str>> = parts.as_array().map(|a| a.iter().filter_map(Value::as_str).collect());
    match names {
        Some(names) if !names.is_empty() && names.len() == parts.as_array().map_or(0, Vec::len) => {
            Ok(Some(names.iter().map(|n| dir.join(n)).collect()))
        }
        _ => Err(source.error(CONFIG_FILE, "`parts` must list one or more model folders")),
    }
}

/// Whether a model folder's config.json names e5's tokenizer, which makes it a piece table
/// (`static_e5`) rather than a model2vec model.
fn uses_e5_pieces(config: &[u8]) -> bool {
    serde_json::from_slice::<Value>(config)
        .ok()
        .and_then(|c| c.get("tokenizer").and_then(Value::as_str).map(|t| t == TOKENIZER_NAME))
        .unwrap_or(false)
}

/// A piece table with the tokenizer of the e5 model this binary carries.
fn load_pieces(source: &ModelSource, table: Vec<u8>) -> Result<PieceModel, EmbedError> {
    let e5 = super::builtin_model().ok_or_else(|| {
        source.error(
            CONFIG_FILE,
            format!("this model cuts texts with e5's tokenizer, but {}", super::NO_BUILTIN_E5),
        )
    })?;
    let tokenizer = super::e5_model::shared_builtin(e5)?;
    PieceModel::load(table, tokenizer).map_err(|reason| source.error(MODEL_FILE, reason))
}

/// Number of token ids the tokenizer can produce: one more than its largest id.
fn token_count(tokenizer: &Value) -> Option<usize> {
    let vocab = tokenizer.get("model")?.get("vocab")?;
    let vocab_ids = match vocab {
        // WordPiece, BPE, WordLevel: {"token": id}.
        Value::Object(map) => map.values().filter_map(Value::as_u64).max().map(|id| id as usize + 1),
        // Unigram: [["piece", score], …], ids in order.
        Value::Array(pieces) => Some(pieces.len()),
        _ => None,
    }?;
    let added_ids = tokenizer
        .get("added_tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("id").and_then(Value::as_u64))
        .map(|id| id as usize + 1)
        .max()
        .unwrap_or(0);
    Some(vocab_ids.max(added_ids))
}

/// The parts of a safetensors file that decide which token ids are safe to look up.
struct TableLayout {
    rows: usize,
    /// The optional `mapping` tensor: token id → row.
    mapping: Option<Vec<u64>>,
}

/// Reads the embedding table's shape and the token mapping from a safetensors file, under
/// the tensor names model2vec-rs looks for, and checks that every tensor lies inside the file.
fn read_table_layout(bytes: &[u8]) -> Result<TableLayout, String> {
    let (header, data_start) = safetensors_header(bytes)?;
    let data = &bytes[data_start..];
    let (name, embeddings) = ["embeddings", "0", "embedding.weight"]
        .iter()
        .find_map(|name| header.get(*name).map(|t| (*name, t)))
        .ok_or("no embeddings tensor (looked for `embeddings`, `0`, `embedding.weight`)")?;
    let shape: Vec<usize> = embeddings
        .get("shape")
        .and_then(Value::as_array)
        .map(|dims| dims.iter().filter_map(|d| d.as_u64().map(|d| d as usize)).collect())
        .unwrap_or_default();
    let [rows, cols] = shape[..] else {
        return Err(format!("tensor `{name}` has shape {shape:?}, expected 2-D"));
    };
    if cols == 0 {
        return Err(format!("tensor `{name}` has no columns"));
    }
    let element_size = match embeddings.get("dtype").and_then(Value::as_str) {
        Some("F32") => 4,
        Some("F16") => 2,
        Some("I8") => 1,
        other => {
            return Err(format!("tensor `{name}` has dtype {other:?}, expected F32, F16 or I8"));
        }
    };
    let expected = rows.checked_mul(cols).and_then(|n| n.checked_mul(element_size));
    if expected != Some(tensor_bytes(name, embeddings, data)?.len()) {
        return Err(format!("tensor `{name}` holds the wrong number of bytes for its shape"));
    }

    let mapping = match header.get("mapping") {
        None => None,
        Some(tensor) => Some(read_mapping(tensor_bytes("mapping", tensor, data)?, tensor)?),
    };
    Ok(TableLayout { rows, mapping })
}

/// Decodes the `mapping` tensor (i32 or i64).
fn read_mapping(raw: &[u8], tensor: &Value) -> Result<Vec<u64>, String> {
    // Negative ids become huge and fail the range check in `check_token_ids`, as they should.
    match tensor.get("dtype").and_then(Value::as_str) {
        Some("I64") => Ok(raw
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as u64)
            .collect()),
        Some("I32") => Ok(raw
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")) as i64 as u64)
            .collect()),
        other => Err(format!("tensor `mapping` has dtype {other:?}, expected I32 or I64")),
    }
}

/// Every token id below `token_count` must reach a row of the table.
fn check_token_ids(table: &TableLayout, token_count: usize) -> Result<(), String> {
    match &table.mapping {
        None if table.rows < token_count => Err(format!(
            "embedding table has {} rows but the tokenizer has {token_count} tokens \
             (tokenizer.json belongs to another model?)",
            table.rows
        )),
        None => Ok(()),
        Some(mapping) if mapping.len() < token_count => Err(format!(
            "token mapping has {} entries but the tokenizer has {token_count} tokens",
            mapping.len()
        )),
        Some(mapping) => match mapping.iter().find(|&&row| row >= table.rows as u64) {
            Some(row) => {
                Err(format!("token mapping points at row {row}, past the table's {} rows", table.rows))
            }
            None => Ok(()),
        },
    }
}

/// Fingerprint of a model's three files. Each is prefixed with its length so that moving
/// bytes from one file to the next changes the hash.
fn fingerprint(model: &[u8], tokenizer: &[u8], config: &[u8]) -> u64 {
    let mut hasher = Xxh3::new();
    for bytes in [model, tokenizer, config] {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xxh3 fingerprint of the built-in asset's three files (see [`fingerprint`]). A unit test
    /// checks it, so that changing the asset without renaming it cannot go unnoticed.
    const BUILTIN_FINGERPRINT: u64 = 0xcc2c_dd12_303a_d00c;

    #[test]
    fn builtin_asset_matches_its_recorded_fingerprint() {
        let actual = fingerprint(BUILTIN_MODEL, BUILTIN_TOKENIZER, BUILTIN_CONFIG);
        assert_eq!(
            actual, BUILTIN_FINGERPRINT,
            "assets/static-model changed (fingerprint {actual:#018x}): rename BUILTIN_MODEL_NAME \
             so that existing indexes are rebuilt, then record the new fingerprint"
        );
    }

    #[test]
    fn builtin_asset_passes_the_folder_checks() {
        let source = ModelSource::Builtin;
        check_model_files(&source, BUILTIN_TOKENIZER, BUILTIN_MODEL, BUILTIN_CONFIG).unwrap();
    }

    #[test]
    fn builtin_table_covers_its_tokenizer() {
        let tokenizer: Value = serde_json::from_slice(BUILTIN_TOKENIZER).unwrap();
        let table = read_table_layout(BUILTIN_MODEL).unwrap();
        assert_eq!(Some(table.rows), token_count(&tokenizer));
        assert!(table.mapping.is_none());
    }

    #[test]
    fn truncated_or_garbage_safetensors_are_rejected() {
        for bytes in [&b""[..], b"\x01", b"\xff\xff\xff\xff\xff\xff\xff\xff{}", b"\x02\0\0\0\0\0\0\0[]"] {
            assert!(read_table_layout(bytes).is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn mapping_past_the_table_is_rejected() {
        let layout = TableLayout { rows: 4, mapping: Some(vec![0, 1, 4]) };
        assert!(check_token_ids(&layout, 3).unwrap_err().contains("row 4"));
        let layout = TableLayout { rows: 4, mapping: Some(vec![0, 1, 3]) };
        assert!(check_token_ids(&layout, 3).is_ok());
        assert!(check_token_ids(&layout, 4).is_err());
    }

    #[test]
    fn unigram_and_added_tokens_count_towards_the_vocabulary() {
        let unigram = serde_json::json!({
            "model": {"type": "Unigram", "vocab": [["a", 0.0], ["b", -1.0]]},
            "added_tokens": [{"id": 7, "content": "<x>"}]
        });
        assert_eq!(token_count(&unigram), Some(8));
        let wordpiece = serde_json::json!({"model": {"vocab": {"a": 0, "b": 5}}});
        assert_eq!(token_count(&wordpiece), Some(6));
        assert_eq!(token_count(&serde_json::json!({"model": {}})), None);
    }
}
