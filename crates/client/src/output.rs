//! What the commands print: the API's JSON for `--json`, else short text
//! and aligned tables for a person.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::CliError;

/// `1 credit`, `2 credits`, `0.5 credits`: a number and its noun, singular
/// only for exactly one.
pub fn count(n: &Value, noun: &str) -> String {
    let one = n.as_f64() == Some(1.0);
    format!("{} {noun}{}", cell(n), if one { "" } else { "s" })
}

/// Where a command's media goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Sink {
    File(PathBuf),
    Stdout,
}

impl Sink {
    /// `-o FILE` is that file; `-o -`, or no `-o` where stdout is not a
    /// terminal, is stdout. Media is never written to a terminal.
    pub fn choose(output: Option<PathBuf>) -> Result<Sink, CliError> {
        Self::choose_for(output, std::io::stdout().is_terminal())
    }

    fn choose_for(output: Option<PathBuf>, terminal: bool) -> Result<Sink, CliError> {
        match output {
            Some(path) if path.as_os_str() != "-" => Ok(Sink::File(path)),
            _ if terminal => Err(CliError::Usage(
                "the result is a media file: name one with -o FILE, or send it to a \
                 pipe (-o - | player, or > FILE)"
                    .into(),
            )),
            _ => Ok(Sink::Stdout),
        }
    }

    /// The path whose extension names the format (none for stdout).
    pub fn path(&self) -> &Path {
        match self {
            Sink::File(p) => p,
            Sink::Stdout => Path::new(""),
        }
    }
}

/// Writes `text` and a newline on stdout; a closed stdout is
/// [`CliError::Closed`], not a panic.
pub fn print_out(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.write_all(b"\n"))
        .and_then(|_| out.flush())
        .map_err(stdout_error)
}

/// A failed write to stdout: closed by its reader, or else a local error.
pub fn stdout_error(e: std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CliError::Closed
    } else {
        CliError::Local(format!("cannot write to stdout: {e}"))
    }
}

/// A JSON value's text: strings bare, `null` as `-`, numbers and the rest as
/// JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// A member's name as a column heading: `engineVoice` → `ENGINE VOICE`.
fn heading(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() && !out.is_empty() {
            out.push(' ');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Rows under headers (members' names, as headings), each column as wide
/// as its widest cell and its heading.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| heading(h).chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut out = vec![line(headers.iter().map(|h| heading(h)).collect())];
    out.extend(rows.iter().map(|r| line(r.clone())));
    out.join("\n")
}

/// The rows of `items`, one column per member named in `fields`.
pub fn rows(items: &[Value], fields: &[&str]) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|item| fields.iter().map(|f| cell(&item[*f])).collect())
        .collect()
}

/// A job in a few lines: what it is, where it stands, what it cost, its
/// result's URLs and its error.
pub fn job_summary(job: &Value) -> String {
    let mut lines = vec![
        format!("id        {}", cell(&job["id"])),
        format!("kind      {}", cell(&job["kind"])),
        format!(
            "status    {} ({}%)",
            cell(&job["status"]),
            cell(&job["progress"])
        ),
        format!("cost      {}", count(&job["credits"], "credit")),
        format!("created   {}", cell(&job["createdAt"])),
    ];
    if let Some(result) = job["result"].as_object() {
        for (name, value) in result {
            if name.ends_with("Url") {
                lines.push(format!("{name:<9} {}", cell(value)));
            }
        }
        if let Some(d) = result.get("duration") {
            lines.push(format!("duration  {} s", cell(d)));
        }
    }
    if let Some(error) = job["error"].as_object() {
        lines.push(format!(
            "error     {} ({})",
            cell(&error["message"]),
            cell(&error["code"])
        ));
    }
    lines.join("\n")
}

/// JSON for scripts, pretty-printed.
pub fn json(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(count(&json!(1), "credit"), "1 credit");
        assert_eq!(count(&json!(1.0), "credit"), "1.0 credit");
        assert_eq!(count(&json!(0), "credit"), "0 credits");
        assert_eq!(count(&json!(2), "byte"), "2 bytes");
        assert_eq!(count(&json!(0.5), "credit"), "0.5 credits");
    }

    #[test]
    fn media_goes_to_a_file_or_a_pipe_never_a_terminal() {
        let file = Some(PathBuf::from("a.mp3"));
        assert_eq!(
            Sink::choose_for(file.clone(), true).unwrap(),
            Sink::File("a.mp3".into())
        );
        assert_eq!(
            Sink::choose_for(file, false).unwrap(),
            Sink::File("a.mp3".into())
        );
        let dash = Some(PathBuf::from("-"));
        assert_eq!(Sink::choose_for(dash.clone(), false).unwrap(), Sink::Stdout);
        assert_eq!(Sink::choose_for(None, false).unwrap(), Sink::Stdout);
        assert_eq!(Sink::choose_for(dash, true).unwrap_err().exit_code(), 2);
        assert_eq!(Sink::choose_for(None, true).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn tables_align_columns() {
        let items = [
            json!({"id": "a", "name": "Long name", "gender": null}),
            json!({"id": "bbbb", "name": "N", "gender": "female"}),
        ];
        let t = table(
            &["id", "name", "gender"],
            &rows(&items, &["id", "name", "gender"]),
        );
        assert_eq!(
            t,
            "ID    NAME       GENDER\na     Long name  -\nbbbb  N          female"
        );
        assert_eq!(heading("engineVoice"), "ENGINE VOICE");
        assert_eq!(heading("createdAt"), "CREATED AT");
    }

    #[test]
    fn a_job_shows_its_urls_and_error() {
        let job = json!({"id": "job_1", "kind": "tts", "status": "failed", "progress": 40,
            "credits": 3, "createdAt": "t", "result": {"audioUrl": "http://x/a.mp3", "duration": 1.5},
            "error": {"code": "internal_error", "message": "Boom"}});
        let s = job_summary(&job);
        assert!(s.contains("status    failed (40%)"), "{s}");
        assert!(s.contains("audioUrl  http://x/a.mp3"), "{s}");
        assert!(s.contains("duration  1.5 s"), "{s}");
        assert!(s.contains("error     Boom (internal_error)"), "{s}");
    }
}
