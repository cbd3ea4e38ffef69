//! ffmpeg encoders started before they are needed. Starting ffmpeg takes
//! about 0.1 s of a core (loading its libraries: `time ffmpeg -version`,
//! 0.11 s on the benchmark VM), which a streamed response would otherwise
//! wait for before its first audio. One started process is kept ready for
//! each of the last [`KINDS`] argument lists used; a stream takes it, and
//! starts another for the next once its own first audio is out. A process serves one stream and is
//! never given back, so nothing passes from one job to another; its
//! arguments are ours (formats and rates), never a request's text.

use std::collections::VecDeque;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use mediagen_media::process::{Piped, ProcessError, Scope};

/// Argument lists (formats and rates) with a process kept ready.
const KINDS: usize = 4;

static READY: Mutex<VecDeque<(Vec<String>, Piped)>> = Mutex::new(VecDeque::new());

fn start(args: &[String]) -> Result<Piped, ProcessError> {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(args).stderr(Stdio::null());
    Piped::spawn_kept(cmd)
}

/// A taken process, in the taking job's scope (its cancel kills it):
/// killed (and reaped) when dropped.
pub struct Process(Piped);

impl Process {
    /// Its stdin, the first time.
    pub fn stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.0.stdin.take()
    }

    /// Its stdout, the first time.
    pub fn stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.0.stdout.take()
    }

    pub fn id(&self) -> u32 {
        self.0.group()
    }
}

/// An ffmpeg process running with `args`, its stdin and stdout piped: the
/// one kept ready for them if it is still running, else one started now.
pub fn take(args: Vec<String>, scope: &Scope) -> Result<Process, ProcessError> {
    let ready = {
        let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
        let at = ready.iter().position(|(a, _)| *a == args);
        at.and_then(|i| ready.remove(i)).map(|(_, child)| child)
    };
    let mut child = match ready.filter(Piped::is_running) {
        Some(child) => child,
        None => start(&args)?,
    };
    child.join_scope(scope);
    Ok(Process(child))
}

/// Starts a process with `args` for the next [`take`] (on a thread of its
/// own; nothing if one is kept ready already). A stream calls it once its
/// first audio is out: the start then takes no core from the synthesis of
/// the first sentence, and is done (about 0.1 s) before a request sent
/// when this stream ends would need it.
pub fn replenish(args: Vec<String>) {
    std::thread::spawn(move || {
        if let Ok(next) = start(&args) {
            keep(args, next);
        }
    });
}

/// Keeps `child` ready for `args` (unless one already is), ending the
/// oldest kept process beyond [`KINDS`].
fn keep(args: Vec<String>, child: Piped) {
    let mut ready = READY.lock().unwrap_or_else(|e| e.into_inner());
    if ready.iter().any(|(a, _)| *a == args) {
        drop(ready);
        drop(child);
        return;
    }
    ready.push_back((args, child));
    let mut ended = Vec::new();
    while ready.len() > KINDS {
        ended.extend(ready.pop_front());
    }
    drop(ready);
    drop(ended);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn take_here(args: Vec<String>) -> Result<Process, ProcessError> {
        take(args, &Scope::new())
    }

    /// A taken process encodes what it is fed; once replenished, the next
    /// caller with the same arguments gets a different, already running
    /// process; at most [`KINDS`] are kept.
    #[test]
    fn processes_are_ready_and_used_once() {
        let args = |rate: u32| -> Vec<String> {
            ["-nostdin", "-loglevel", "error", "-f", "s16le", "-ar"]
                .iter()
                .map(|s| s.to_string())
                .chain([rate.to_string()])
                .chain(["-ac", "1", "-i", "pipe:0", "-f", "s16le", "pipe:1"].map(String::from))
                .collect()
        };
        let mut first = take_here(args(8000)).unwrap();
        replenish(args(8000));
        let pcm: Vec<u8> = (0..8000i16).flat_map(|i| i.to_le_bytes()).collect();
        first.stdin().unwrap().write_all(&pcm).unwrap();
        let mut out = Vec::new();
        first.stdout().unwrap().read_to_end(&mut out).unwrap();
        assert_eq!(out, pcm);
        // The replacement is started on a thread: wait for it.
        let kept = || {
            READY
                .lock()
                .unwrap()
                .iter()
                .filter(|(a, _)| *a == args(8000))
                .map(|(_, c)| c.group())
                .collect::<Vec<_>>()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while kept().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let ready = kept();
        assert_eq!(ready.len(), 1);
        let second = take_here(args(8000)).unwrap();
        assert_eq!(second.id(), ready[0]);
        assert_ne!(second.id(), first.id());
        for rate in [11_025, 16_000, 22_050, 24_000, 44_100] {
            drop(take_here(args(rate)).unwrap());
            replenish(args(rate));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(READY.lock().unwrap().len() <= KINDS);
    }
}
