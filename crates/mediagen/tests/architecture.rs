//! ARCHITECTURE.md stays true: its table of crates names every crate under
//! `crates/` with its size in lines (as `find crates/<c>/src -name '*.rs' |
//! xargs cat | wc -l` counts them, to within a rounding), and the sentence
//! under it gives the total and the largest crate. A failure prints the
//! figures to write. And no modules of a crate import one another round
//! (a circle of `crate::`/`super::` paths outside tests and comments).

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

/// The crate whose sources are under `src`.
fn entry_name(src: &Path) -> String {
    src.parent()
        .and_then(|c| c.file_name())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The module a path names from `module` (`crate::a::b::Item`,
/// `super::x`): its longest prefix that is a module of the crate.
fn module_of(module: &str, path: &[&str], modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let mut rest = path;
    if rest.first() == Some(&"crate") {
        rest = &rest[1..];
    } else {
        parts = module.split("::").filter(|p| !p.is_empty()).collect();
        while rest.first() == Some(&"super") {
            parts.pop();
            rest = &rest[1..];
        }
    }
    parts.extend_from_slice(rest);
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| modules.contains_key(m))
}

/// Every `crate::…` and `super::…` path in `code`, as its segments (a
/// `use` group gives one path per member).
fn paths(code: &str) -> Vec<Vec<String>> {
    fn ident(s: &[u8], mut i: usize) -> (String, usize) {
        let start = i;
        while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
            i += 1;
        }
        (String::from_utf8_lossy(&s[start..i]).into_owned(), i)
    }
    // From `i`: a path, then (after `::{`) each member of its group.
    fn walk(s: &[u8], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let mut path = prefix;
        loop {
            if s.get(i) == Some(&b'{') {
                i += 1;
                loop {
                    while s
                        .get(i)
                        .is_some_and(|c| c.is_ascii_whitespace() || *c == b',')
                    {
                        i += 1;
                    }
                    if s.get(i).is_none_or(|c| *c == b'}') {
                        return i + 1;
                    }
                    i = walk(s, i, path.clone(), out);
                    // Skip an `as` rename or anything else up to the next member.
                    while s.get(i).is_some_and(|c| *c != b',' && *c != b'}') {
                        i += 1;
                    }
                }
            }
            let (name, next) = ident(s, i);
            if name.is_empty() {
                out.push(path);
                return next;
            }
            path.push(name);
            i = next;
            if s.get(i..i + 2) == Some(b"::") {
                i += 2;
            } else {
                out.push(path);
                return i;
            }
        }
    }
    let s = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let word = |w: &str| {
            s[i..].starts_with(w.as_bytes())
                && (i == 0
                    || !(s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_' || s[i - 1] == b':'))
        };
        if word("crate::") || word("super::") {
            i = walk(s, i, Vec::new(), &mut out).max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// The import circles among the modules of the crate under `src`: each a
/// set of modules that import one another round (a module's use of its
/// own parent or children is not counted).
fn circles(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut modules = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        modules.insert(parts.join("::"), file);
    }
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .map(|l| l.split("//").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let mut to: Vec<String> = paths(&code)
            .iter()
            .filter_map(|p| {
                module_of(
                    module,
                    &p.iter().map(String::as_str).collect::<Vec<_>>(),
                    &modules,
                )
            })
            .filter(|t| !t.is_empty() && t != module && !module.starts_with(&format!("{t}::")))
            .filter(|t| !t.starts_with(&format!("{module}::")) || module.is_empty())
            .collect();
        to.sort();
        to.dedup();
        edges.insert(module.clone(), to);
    }
    // Tarjan's strongly connected components.
    struct Walk<'a> {
        edges: &'a BTreeMap<String, Vec<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for t in &w.edges[v] {
            let t = t.as_str();
            if !w.index.contains_key(t) {
                visit(w, t);
                let l = w.low[t].min(w.low[v]);
                w.low.insert(v, l);
            } else if w.stack.contains(&t) {
                let l = w.index[t].min(w.low[v]);
                w.low.insert(v, l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut group = Vec::new();
            while let Some(t) = w.stack.pop() {
                group.push(t.to_owned());
                if t == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                w.found.push(group);
            }
        }
    }
    let mut w = Walk {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.found
}

#[test]
fn no_modules_import_each_other_round() {
    // The checker sees a circle where there is one.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::{self, B};\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct B;\nfn f() { crate::c::g() }\n",
    )
    .unwrap();
    // A path in a comment or a test module is no import.
    std::fs::write(
        src.join("c.rs"),
        "pub fn g() {} // crate::a\n#[cfg(test)]\nmod tests { use crate::a; }\n",
    )
    .unwrap();
    assert!(circles(src).is_empty());
    std::fs::write(
        src.join("c.rs"),
        "use super::{a::A as X, d};\npub fn g() {}\n",
    )
    .unwrap();
    assert_eq!(circles(src), [["a", "b", "c"]]);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            for circle in circles(&src) {
                let name = entry_name(&src);
                found.push(format!("{name}: {}", circle.join(" ↔ ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other round:\n{}",
        found.join("\n")
    );
}
