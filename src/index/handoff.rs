//! Files handed to the writer: a process that may only read the index (a second editor on
//! the folder) hands the files its user saved to the process that writes it, through
//! `handed-over` in the index folder, one path a line. The writer takes them between its
//! jobs and indexes them at once, as if it had been told of the saves itself. Both sides
//! hold the file's lock while they touch it, so no line is lost between a reader's append
//! and the writer's read and truncation.

use std::fs::OpenOptions;
use std::io::{Read, Write};

use super::{Index, IndexError, io_err};

impl Index {
    /// Hands these saved files (absolute paths) to the process that writes the index.
    pub fn hand_over(&self, paths: &[String]) -> Result<(), IndexError> {
        let path = self.layout.handed_over();
        let lines: String = paths.iter().filter(|p| !p.contains('\n')).map(|p| format!("{p}\n")).collect();
        if lines.is_empty() {
            return Ok(());
        }
        let mut file = OpenOptions::new().create(true).append(true).open(&path).map_err(io_err(&path))?;
        file.lock().map_err(io_err(&path))?;
        file.write_all(lines.as_bytes()).map_err(io_err(&path))
    }

    /// The files other processes handed over since the last call, each once, in the order
    /// given; nothing for a reader. A missing or empty file costs one `stat`.
    pub fn take_handed_over(&self) -> Result<Vec<String>, IndexError> {
        let path = self.layout.handed_over();
        if self.writer.is_none() || std::fs::metadata(&path).map_or(true, |m| m.len() == 0) {
            return Ok(Vec::new());
        }
        let mut file = OpenOptions::new().read(true).write(true).open(&path).map_err(io_err(&path))?;
        file.lock().map_err(io_err(&path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io_err(&path))?;
        file.set_len(0).map_err(io_err(&path))?;
        let mut seen = std::collections::HashSet::new();
        Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| !line.is_empty() && seen.insert(line.to_string()))
            .map(str::to_string)
            .collect())
    }
}
