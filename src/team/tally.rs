//! What the team cache did for one index, kept beside it (`team.json`) for `status`: how
//! many vectors and snippets came from the team and how many were made here.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's name in the index folder.
pub const FILE_NAME: &str = "team.json";

/// Counts since the index's model last changed (a new model starts from zero).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// The model the vector counts are of.
    pub model: String,
    pub vectors_from_team: u64,
    pub vectors_computed: u64,
    pub snippets_from_team: u64,
    pub snippets_written: u64,
}

impl Tally {
    /// The counts kept in `dir`, or zeros (no file, another model, or a damaged file: it
    /// is only a tally).
    pub fn load(dir: &Path, model: &str) -> Tally {
        std::fs::read(dir.join(FILE_NAME))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Tally>(&bytes).ok())
            .filter(|t| t.model == model)
            .unwrap_or_else(|| Tally { model: model.to_string(), ..Tally::default() })
    }

    /// Adds `more` to the counts in `dir` (written whole and renamed into place).
    pub fn add(dir: &Path, more: &Tally) -> std::io::Result<()> {
        let mut tally = Tally::load(dir, &more.model);
        tally.vectors_from_team += more.vectors_from_team;
        tally.vectors_computed += more.vectors_computed;
        tally.snippets_from_team += more.snippets_from_team;
        tally.snippets_written += more.snippets_written;
        let temp = dir.join(format!("{FILE_NAME}.tmp"));
        std::fs::write(&temp, serde_json::to_vec(&tally).map_err(std::io::Error::other)?)?;
        std::fs::rename(temp, dir.join(FILE_NAME))
    }

    /// Nothing counted.
    pub fn is_empty(&self) -> bool {
        self.vectors_from_team + self.vectors_computed + self.snippets_from_team + self.snippets_written == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_model_and_a_damaged_file_is_zero() {
        let dir = tempfile::tempdir().unwrap();
        let more =
            Tally { model: "e5/x".into(), vectors_from_team: 3, vectors_computed: 2, ..Tally::default() };
        Tally::add(dir.path(), &more).unwrap();
        Tally::add(dir.path(), &more).unwrap();
        let t = Tally::load(dir.path(), "e5/x");
        assert_eq!((t.vectors_from_team, t.vectors_computed), (6, 4));
        assert!(Tally::load(dir.path(), "e5/y").is_empty());
        std::fs::write(dir.path().join(FILE_NAME), b"{not json").unwrap();
        assert!(Tally::load(dir.path(), "e5/x").is_empty());
    }
}
