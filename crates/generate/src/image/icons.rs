//! The icon set: Twemoji SVGs (graphics CC-BY 4.0, © Twitter, Inc. and
//! other contributors) found by the keywords of emojilib (MIT), both from
//! npm, installed by the setup step into `<models>/emoji/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// An icon: its emoji, its name and its SVG file.
#[derive(Debug, Clone, PartialEq)]
pub struct Icon {
    pub emoji: String,
    pub name: String,
    pub file: PathBuf,
}

static PREFERRED: &[(&str, &str)] = &[
    ("ball", "soccer_ball"),
    ("car", "automobile"),
    ("tree", "deciduous_tree"),
    ("flower", "tulip"),
    ("moon", "crescent_moon"),
    ("heart", "red_heart"),
    ("boat", "sailboat"),
    ("hat", "top_hat"),
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
            icons.push(Icon { emoji, name, file });
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

    /// The best icon for a word (or its singular).
    pub fn find(&self, word: &str) -> Option<Icon> {
        let mut forms = vec![word.to_owned()];
        if let Some(stem) = word.strip_suffix("ies") {
            forms.push(format!("{stem}y"));
        }
        forms.extend(word.strip_suffix("es").map(str::to_owned));
        forms.extend(word.strip_suffix('s').map(str::to_owned));
        forms
            .iter()
            .filter(|w| w.len() > 1)
            .find_map(|w| self.index.get(w.as_str())?.first())
            .map(|&(_, _, i)| self.icons[i].clone())
    }
}
