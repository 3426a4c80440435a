//! The safetensors layout, read just far enough for the static models: the header, and
//! each tensor's bytes checked to lie inside the file.

use serde_json::Value;

/// A safetensors file's header and where its data section starts, with every tensor
/// checked to lie inside the file.
pub(super) fn safetensors_header(bytes: &[u8]) -> Result<(Value, usize), String> {
    const BROKEN: &str = "not a safetensors file (header is truncated or malformed)";
    let header_len =
        bytes.get(..8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or(BROKEN)?;
    let data_start = usize::try_from(header_len)
        .ok()
        .and_then(|len| len.checked_add(8))
        .filter(|&end| end <= bytes.len())
        .ok_or(BROKEN)?;
    let header: Value = serde_json::from_slice(&bytes[8..data_start]).map_err(|_| BROKEN)?;
    let tensors = header.as_object().ok_or(BROKEN)?;
    let data = &bytes[data_start..];
    for (name, tensor) in tensors.iter().filter(|(name, _)| *name != "__metadata__") {
        tensor_bytes(name, tensor, data)?;
    }
    Ok((header, data_start))
}

/// The bytes of one tensor, checked to lie inside the data section.
pub(super) fn tensor_bytes<'a>(name: &str, tensor: &Value, data: &'a [u8]) -> Result<&'a [u8], String> {
    let offsets: Vec<usize> = tensor
        .get("data_offsets")
        .and_then(Value::as_array)
        .map(|o| o.iter().filter_map(|x| x.as_u64().map(|x| x as usize)).collect())
        .unwrap_or_default();
    match offsets[..] {
        [start, end] if start <= end && end <= data.len() => Ok(&data[start..end]),
        _ => Err(format!("tensor `{name}` lies outside the file (truncated download?)")),
    }
}
