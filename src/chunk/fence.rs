//! The fences of fenced code blocks, read line by line as CommonMark reads them, for what
//! looks at a chunk's lines without parsing its document: the chunker's overlap and the
//! previews of hits. The detection of a chunk's language (`analysis`, which the layers keep
//! from importing the chunker) reads fences by the same rule.
//!
//! A fence is a run of three or more backticks or tildes; a block opened by four backticks
//! (to show a markdown sample that holds a fence of three) closes only at a line of four or
//! more, and a line such as ```` ```js ```` inside it is code. Indentation is not weighed:
//! a chunk's lines come without the list items around them, whose indentation a fence
//! follows.

/// The fence that opened a fenced code block: its mark and how many of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    mark: char,
    len: usize,
}

impl Fence {
    /// The fence that `line` opens a block with: after blanks, three or more backticks or
    /// tildes, then an info string (`rust`, `sh title="x"`), which after backticks holds no
    /// backtick (```` ```code``` ```` starts a line with inline code, not a block).
    pub fn opened_by(line: &str) -> Option<Fence> {
        let line = line.trim_start();
        let mark = line.chars().next().filter(|c| matches!(c, '`' | '~'))?;
        let len = line.len() - line.trim_start_matches(mark).len();
        let info = &line[len..];
        (len >= 3 && !(mark == '`' && info.contains('`'))).then_some(Fence { mark, len })
    }

    /// Whether `line` closes the block this fence opened: after blanks, at least as many of
    /// the same mark, and nothing after them but blanks.
    pub fn closed_by(self, line: &str) -> bool {
        let line = line.trim();
        line.len() >= self.len && line.chars().all(|c| c == self.mark)
    }
}

#[cfg(test)]
mod tests {
    use super::Fence;

    #[test]
    fn a_block_closes_at_a_fence_of_its_mark_at_least_as_long() {
        let three = Fence::opened_by("```rust").unwrap();
        assert!(three.closed_by("```"));
        assert!(three.closed_by("  ````  \r"));
        assert!(!three.closed_by("```js"), "a fence with an info string opens, never closes");
        assert!(!three.closed_by("~~~"));
        let four = Fence::opened_by("````markdown").unwrap();
        assert!(!four.closed_by("```"), "a sample's fence of three is code");
        assert!(four.closed_by("````"));
        let tilde = Fence::opened_by("   ~~~ python").unwrap();
        assert!(!tilde.closed_by("```"));
        assert!(tilde.closed_by("~~~~"));
        assert!(Fence::opened_by("~~~`info` with backticks").is_some());
        for not_a_fence in ["``", "```code``` then text", "text ```", "", "-~~~"] {
            assert_eq!(Fence::opened_by(not_a_fence), None, "{not_a_fence:?}");
        }
    }
}
