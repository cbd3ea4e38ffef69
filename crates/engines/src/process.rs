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
