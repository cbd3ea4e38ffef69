//! ARCHITECTURE.md stays true: its table of crates names every crate under
//! `crates/` with its size in lines (as `find crates/<c>/src -name '*.rs' |
//! xargs cat | wc -l` counts them, to within a rounding), and the sentence
//! under it gives the total and the largest crate. A failure prints the
//! figures to write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Lines of every `.rs` file under `dir`.
fn lines(dir: &Path) -> usize {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            total += lines(&path);
        } else if path.extension().is_some_and(|e| e == "rs") {
            total += std::fs::read_to_string(&path).unwrap().lines().count();
        }
    }
    total
}

/// Thousands, as the table writes them (`2.1 k`).
fn thousands(n: usize) -> String {
    format!("{:.1} k", n as f64 / 1000.0)
}

#[test]
fn the_crate_table_counts_what_is_there() {
    let counted: BTreeMap<String, usize> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, lines(&p.join("src")))
        })
        .collect();
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    // `| `core` | 2.1 k | … |`
    let written: BTreeMap<String, f64> = doc
        .lines()
        .filter_map(|l| {
            let mut cells = l.strip_prefix("| `")?.splitn(3, '|');
            let name = cells.next()?.trim().trim_end_matches('`');
            let size = cells.next()?.trim().strip_suffix(" k")?.parse().ok()?;
            Some((name.to_owned(), size))
        })
        .collect();
    let total: usize = counted.values().sum();
    let (largest, most) = counted.iter().max_by_key(|(_, n)| **n).unwrap();
    let share = (*most as f64 / total as f64 * 100.0).round();
    let table: Vec<String> = counted
        .iter()
        .map(|(c, n)| format!("`{c}` {}", thousands(*n)))
        .collect();
    let expected = format!(
        "{}; in all {} lines; the largest, `{largest}`, {share} %",
        table.join(", "),
        thousands(total)
    );
    for (name, n) in &counted {
        let Some(size) = written.get(name) else {
            panic!("ARCHITECTURE.md has no row for crate `{name}`; write: {expected}");
        };
        // Within a rounding: 0.2 k or 5 %, whichever is more.
        let actual = *n as f64 / 1000.0;
        let allowed = (actual * 0.05).max(0.2);
        assert!(
            (size - actual).abs() <= allowed,
            "ARCHITECTURE.md gives `{name}` {size} k lines, it has {}; write: {expected}",
            thousands(*n)
        );
    }
    for name in written.keys() {
        assert!(
            counted.contains_key(name),
            "ARCHITECTURE.md lists `{name}`, which is not a crate"
        );
    }
    let sentence = format!(
        "({} lines in all; the largest, `{largest}`, {share} %)",
        thousands(total)
    );
    // The sentence may wrap: read it with its line breaks as spaces.
    let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let said = flat
        .split_once(" lines in all; the largest, ")
        .map(|(before, after)| {
            let figure = before.rsplit('(').next().unwrap_or_default();
            let rest = after.split(')').next().unwrap_or_default();
            (figure.to_owned(), rest.to_owned())
        })
        .expect("ARCHITECTURE.md says how many lines there are in all");
    let said_total: f64 = said
        .0
        .trim()
        .strip_suffix(" k")
        .and_then(|f| f.parse().ok())
        .expect("a total in thousands");
    assert!(
        (said_total - total as f64 / 1000.0).abs() <= (total as f64 / 1000.0 * 0.02).max(0.2),
        "ARCHITECTURE.md's total is {said_total} k; write {sentence}"
    );
    assert!(
        said.1.starts_with(&format!("`{largest}`")),
        "ARCHITECTURE.md names another largest crate; write {sentence}"
    );
}
