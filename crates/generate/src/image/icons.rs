//! The icon set: Twemoji SVGs (graphics CC-BY 4.0, © Twitter, Inc. and
//! other contributors) found by the keywords of emojilib (MIT), both from
//! npm, installed by the setup step into `<models>/emoji/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// An icon: its emoji (none for the built-in drawings), its name and its
/// SVG source.
#[derive(Debug, Clone, PartialEq)]
pub struct Icon {
    pub emoji: Option<String>,
    pub name: String,
    pub source: Source,
}

/// Where an icon's SVG comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A Twemoji file under `<models>/emoji/twemoji/`.
    File(PathBuf),
    /// One of this crate's own drawings ([`BUILTIN`]).
    Builtin(&'static str),
}

/// Largest SVG icon file read, bytes (Twemoji's are a few kB).
const MAX_ICON_BYTES: u64 = 512 * 1024;

impl Icon {
    /// The SVG document.
    pub fn svg(&self) -> Result<std::borrow::Cow<'static, [u8]>, String> {
        match &self.source {
            Source::Builtin(svg) => Ok(std::borrow::Cow::Borrowed(svg.as_bytes())),
            Source::File(file) => {
                let len = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
                if len > MAX_ICON_BYTES {
                    return Err("too large".into());
                }
                std::fs::read(file)
                    .map(std::borrow::Cow::Owned)
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// Things people put in scenes that have no emoji: drawn here (our own
/// work, under the project's licence), on Twemoji's 36-unit grid.
pub static BUILTIN: &[(&str, &[&str], &str)] = &[
    (
        "table",
        &["table", "tables", "desk", "desks"],
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 36 36"><rect x="1" y="13" width="34" height="3.5" rx="1" fill="#A86B32"/><rect x="1" y="16" width="34" height="1.5" fill="#7A4A1F"/><rect x="4" y="17" width="3" height="16" fill="#8B5A2B"/><rect x="29" y="17" width="3" height="16" fill="#8B5A2B"/><rect x="10" y="17" width="2" height="12" fill="#6E4522"/><rect x="24" y="17" width="2" height="12" fill="#6E4522"/></svg>"##,
    ),
    (
        "lamp",
        &["lamp", "lamps", "chandelier", "lantern"],
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 36 36"><rect x="17.3" y="1" width="1.4" height="13" fill="#4A4A4A"/><path d="M9 25 L14 13 H22 L27 25 Z" fill="#E8B33A"/><path d="M9 25 H27 L26 26.5 H10 Z" fill="#C28F1F"/><circle cx="18" cy="28" r="3.5" fill="#FFF1A8"/></svg>"##,
    ),
    (
        "bench",
        &["bench", "benches"],
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 36 36"><rect x="2" y="11" width="32" height="3" rx="1" fill="#9C6B3A"/><rect x="2" y="15.5" width="32" height="3" rx="1" fill="#9C6B3A"/><rect x="2" y="21" width="32" height="3.5" rx="1" fill="#B07B45"/><rect x="5" y="11" width="2" height="21" fill="#3F3F46"/><rect x="29" y="11" width="2" height="21" fill="#3F3F46"/></svg>"##,
    ),
    (
        "cage",
        &["cage", "cages", "birdcage"],
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 36 36"><path d="M6 32 V15 A12 12 0 0 1 30 15 V32" fill="none" stroke="#B8860B" stroke-width="1.6"/><path d="M12 32 V9 M18 32 V3 M24 32 V9" stroke="#B8860B" stroke-width="1.4"/><rect x="4" y="31" width="28" height="3" rx="1" fill="#8B6508"/><circle cx="18" cy="2.5" r="1.5" fill="#8B6508"/></svg>"##,
    ),
    (
        "bowl",
        &["bowl", "bowls", "fishbowl", "aquarium", "tank"],
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 36 36"><circle cx="18" cy="19" r="15" fill="#CDE9F7" fill-opacity="0.55" stroke="#8CC4E0" stroke-width="1.2"/><path d="M5 21 A15 15 0 0 0 31 21 Z" fill="#5FA8E0" fill-opacity="0.6"/><rect x="10" y="4" width="16" height="2" rx="1" fill="#8CC4E0"/></svg>"##,
    ),
];

static PREFERRED: &[(&str, &str)] = &[
    ("ball", "soccer_ball"),
    ("car", "automobile"),
    ("tree", "deciduous_tree"),
    ("flower", "tulip"),
    ("moon", "crescent_moon"),
    ("heart", "red_heart"),
    ("boat", "sailboat"),
    ("hat", "top_hat"),
    ("building", "office_building"),
    ("box", "package"),
    ("bird", "bird"),
];

/// Plurals that do not end in -s.
static IRREGULAR: &[(&str, &str)] = &[
    ("people", "person"),
    ("men", "man"),
    ("women", "woman"),
    ("children", "child"),
    ("mice", "mouse"),
    ("geese", "goose"),
    ("sheep", "ewe"),
    ("feet", "foot"),
    ("teeth", "tooth"),
];

pub struct Icons {
    /// word → (rank, name length, icon); lower ranks first.
    index: HashMap<String, Vec<(u8, usize, usize)>>,
    icons: Vec<Icon>,
}

/// Twemoji's file name for an emoji: code points in hex joined by `-`,
/// without the variation selector U+FE0F.
fn file_name(emoji: &str) -> String {
    emoji
        .chars()
        .filter(|&c| c != '\u{fe0f}')
        .map(|c| format!("{:x}", c as u32))
        .collect::<Vec<_>>()
        .join("-")
}

impl Icons {
    /// Reads `<models>/emoji/`; `None` when it is not installed.
    pub fn discover(models: &Path) -> Option<Icons> {
        let dir = models.join("emoji");
        let lib: HashMap<String, Vec<String>> =
            serde_json::from_slice(&std::fs::read(dir.join("emojilib.json")).ok()?).ok()?;
        let mut icons = Vec::new();
        let mut index: HashMap<String, Vec<(u8, usize, usize)>> = HashMap::new();
        let mut entries: Vec<_> = lib.into_iter().collect();
        entries.sort();
        for (emoji, keywords) in entries {
            let file = dir
                .join("twemoji")
                .join(format!("{}.svg", file_name(&emoji)));
            let Some(name) = keywords.first().cloned() else {
                continue;
            };
            // People and hands come in skin tones elsewhere; flags and
            // symbols make poor scene objects.
            if !file.exists() || name.starts_with("flag_") || name.contains("keycap") {
                continue;
            }
            let i = icons.len();
            let parts: Vec<&str> = name.split('_').collect();
            let mut add = |word: &str, rank: u8| {
                index
                    .entry(word.to_owned())
                    .or_default()
                    .push((rank, name.len(), i));
            };
            add(&name, 0);
            if let Some(first) = parts.first() {
                add(first, 1);
            }
            if let Some(last) = parts.last() {
                add(last, 2);
            }
            for p in &parts {
                add(p, 3);
            }
            for k in keywords.iter().skip(1) {
                add(&k.to_lowercase(), 4);
            }
            icons.push(Icon {
                emoji: Some(emoji),
                name,
                source: Source::File(file),
            });
        }
        // Our own drawings come first for their words.
        for (name, words, svg) in BUILTIN {
            let i = icons.len();
            icons.push(Icon {
                emoji: None,
                name: (*name).to_owned(),
                source: Source::Builtin(svg),
            });
            for w in *words {
                index.entry((*w).to_owned()).or_default().push((0, 0, i));
            }
        }
        // Where a word's best-scoring icon is not the one people mean.
        for (word, name) in PREFERRED {
            if let Some(i) = icons.iter().position(|icon| icon.name == *name) {
                index.entry((*word).to_owned()).or_default().push((0, 0, i));
            }
        }
        for list in index.values_mut() {
            list.sort();
        }
        Some(Icons { index, icons })
    }

    pub fn len(&self) -> usize {
        self.icons.len()
    }

    pub fn is_empty(&self) -> bool {
        self.icons.is_empty()
    }

    /// The best icon for a word (or its singular), and whether the word
    /// was a plural.
    pub fn find(&self, word: &str) -> Option<(Icon, bool)> {
        let mut forms = vec![(word.to_owned(), false)];
        if let Some(stem) = word.strip_suffix("ies") {
            forms.push((format!("{stem}y"), true));
        }
        if let Some(stem) = word.strip_suffix("ves") {
            forms.push((format!("{stem}f"), true));
        }
        forms.extend(word.strip_suffix("es").map(|s| (s.to_owned(), true)));
        forms.extend(word.strip_suffix('s').map(|s| (s.to_owned(), true)));
        for (irregular, singular) in IRREGULAR {
            if word == *irregular {
                forms.insert(0, ((*singular).to_owned(), true));
            }
        }
        // The best-ranked match of any form ("birds" is a keyword of the
        // wing, but "bird" is a name), the word as written first on a tie.
        forms
            .iter()
            .filter(|(w, _)| w.len() > 1)
            .filter_map(|(w, plural)| Some((self.index.get(w.as_str())?.first()?, *plural)))
            .min_by_key(|(&(rank, len, _), _)| (rank, len))
            .map(|(&(_, _, i), plural)| (self.icons[i].clone(), plural))
    }

    /// The icon whose full name is `name` (two prompt words joined by `_`,
    /// such as `palm_tree`).
    pub fn named(&self, name: &str) -> Option<Icon> {
        self.index
            .get(name)?
            .iter()
            .find(|&&(rank, _, i)| rank == 0 && self.icons[i].name == name)
            .map(|&(_, _, i)| self.icons[i].clone())
    }
}
