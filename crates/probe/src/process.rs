//! The supervisor of every subprocess: tools run from blocking code with
//! input on stdin and output from stdout, each in a process group of its
//! own under resource limits and a time limit, and the whole group killed
//! when the limit passes, when its handle is dropped, or when the
//! [`Scope`] it was started in (a job) is cancelled. Nothing else in the
//! workspace starts a process (`no_process_is_started_elsewhere`).

use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The work one job started: the process groups of its tools, killed all
/// at once by [`Scope::cancel`] (cancel, time limit, lost lease). Blocking
/// code runs in a scope by entering it ([`Scope::enter`]); every tool it
/// starts from that thread belongs to it, and a cancelled scope starts
/// none.
#[derive(Clone, Default)]
pub struct Scope(Arc<ScopeState>);

#[derive(Default)]
struct ScopeState {
    /// What the work is (a job's id), for [`groups_labelled`].
    label: String,
    cancelled: AtomicBool,
    groups: Mutex<Vec<u32>>,
    /// What stops work running inside this process now (an engine call's
    /// terminate flag), by the number of its [`OnCancel`].
    stoppers: Mutex<Vec<(u64, Stopper)>>,
}

type Stopper = Box<dyn Fn() + Send + Sync>;

/// Numbers the stoppers of [`on_cancel_here`].
static NEXT_STOPPER: AtomicU64 = AtomicU64::new(0);

/// The process groups of every scope, by their scope's label.
static LIVE: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());

/// The process groups running now for the scope labelled `label` (a job's
/// id): what a test counts to see that a cancel reached the work.
pub fn groups_labelled(label: &str) -> Vec<u32> {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(_, l)| l == label)
        .map(|(g, _)| *g)
        .collect()
}

thread_local! {
    static CURRENT: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// The scope a thread is in until this is dropped.
pub struct Entered(Option<Scope>);

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl Scope {
    pub fn new() -> Self {
        Self::default()
    }

    /// A scope for the work named `label` (a job's id).
    pub fn labelled(label: &str) -> Self {
        Self(Arc::new(ScopeState {
            label: label.to_owned(),
            ..ScopeState::default()
        }))
    }

    /// Runs this thread's tools in this scope until the guard drops.
    pub fn enter(&self) -> Entered {
        Entered(CURRENT.with(|c| c.borrow_mut().replace(self.clone())))
    }

    /// The calling thread's scope.
    fn current() -> Option<Scope> {
        CURRENT.with(|c| c.borrow().clone())
    }

    /// Stops the scope's work: every tool it runs is killed (its whole
    /// process group) and no new one starts.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let groups = self.0.groups.lock().unwrap_or_else(|e| e.into_inner());
        for &group in groups.iter() {
            kill_group(group);
        }
        drop(groups);
        // Under the lock `on_cancel_here` registers with: a stopper is
        // either called here or, registered after, called at once there.
        let stoppers = self.0.stoppers.lock().unwrap_or_else(|e| e.into_inner());
        for (_, stop) in stoppers.iter() {
            stop();
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// The process groups of the tools running in this scope now.
    pub fn groups(&self) -> Vec<u32> {
        self.0
            .groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes a started group in; a scope cancelled meanwhile kills it at
    /// once (under the same lock as `cancel`, so none slips through).
    fn adopt(&self, group: u32) {
        let mut groups = self.0.groups.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_cancelled() {
            kill_group(group);
        }
        groups.push(group);
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((group, self.0.label.clone()));
    }

    fn release(&self, group: u32) {
        self.0
            .groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|g| *g != group);
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(g, _)| *g != group);
    }
}

/// True when the calling thread works inside a scope that was cancelled
/// (its job's cancel, time limit or lost lease): engine loops check it
/// between units of work, whatever their callers ask.
pub fn cancelled_here() -> bool {
    Scope::current().is_some_and(|s| s.is_cancelled())
}

/// Keeps a stopper registered with its scope until dropped.
pub struct OnCancel(Option<(Scope, u64)>);

impl Drop for OnCancel {
    fn drop(&mut self) {
        if let Some((scope, id)) = self.0.take() {
            scope
                .0
                .stoppers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|(n, _)| *n != id);
        }
    }
}

