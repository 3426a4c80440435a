//! Byte offset to 1-based line number, with `\n` as the line separator.

/// The start offsets of every line of a text, for binary search.
pub(crate) struct LineIndex {
    /// Offsets just after each `\n`, in order.
    breaks: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let breaks = text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i + 1).collect();
        LineIndex { breaks }
    }

    /// The 1-based line holding the byte at `offset`.
    pub(crate) fn line_of(&self, offset: usize) -> u32 {
        let line = self.breaks.partition_point(|&start| start <= offset) + 1;
        u32::try_from(line).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_belongs_to_the_line_it_ends() {
        let index = LineIndex::new("ab\ncd\r\n\ne");
        assert_eq!(index.line_of(0), 1);
        assert_eq!(index.line_of(2), 1);
        assert_eq!(index.line_of(3), 2);
        assert_eq!(index.line_of(6), 2);
        assert_eq!(index.line_of(7), 3);
        assert_eq!(index.line_of(8), 4);
    }
}
