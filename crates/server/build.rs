//! Builds two sets of front-end files into the binary when setup has made
//! them:
//! - the API reference's renderer (`swagger-ui-dist` from npm, pinned by
//!   `assets/apidocs/package-lock.json`; `scripts/setup.sh` runs `npm ci`
//!   there). Without it, `/docs` serves the plain offline list of
//!   operations instead.
//! - the web console (`console/`, a Vite build into `console/dist`, which
//!   `scripts/setup.sh` runs), as a table of every file under `dist` in
//!   `$OUT_DIR/console_files.rs`. Without a build, the table is empty and
//!   `/app` says how to build it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rustc-check-cfg=cfg(swagger_ui)");
    println!("cargo:rerun-if-changed=assets/apidocs");
    let dist = Path::new("assets/apidocs/node_modules/swagger-ui-dist");
    if ["swagger-ui-bundle.js", "swagger-ui.css"]
        .iter()
        .all(|f| dist.join(f).is_file())
    {
        println!("cargo:rustc-cfg=swagger_ui");
    }
    console_table();
}

/// The content type of a built file, by its extension (`None`: not served,
/// such as source maps).
fn content_type(path: &Path) -> Option<&'static str> {
    Some(match path.extension()?.to_str()? {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "woff2" => "font/woff2",
        "json" => "application/json",
        _ => return None,
    })
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn console_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../console/dist");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut found = Vec::new();
    files(&root, &mut found);
    found.sort();
    let mut table = String::from("&[\n");
    for path in &found {
        println!("cargo:rerun-if-changed={}", path.display());
        let Some(kind) = content_type(path) else {
            continue;
        };
        let name = path
            .strip_prefix(&root)
            .expect("under dist")
            .to_str()
            .expect("a UTF-8 file name")
            .replace('\\', "/");
        let full = path.canonicalize().expect("a built file");
        writeln!(
            table,
            "    Asset {{ name: {name:?}, content_type: {kind:?}, body: include_bytes!({full:?}) }},"
        )
        .expect("a string");
    }
    table.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("console_files.rs");
    std::fs::write(out, table).expect("writing the console's file table");
}
