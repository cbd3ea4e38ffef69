//! Official client packages run against a test server: a Python or
//! Node.js script driving the package reports what it saw as JSON on
//! stdout (`scripts/ensure-sdk.sh` installs the packages, unmodified).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The Python with the SDKs: `MEDIAGEN_TEST_PYTHON`, or the environment
/// `scripts/ensure-sdk.sh` makes (which `make test` runs).
fn python() -> String {
    let python = std::env::var("MEDIAGEN_TEST_PYTHON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/sdk-venv/bin/python"
        )
        .into()
    });
    assert!(
        Path::new(&python).exists(),
        "{python} is missing: run scripts/ensure-sdk.sh"
    );
    python
}

/// What every script starts with: `fails(call)` reports the SDK's
/// exception for a call that should fail (class, status, OpenAI's `type`,
/// `param` and `code`), `None` when it did not.
const PRELUDE: &str = r#"
import json, sys
import openai

def fails(call):
    try:
        call()
    except openai.APIStatusError as e:
        return {"class": type(e).__name__, "status": e.status_code,
                "type": e.type, "param": e.param, "code": e.code}
    return None
"#;

/// Runs `script` (Python source, after [`PRELUDE`]) with `args`, in `dir`,
/// and returns the JSON it printed; panics with its error output when it
/// fails.
pub async fn run_python(script: &str, dir: &Path, args: Vec<String>) -> Value {
    let path = dir.join("sdk.py");
    std::fs::write(&path, format!("{PRELUDE}\n{script}")).unwrap();
    let mut command = Command::new(python());
    command.arg(&path).args(args);
    run(command).await
}

/// Runs `script` (CommonJS for Node.js, with the npm packages of
/// `target/sdk-node` on its path) with `args`, in `dir`, and returns the
/// JSON it printed.
pub async fn run_node(script: &str, dir: &Path, args: Vec<String>) -> Value {
    let modules = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/sdk-node/node_modules"
    );
    assert!(
        Path::new(modules).join("openai").exists(),
        "{modules} lacks openai: run scripts/ensure-sdk.sh"
    );
    let path = dir.join("sdk.cjs");
    std::fs::write(&path, script).unwrap();
    let mut command = Command::new("node");
    command.env("NODE_PATH", modules).arg(&path).args(args);
    run(command).await
}

/// Runs a script's command and reads the JSON it printed.
async fn run(mut command: Command) -> Value {
    let run = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(
        run.status.success(),
        "the SDK failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "the script printed no JSON ({e}): {}",
            String::from_utf8_lossy(&run.stdout)
        )
    })
}

/// Asserts that each case of `errors` (as the scripts report an
/// `openai.APIStatusError`: class, status, type, param) is the SDK's
/// exception `class` with that status, OpenAI's `type` and `param` (an
/// empty `param` is not checked).
pub fn assert_errors(errors: &Value, cases: &[(&str, &str, u16, &str, &str)]) {
    for (case, class, status, kind, param) in cases {
        let e = &errors[case];
        assert_eq!(e["class"], *class, "{case}: {e}");
        assert_eq!(e["status"], *status, "{case}: {e}");
        assert_eq!(e["type"], *kind, "{case}: {e}");
        if !param.is_empty() {
            assert_eq!(e["param"], *param, "{case}: {e}");
        }
    }
}
