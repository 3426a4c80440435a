//! Front matter filters (`--where tags=backup`): a search keeps the chunks of documents
//! whose field has that value, every filter at once.

use std::fmt;
use std::str::FromStr;

use crate::index::metadata;

/// One filter: a front matter field and a value it must have. Both are matched without
/// regard to case; a tag matches with or without its `#`, and a nested tag's parent
/// (`ops` for `ops/storage`) matches it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub key: String,
    pub value: String,
}

/// The most filters one search takes.
pub const MAX_FILTERS: usize = 16;

impl Filter {
    /// The index term this filter matches.
    pub fn term(&self) -> String {
        metadata::term(&self.key, &self.value)
    }
}

impl FromStr for Filter {
    type Err = String;

    fn from_str(s: &str) -> Result<Filter, String> {
        let bad = || format!("`{s}` is not a filter: write FIELD=VALUE, e.g. tags=backup");
        let (key, value) = s.split_once('=').ok_or_else(bad)?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            return Err(bad());
        }
        Ok(Filter { key: key.to_string(), value: value.to_string() })
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// Parses filters as callers give them, refusing more than [`MAX_FILTERS`].
pub fn parse_all<S: AsRef<str>>(filters: &[S]) -> Result<Vec<Filter>, String> {
    if filters.len() > MAX_FILTERS {
        return Err(format!("at most {MAX_FILTERS} filters, got {}", filters.len()));
    }
    filters.iter().map(|f| f.as_ref().parse()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_say_how_to_write_them() {
        let f: Filter = " tags = Backup ".parse().unwrap();
        assert_eq!(
            (f.key.as_str(), f.value.as_str(), f.term()),
            ("tags", "Backup", "tags=backup".to_string())
        );
        assert_eq!("a=b=c".parse::<Filter>().unwrap().value, "b=c");
        for bad in ["tags", "=x", "tags=", " = "] {
            let e = bad.parse::<Filter>().unwrap_err();
            assert!(e.contains("write FIELD=VALUE"), "{e}");
        }
        assert!(parse_all(&vec!["a=b"; 17]).unwrap_err().contains("at most 16"));
    }
}
