//! A process's scratch space: uploads spooled to disk, jobs' working files
//! and the tools' outputs go under `<data_dir>/tmp/<instance>/`, a
//! directory of this process alone, locked while it lives. A process that
//! dies without cleaning up (SIGKILL, power loss) leaves its directory
//! unlocked, and the next process to start on the same data directory
//! removes it: the scratch files of a killed process's uploads and jobs do
//! not pile up. Directories whose lock is held belong to live processes (a
//! `serve` and a `worker` may share a data directory) and are left alone.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// The lock file inside an instance's directory.
const LOCK: &str = ".lock";

/// Makes this process's scratch directory under `data_dir/tmp`, removes
/// those of processes that are gone, and points every temporary file and
/// directory of the process (`tempfile`'s default) there. Called once, when
/// a `serve` or `worker` process starts. Returns the directory and how many
/// stale ones were removed.
pub fn claim(data_dir: &Path) -> io::Result<(PathBuf, usize)> {
    let root = data_dir.join("tmp");
    fs::create_dir_all(&root)?;
    let removed = sweep(&root);
    let dir = tempfile::Builder::new()
        .prefix("process-")
        .tempdir_in(&root)?
        .keep();
    let lock = File::create(dir.join(LOCK))?;
    lock.try_lock().map_err(io::Error::other)?;
    // Held (and so locked) until the process ends.
    std::mem::forget(lock);
    tempfile::env::override_temp_dir(&dir)
        .map_err(|_| io::Error::other("the scratch directory was already set"))?;
    Ok((dir, removed))
}

/// Removes the instance directories under `root` whose lock no process
/// holds (and leftovers of older builds: loose spool files). Returns how
/// many entries went.
fn sweep(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let stale = if path.is_dir() {
            match File::open(path.join(LOCK)) {
                // Free: its process is gone (the lock goes with it).
                Ok(lock) => lock.try_lock().is_ok(),
                // No lock file: a directory that died before taking it.
                Err(e) => e.kind() == io::ErrorKind::NotFound,
            }
        } else {
            true
        };
        let gone = if !stale {
            false
        } else if path.is_dir() {
            fs::remove_dir_all(&path).is_ok()
        } else {
            fs::remove_file(&path).is_ok()
        };
        removed += usize::from(gone);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_processes_directories_go_and_live_ones_stay() {
        let root = tempfile::tempdir().unwrap();
        let live = root.path().join("process-live");
        fs::create_dir_all(&live).unwrap();
        let held = File::create(live.join(LOCK)).unwrap();
        held.try_lock().unwrap();
        fs::write(live.join("upload"), b"in use").unwrap();

        let dead = root.path().join("process-dead");
        fs::create_dir_all(dead.join("job")).unwrap();
        File::create(dead.join(LOCK)).unwrap();
        fs::write(dead.join("job").join("input.wav"), b"left behind").unwrap();
        let unlocked = root.path().join("process-early");
        fs::create_dir_all(&unlocked).unwrap();
        fs::write(root.path().join(".tmpLoose"), b"an old spool file").unwrap();

        assert_eq!(sweep(root.path()), 3);
        assert!(live.join("upload").is_file(), "a live process's files stay");
        assert!(!dead.exists() && !unlocked.exists());
        assert!(!root.path().join(".tmpLoose").exists());
        drop(held);
        assert_eq!(sweep(root.path()), 1, "free once its process is gone");
    }
}