/// Has `stop` called when the calling thread's scope is cancelled, for as
/// long as the returned guard lives: how a cancel reaches into one long
/// call of an engine inside this process (ONNX Runtime's terminate flag),
/// where a loop's check between calls would come too late. Called at once
/// when the scope is already cancelled; nothing happens outside a scope.
pub fn on_cancel_here(stop: impl Fn() + Send + Sync + 'static) -> OnCancel {
    let Some(scope) = Scope::current() else {
        return OnCancel(None);
    };
    let id = NEXT_STOPPER.fetch_add(1, Ordering::Relaxed);
    let mut stoppers = scope.0.stoppers.lock().unwrap_or_else(|e| e.into_inner());
    if scope.is_cancelled() {
        stop();
    }
    stoppers.push((id, Box::new(stop)));
    drop(stoppers);
    OnCancel(Some((scope, id)))
}

/// `work` made to run in the calling thread's scope on the thread that
/// runs it (a thread a job's work starts: its tools stay the job's).
pub fn in_this_scope<R>(work: impl FnOnce() -> R + Send) -> impl FnOnce() -> R + Send {
    let scope = Scope::current();
    move || {
        let _entered = scope.as_ref().map(Scope::enter);
        work()
    }
}

/// SIGKILL to every process of group `group` (a tool and its children).
fn kill_group(group: u32) {
    let pid = i32::try_from(group).ok().filter(|g| *g > 1);
    if let Some(pid) = pid.and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// True while any process of group `group` exists (zombies aside).
pub fn group_alive(group: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces and parens.
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
    })
}

/// Why a subprocess failed. The messages never name the tool, its exit
/// status, its output or its arguments (paths of the server's files): they
/// reach clients in job errors and webhooks. `program`, `status` and
/// `stderr` are kept for the caller to classify and are logged where the
/// failure happens.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("a media tool this server needs could not start")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("the work did not finish within {seconds} s")]
    Timeout { program: String, seconds: u64 },
    #[error("the input could not be processed (damaged, truncated or not what it claims to be)")]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error("the media could not be read through")]
    Io {
        program: String,
        source: std::io::Error,
    },
    /// The scope it ran in was cancelled: it was killed, or never started.
    #[error("cancelled")]
    Cancelled,
}

/// Limits of every tool we run, set by `prlimit` (util-linux) before the
/// tool starts: address space, CPU seconds (the wall-clock limit times the
/// cores a tool may use, so the watchdog usually acts first) and the size
/// of any file it writes. A tool fed hostile input dies at these instead of
/// taking the machine.
const MAX_ADDRESS_SPACE: u64 = 6 << 30;
const MAX_FILE_SIZE: u64 = 16 << 30;
const CORES: u64 = 4;
/// The time limit of a kept tool (a shared engine process, an encoder kept
/// ready): none to speak of; the job that uses it bounds the work.
const KEPT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

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
    /// Its process group (its own pid: it leads the group).
    group: u32,
    scope: Option<Scope>,
}

impl Piped {
    /// Starts `cmd` with stdin and stdout piped, under resource limits, in
    /// the calling thread's [`Scope`].
    pub fn spawn(cmd: Command, timeout: Duration) -> Result<Self, ProcessError> {
        Self::start(cmd, timeout, Scope::current())
    }

    /// Starts a long-lived tool outside any scope, without a time limit: a
    /// process shared by every request (espeak-ng's phonemizer, which frames
    /// each request) or one kept ready for the next job, which joins that
    /// job's scope when taken ([`Piped::join_scope`]). Killed with
    /// its group when dropped.
    pub fn spawn_kept(cmd: Command) -> Result<Self, ProcessError> {
        Self::start(cmd, KEPT, None)
    }

    /// Puts a kept tool into `scope` (the job that takes it): cancelling
    /// that kills it.
    pub fn join_scope(&mut self, scope: &Scope) {
        if self.scope.is_none() {
            scope.adopt(self.group);
            self.scope = Some(scope.clone());
        }
    }

    /// True while the tool runs.
    pub fn is_running(&self) -> bool {
        self.child
            .lock()
            .map(|mut c| matches!(c.try_wait(), Ok(None)))
            .unwrap_or(false)
    }

