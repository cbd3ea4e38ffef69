//! Running tools as subprocesses from blocking code: input on stdin, output
//! from stdout, a time limit, and the process killed when the limit passes.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Why a subprocess failed. The messages never hold the tool's output or
/// its arguments (paths of the server's files): `stderr` is kept for the
/// caller to classify and is logged where the failure happens.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("{program} is not installed or cannot start: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} did not finish within {seconds} s")]
    Timeout { program: String, seconds: u64 },
    #[error("{program} failed ({status})")]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error("io with {program}: {source}")]
    Io {
        program: String,
        source: std::io::Error,
    },
}

/// Limits of every tool we run, set by `prlimit` (util-linux) before the
/// tool starts: address space, CPU seconds (the wall-clock limit times the
/// cores a tool may use, so the watchdog usually acts first) and the size
/// of any file it writes. A tool fed hostile input dies at these instead of
/// taking the machine.
const MAX_ADDRESS_SPACE: u64 = 6 << 30;
const MAX_FILE_SIZE: u64 = 16 << 30;
const CORES: u64 = 4;

/// `cmd` run under `prlimit` with the limits above (unchanged where
/// `prlimit` is missing).
fn limited(cmd: Command, timeout: Duration) -> Command {
    static PRLIMIT: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        Command::new("prlimit")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !*PRLIMIT {
        return cmd;
    }
    let cpu = timeout
        .as_secs()
        .max(1)
        .saturating_mul(CORES)
        .saturating_add(5);
    let mut wrapped = Command::new("prlimit");
    wrapped
        .arg(format!("--as={MAX_ADDRESS_SPACE}"))
        .arg(format!("--cpu={cpu}"))
        .arg(format!("--fsize={MAX_FILE_SIZE}"))
        .arg("--")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    wrapped
}

/// Runs `cmd` with `input` on stdin and returns stdout.
pub fn run(cmd: Command, input: &[u8], timeout: Duration) -> Result<Vec<u8>, ProcessError> {
    let mut tool = Piped::spawn(cmd, timeout)?;
    let mut stdin = tool.stdin.take().expect("piped stdin");
    let mut stdout = tool.stdout.take().expect("piped stdout");
    let input = input.to_vec();
    // The writer runs beside the reader so neither pipe can fill up and
    // stall the tool.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut out = Vec::new();
    let read = stdout.read_to_end(&mut out);
    let _ = writer.join();
    drop(stdout);
    // The tool's own failure (or its time limit) explains a failed read.
    tool.finish()?;
    read.map_err(|source| ProcessError::Io {
        program: tool.program.clone(),
        source,
    })?;
    Ok(out)
}

/// A tool whose stdin or stdout the caller streams (frames in or out), so
/// nothing is held whole in memory. Killed when its time limit passes or
/// when it is dropped unfinished; its stderr is kept for the error message.
pub struct Piped {
    program: String,
    child: std::sync::Arc<std::sync::Mutex<std::process::Child>>,
    pub stdin: Option<std::process::ChildStdin>,
    pub stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    done: Option<std::sync::mpsc::Sender<()>>,
    timed_out: std::sync::Arc<std::sync::atomic::AtomicBool>,
    timeout: Duration,
}

impl Piped {
    /// Starts `cmd` with stdin and stdout piped, under resource limits.
    pub fn spawn(cmd: Command, timeout: Duration) -> Result<Self, ProcessError> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = limited(cmd, timeout)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                program: program.clone(),
                source,
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = err.read_to_end(&mut buf);
            buf
        });
        let child = std::sync::Arc::new(std::sync::Mutex::new(child));
        let timed_out = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (done, wait) = std::sync::mpsc::channel::<()>();
        {
            let (child, timed_out) = (child.clone(), timed_out.clone());
            // The watchdog: kills the tool when the limit passes first.
            std::thread::spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(timeout)
                {
                    timed_out.store(true, std::sync::atomic::Ordering::Relaxed);
                    if let Ok(mut c) = child.lock() {
                        let _ = c.kill();
                    }
                }
            });
        }
        Ok(Self {
            program,
            child,
            stdin,
            stdout,
            stderr: Some(stderr),
            done: Some(done),
            timed_out,
            timeout,
        })
    }

    /// The error to report for a failed read or write: the tool's own
    /// message when it failed, or its time limit.
    pub fn io_error(&mut self, source: std::io::Error) -> ProcessError {
        match self.finish() {
            Err(e) => e,
            Ok(()) => ProcessError::Io {
                program: self.program.clone(),
                source,
            },
        }
    }

    /// Closes stdin, waits for the tool and reports how it ended.
    pub fn finish(&mut self) -> Result<(), ProcessError> {
        self.stdin.take();
        self.stdout.take();
        // Polled, so the watchdog can take the lock and kill a stuck tool.
        let status = loop {
            let polled = match self.child.lock() {
                Ok(mut c) => c.try_wait(),
                Err(_) => Err(std::io::Error::other("poisoned")),
            };
            match polled {
                Ok(Some(status)) => break status,
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(source) => {
                    return Err(ProcessError::Io {
                        program: self.program.clone(),
                        source,
                    })
                }
            }
        };
        self.done.take();
        let err = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        if self.timed_out.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(ProcessError::Timeout {
                program: self.program.clone(),
                seconds: self.timeout.as_secs(),
            });
        }
        if !status.success() {
            let stderr = String::from_utf8_lossy(&err);
            let stderr: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
            tracing::warn!(program = %self.program, %status, stderr = %stderr, "tool failed");
            return Err(ProcessError::Failed {
                program: self.program.clone(),
                status: status.to_string(),
                stderr,
            });
        }
        Ok(())
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        if self.done.is_some() {
            if let Ok(mut c) = self.child.lock() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tools start under the limits: the shell reports them from inside.
    #[test]
    fn tools_run_under_resource_limits() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "ulimit -v; ulimit -t; ulimit -f"]);
        let out = run(cmd, b"", Duration::from_secs(10)).unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        // Address space and file size in KiB (dash) or 1024-byte blocks.
        assert_eq!(lines[0], (MAX_ADDRESS_SPACE / 1024).to_string(), "{out}");
        assert_eq!(lines[1], (10 * CORES + 5).to_string(), "{out}");
        let fsize: u64 = lines[2].parse().unwrap();
        assert!(
            fsize == MAX_FILE_SIZE / 1024 || fsize == MAX_FILE_SIZE / 512,
            "{out}"
        );
    }

    /// A failed tool's message says which tool and how it ended, never what
    /// it printed (which names the server's files).
    #[test]
    fn failures_never_carry_tool_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo /srv/secret/path >&2; exit 3"]);
        let e = run(cmd, b"", Duration::from_secs(10)).unwrap_err();
        let message = e.to_string();
        assert!(!message.contains("/srv"), "{message}");
        assert!(message.starts_with("sh failed"), "{message}");
        match e {
            ProcessError::Failed { stderr, .. } => assert!(stderr.contains("/srv/secret")),
            other => panic!("{other:?}"),
        }
    }
}
