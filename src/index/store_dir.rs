//! The chunk store's directory: tantivy's own for everything but reading, where files are
//! read with positioned reads instead of a memory map. A mapped file that is cut short or
//! rewritten under a running process (a sync tool, a disk fault, another program) kills it
//! with SIGBUS at the next search; read this way, the same damage is an IO error that the
//! search reports, and the process goes on serving.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::HasLen;
use tantivy::directory::error::{DeleteError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback, WatchHandle,
    WritePtr,
};

/// Tantivy's directory with reads by `pread`.
#[derive(Debug, Clone)]
pub struct ReadingDirectory {
    inner: MmapDirectory,
    root: PathBuf,
}

impl ReadingDirectory {
    pub fn open(root: &Path) -> Result<ReadingDirectory, tantivy::directory::error::OpenDirectoryError> {
        Ok(ReadingDirectory { inner: MmapDirectory::open(root)?, root: root.to_path_buf() })
    }
}

/// One open file of the store; the open descriptor keeps a file removed meanwhile readable.
#[derive(Debug)]
struct ReadHandle {
    file: File,
    len: usize,
    path: PathBuf,
}

impl HasLen for ReadHandle {
    fn len(&self) -> usize {
        self.len
    }
}

impl FileHandle for ReadHandle {
    fn read_bytes(&self, range: Range<usize>) -> io::Result<OwnedBytes> {
        if range.end > self.len || range.start > range.end {
            return Err(io::Error::other(format!(
                "{}: bytes {range:?} asked of a file of {}",
                self.path.display(),
                self.len
            )));
        }
        let mut buffer = vec![0u8; range.len()];
        self.file.read_exact_at(&mut buffer, range.start as u64).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "{}: {e} (the file was changed under the index: it is rebuilt at the next open)",
                    self.path.display()
                ),
            )
        })?;
        Ok(OwnedBytes::new(buffer))
    }
}

impl Directory for ReadingDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let full = self.root.join(path);
        let file = File::open(&full).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => OpenReadError::FileDoesNotExist(path.to_path_buf()),
            _ => OpenReadError::wrap_io_error(e, path.to_path_buf()),
        })?;
        let len = file.metadata().map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()))?.len();
        Ok(Arc::new(ReadHandle { file, len: len as usize, path: full }))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, tantivy::directory::error::LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_cut_short_under_an_open_handle_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("seg.idx"), vec![7u8; 8192]).unwrap();
        let directory = ReadingDirectory::open(dir.path()).unwrap();
        let handle = directory.get_file_handle(Path::new("seg.idx")).unwrap();
        assert_eq!(handle.read_bytes(4096..4100).unwrap().as_slice(), &[7, 7, 7, 7]);
        std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("seg.idx"))
            .unwrap()
            .set_len(100)
            .unwrap();
        let e = handle.read_bytes(4096..4100).unwrap_err();
        assert!(e.to_string().contains("changed under the index"), "{e}");
        assert!(matches!(
            directory.get_file_handle(Path::new("gone.idx")),
            Err(OpenReadError::FileDoesNotExist(_))
        ));
    }
}
