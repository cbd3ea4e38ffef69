//! The workers' scratch disk: a small tmpfs (mounted when the test runs as
//! root, as CI does) that the bench fills to the last byte and empties.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::faults::as_root;

pub struct ScratchDisk {
    dir: tempfile::TempDir,
    pub mounted: bool,
}

impl ScratchDisk {
    /// A 256 MiB tmpfs, or a plain directory (that cannot be filled) where
    /// mounting is not allowed; `mounted` says which.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mounted = as_root()
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=256m", "mediagen-scratch"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
        Self { dir, mounted }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn filler(&self) -> PathBuf {
        self.dir.path().join("filler")
    }

    /// Writes until the disk refuses: no byte is left. The bytes written.
    pub fn fill(&self) -> u64 {
        assert!(self.mounted, "only a disk of the test's own is filled");
        let mut file = std::fs::File::create(self.filler()).unwrap();
        let block = vec![0u8; 1 << 20];
        let mut written = 0u64;
        loop {
            match file.write(&block) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n as u64,
            }
        }
        written
    }

    pub fn empty(&self) {
        let _ = std::fs::remove_file(self.filler());
    }
}

impl Drop for ScratchDisk {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}
