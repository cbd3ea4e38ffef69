//! Running tools as subprocesses from blocking code: input on stdin, output
//! from stdout, a time limit, and the process killed when the limit passes.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why a subprocess failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("{program} is not installed or cannot start: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} did not finish within {seconds} s")]
    Timeout { program: String, seconds: u64 },
    #[error("{program} failed ({status}): {stderr}")]
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

/// Runs `cmd` with `input` on stdin and returns stdout.
pub fn run(mut cmd: Command, input: &[u8], timeout: Duration) -> Result<Vec<u8>, ProcessError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let io_err = |source| ProcessError::Io {
        program: program.clone(),
        source,
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ProcessError::Spawn {
            program: program.clone(),
            source,
        })?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let input = input.to_vec();
    // Writer and readers run beside each other so neither pipe can fill up
    // and stall the tool.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).map(|_| buf)
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io_err)? {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ProcessError::Timeout {
                program,
                seconds: timeout.as_secs(),
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = writer.join();
    let out = out_reader
        .join()
        .unwrap_or_else(|_| Ok(Vec::new()))
        .map_err(io_err)?;
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        let stderr = String::from_utf8_lossy(&err);
        let stderr: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
        return Err(ProcessError::Failed {
            program,
            status: status.to_string(),
            stderr,
        });
    }
    Ok(out)
}

/// A running tool whose stdout is read as it comes (for outputs too large
/// to hold at once). A watchdog kills it when the time limit passes, and
/// dropping the stream kills it too.
pub struct OutputStream {
    program: String,
    child: std::sync::Arc<std::sync::Mutex<std::process::Child>>,
    stdout: std::process::ChildStdout,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    done: Option<std::sync::mpsc::Sender<()>>,
    timed_out: std::sync::Arc<std::sync::atomic::AtomicBool>,
    timeout: Duration,
}

/// Starts `cmd` with no input and its stdout to be read from the stream.
pub fn spawn_reader(mut cmd: Command, timeout: Duration) -> Result<OutputStream, ProcessError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ProcessError::Spawn {
            program: program.clone(),
            source,
        })?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let stderr = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let child = std::sync::Arc::new(std::sync::Mutex::new(child));
    let timed_out = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (done, stop) = std::sync::mpsc::channel::<()>();
    {
        let child = child.clone();
        let timed_out = timed_out.clone();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(timeout) {
                timed_out.store(true, std::sync::atomic::Ordering::Relaxed);
                if let Ok(mut c) = child.lock() {
                    let _ = c.kill();
                }
            }
        });
    }
    Ok(OutputStream {
        program,
        child,
        stdout,
        stderr: Some(stderr),
        done: Some(done),
        timed_out,
        timeout,
    })
}

impl OutputStream {
    /// Reads up to `buf.len()` bytes; 0 at the end of the output. At the
    /// end, a tool that failed or ran out of time is an error.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, ProcessError> {
        let n = self.stdout.read(buf).map_err(|source| ProcessError::Io {
            program: self.program.clone(),
            source,
        })?;
        if n == 0 {
            self.finish()?;
        }
        Ok(n)
    }

    fn finish(&mut self) -> Result<(), ProcessError> {
        let status = self
            .child
            .lock()
            .map_err(|_| ProcessError::Io {
                program: self.program.clone(),
                source: std::io::Error::other("poisoned"),
            })?
            .wait()
            .map_err(|source| ProcessError::Io {
                program: self.program.clone(),
                source,
            })?;
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
            return Err(ProcessError::Failed {
                program: self.program.clone(),
                status: status.to_string(),
                stderr: stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / "),
            });
        }
        Ok(())
    }
}

impl Drop for OutputStream {
    fn drop(&mut self) {
        self.done.take();
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
