//! What the commands print: the API's JSON for `--json`, else short text
//! and aligned tables for a person.

use serde_json::Value;

/// A JSON value's text: strings bare, `null` as `-`, numbers and the rest as
/// JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// Rows under headers, each column as wide as its widest cell.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
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
    let mut out = vec![line(headers.iter().map(|h| h.to_uppercase()).collect())];
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
        format!("credits   {}", cell(&job["credits"])),
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