    fn start(cmd: Command, timeout: Duration, scope: Option<Scope>) -> Result<Self, ProcessError> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        if scope.as_ref().is_some_and(Scope::is_cancelled) {
            return Err(ProcessError::Cancelled);
        }
        let mut child = limited(cmd, timeout)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                program: program.clone(),
                source,
            })?;
        let group = child.id();
        if let Some(scope) = &scope {
            scope.adopt(group);
        }
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
                        kill_group(group);
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
            group,
            scope,
        })
    }

    /// Its process group.
    pub fn group(&self) -> u32 {
        self.group
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
        // The tool is gone; anything it left in its group goes with it.
        kill_group(self.group);
        if let Some(scope) = &self.scope {
            scope.release(self.group);
            if scope.is_cancelled() {
                return Err(ProcessError::Cancelled);
            }
        }
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
            kill_group(self.group);
            if let Ok(mut c) = self.child.lock() {
                let _ = c.kill();
                let _ = c.wait();
            }
            if let Some(scope) = &self.scope {
                scope.release(self.group);
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

    /// A scope's stoppers are called by its cancel while registered, at
    /// once when registered after it, and never after their guard drops;
    /// outside a scope nothing is kept.
    #[test]
    fn a_cancel_calls_the_stoppers_registered() {
        use std::sync::atomic::AtomicUsize;
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = || {
            let calls = calls.clone();
            move || {
                calls.fetch_add(1, Ordering::SeqCst);
            }
        };
        drop(on_cancel_here(counter()));
        let scope = Scope::new();
        let _entered = scope.enter();
        let kept = on_cancel_here(counter());
        drop(on_cancel_here(counter()));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        scope.cancel();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let late = on_cancel_here(counter());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        drop((kept, late));
        assert!(scope.0.stoppers.lock().unwrap().is_empty());
    }

    /// A cancelled scope kills its tools (and their children) at once, and
    /// starts no new one.
    #[test]
    fn a_cancelled_scope_kills_its_tools() {
        let scope = Scope::new();
        let entered = scope.enter();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30; wait"]);
        let started = std::time::Instant::now();
        let mut tool = Piped::spawn(cmd, Duration::from_secs(60)).unwrap();
        let group = tool.group();
        assert_eq!(scope.groups(), vec![group]);
        std::thread::sleep(Duration::from_millis(100));
        assert!(group_alive(group));
        scope.cancel();
        assert!(matches!(tool.finish(), Err(ProcessError::Cancelled)));
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while group_alive(group) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!group_alive(group), "the tool's child outlived the cancel");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(scope.groups().is_empty());
        let again = run(Command::new("true"), b"", Duration::from_secs(5));
        assert!(matches!(again, Err(ProcessError::Cancelled)));
        drop(entered);
        assert!(run(Command::new("true"), b"", Duration::from_secs(5)).is_ok());
    }

    /// Processes are started here only: any other `.spawn()`, `.output()`
    /// or `.status()` of a `Command` in the workspace's code fails this.
    #[test]
    fn no_process_is_started_elsewhere() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut found = Vec::new();
        let mut stack = vec![root.join("crates")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    // Tests, examples and build scripts may run tools.
                    if !["tests", "examples", "target", "node_modules", "assets"]
                        .contains(&name.as_str())
                    {
                        stack.push(path);
                    }
                    continue;
                }
                if !name.ends_with(".rs")
                    || name == "build.rs"
                    || path.ends_with("probe/src/process.rs")
                {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                // Unit tests at a file's end may run tools.
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                if code.contains("Command::new")
                    && [".spawn()", ".output()", ".status()"]
                        .iter()
                        .any(|c| code.contains(c))
                {
                    found.push(path.display().to_string());
                }
            }
        }
        assert!(
            found.is_empty(),
            "processes started outside probe::process: {found:?}"
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
        assert!(
            !message.contains("sh") && !message.contains("exit"),
            "{message}"
        );
        match e {
            ProcessError::Failed { stderr, .. } => assert!(stderr.contains("/srv/secret")),
            other => panic!("{other:?}"),
        }
    }
}
