//! Byte-level BPE tokenizers read from a vocabulary and its merges, in the
//! two flavours our models use: CLIP's (Stable Diffusion; lower-cased
//! words, `</w>` marking a word's end) and GPT-2's (CLAP text encoders of
//! audio models, whisper prompts; a leading space carried as `Ġ`). Which
//! one is read from the vocabulary itself.

use std::collections::HashMap;
use std::path::Path;

use fancy_regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Clip,
    Gpt2,
}

pub struct Bpe {
    flavour: Flavour,
    vocab: HashMap<String, i64>,
    ranks: HashMap<(String, String), usize>,
    byte_chars: [char; 256],
    split: Regex,
    pub bos: i64,
    pub eos: i64,
    pub pad: i64,
    unk: i64,
    /// Sequence length the text encoder takes (padded or cut to it).
    pub max_len: usize,
}

/// GPT-2's reversible map from bytes to printable characters.
pub fn byte_chars() -> [char; 256] {
    let mut out = ['\0'; 256];
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut extra = 0;
    for b in 0..256u32 {
        out[b as usize] = if printable(b) {
            char::from_u32(b).unwrap_or('?')
        } else {
            extra += 1;
            char::from_u32(255 + extra).unwrap_or('?')
        };
    }
    out
}

pub fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A special token's text from tokenizer_config.json or
/// special_tokens_map.json (plain or `{"content": …}`).
fn special(configs: &[serde_json::Value], key: &str) -> Option<String> {
    configs.iter().find_map(|c| match &c[key] {
        serde_json::Value::String(s) => Some(s.clone()),
        v => v["content"].as_str().map(str::to_owned),
    })
}

impl Bpe {
    /// Loads `dir/vocab.json`, `dir/merges.txt` and, when present,
    /// `tokenizer_config.json` / `special_tokens_map.json` (special tokens,
    /// `model_max_length`).
    pub fn load(dir: &Path) -> Result<Self, String> {
        let vocab: HashMap<String, i64> =
            serde_json::from_value(read_json(&dir.join("vocab.json"))?)
                .map_err(|e| format!("vocab.json: {e}"))?;
        let merges = std::fs::read_to_string(dir.join("merges.txt"))
            .map_err(|e| format!("merges.txt: {e}"))?;
        let configs: Vec<serde_json::Value> = ["tokenizer_config.json", "special_tokens_map.json"]
            .iter()
            .filter_map(|f| read_json(&dir.join(f)).ok())
            .collect();
        Self::new(vocab, &merges, &configs)
    }

    pub fn new(
        vocab: HashMap<String, i64>,
        merges: &str,
        configs: &[serde_json::Value],
    ) -> Result<Self, String> {
        let flavour = if vocab.keys().any(|k| k.ends_with("</w>")) {
            Flavour::Clip
        } else {
            Flavour::Gpt2
        };
        let ranks = merges
            .lines()
            .filter(|l| !l.starts_with("#version") && !l.trim().is_empty())
            .filter_map(|l| {
                let (a, b) = l.split_once(' ')?;
                Some((a.to_owned(), b.to_owned()))
            })
            .enumerate()
            .map(|(i, pair)| (pair, i))
            .collect();
        let (bos_text, eos_text, unk_text, pad_default) = match flavour {
            Flavour::Clip => (
                "<|startoftext|>",
                "<|endoftext|>",
                "<|endoftext|>",
                "<|endoftext|>",
            ),
            Flavour::Gpt2 => ("<s>", "</s>", "<unk>", "<pad>"),
        };
        let id = |key: &str, default: &str| -> Result<i64, String> {
            let text = special(configs, key).unwrap_or_else(|| default.to_owned());
            vocab
                .get(&text)
                .copied()
                .ok_or_else(|| format!("the vocabulary has no {key} {text:?}"))
        };
        let max_len = configs
            .iter()
            .find_map(|c| c["model_max_length"].as_u64())
            .filter(|&n| n <= 4096)
            .unwrap_or(77) as usize;
        // The reference pre-tokenizers' patterns. GPT-2's needs a
        // lookahead: a run of spaces before a word leaves its last space to
        // the word. CLIP's reference also matches its start and end markers
        // in the text; ours does not, so user text never becomes a marker.
        let split = match flavour {
            Flavour::Clip => r"'s|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+",
            Flavour::Gpt2 => {
                r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
            }
        };
        Ok(Self {
            flavour,
            bos: id("bos_token", bos_text)?,
            eos: id("eos_token", eos_text)?,
            unk: id("unk_token", unk_text).or_else(|_| id("eos_token", eos_text))?,
            pad: id("pad_token", pad_default).or_else(|_| id("eos_token", eos_text))?,
            vocab,
            ranks,
            byte_chars: byte_chars(),
            split: Regex::new(split).map_err(|e| e.to_string())?,
            max_len: max_len.max(2),
        })
    }

    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// The BPE pieces of one pre-tokenized word.
    fn pieces(&self, word: &str) -> Vec<String> {
        let mut symbols: Vec<String> = word
            .bytes()
            .map(|b| self.byte_chars[b as usize].to_string())
            .collect();
        if self.flavour == Flavour::Clip {
            if let Some(last) = symbols.last_mut() {
                last.push_str("</w>");
            }
        }
        while symbols.len() > 1 {
            let best = symbols
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| {
                    self.ranks
                        .get(&(w[0].clone(), w[1].clone()))
                        .map(|&r| (r, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let merged = format!("{}{}", symbols[i], symbols[i + 1]);
            symbols.splice(i..i + 2, [merged]);
        }
        symbols
    }

    /// The ids of the text's pieces alone, exactly as written (no start or
    /// end token, nothing trimmed or cut).
    pub fn pieces_of(&self, text: &str) -> Vec<i64> {
        // Matching cannot fail on these patterns (no backtracking limit is
        // reached by a lookahead of one character); a failure ends the text.
        self.split
            .find_iter(text)
            .map_while(Result::ok)
            .flat_map(|m| self.pieces(m.as_str()))
            .map(|piece| self.vocab.get(&piece).copied().unwrap_or(self.unk))
            .collect()
    }

    /// Token ids: start, the text's pieces, end, then padding, exactly
    /// `max_len` long (the text is cut to fit). Also returns the attention
    /// mask (1 for real tokens).
    pub fn encode(&self, text: &str) -> (Vec<i64>, Vec<i64>) {
        let text = match self.flavour {
            Flavour::Clip => text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase(),
            Flavour::Gpt2 => text.trim().to_owned(),
        };
        let mut ids = vec![self.bos];
        ids.extend(self.pieces_of(&text));
        ids.truncate(self.max_len - 1);
        ids.push(self.eos);
        let real = ids.len();
        ids.resize(self.max_len, self.pad);
        let mask = (0..self.max_len).map(|i| i64::from(i < real)).collect();
        (ids, mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clip() -> Bpe {
        let words = [
            "<|startoftext|>",
            "<|endoftext|>",
            "a</w>",
            "c",
            "a",
            "t</w>",
            "ca",
            "cat</w>",
            "s</w>",
            "!</w>",
        ];
        let vocab = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), i as i64))
            .collect();
        let merges = "#version: 0.2\nc a\nca t</w>\n";
        let config = serde_json::json!({"model_max_length": 8});
        Bpe::new(vocab, merges, &[config]).unwrap()
    }

    #[test]
    fn clip_merges_by_rank_marks_word_ends_and_pads() {
        let bpe = clip();
        assert_eq!(bpe.flavour(), Flavour::Clip);
        let (ids, mask) = bpe.encode("  A   CAT! ");
        // <start> a</w> cat</w> !</w> <end> then <end> as padding.
        assert_eq!(ids, vec![0, 2, 7, 9, 1, 1, 1, 1]);
        assert_eq!(mask, vec![1, 1, 1, 1, 1, 0, 0, 0]);
        // "cats": c a t s</w>: "ca" merges, "t" + "s</w>" has no merge.
        let (ids, _) = bpe.encode("cats");
        assert_eq!(&ids[..3], &[0, 6, 1]);
    }

    #[test]
    fn long_text_is_cut_to_the_encoder_length_with_the_end_token() {
        let (ids, mask) = clip().encode(&"a ".repeat(50));
        assert_eq!(ids.len(), 8);
        assert_eq!(ids[7], 1);
        assert!(mask.iter().all(|&m| m == 1));
    }

    #[test]
    fn gpt2_flavour_carries_spaces_as_g_dot() {
        let words = [
            "<s>", "</s>", "<pad>", "<unk>", "a", "Ġ", "r", "i", "n", "Ġr", "ain", "ai", "Ġrain",
        ];
        let vocab = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), i as i64))
            .collect();
        let bpe = Bpe::new(vocab, "Ġ r\na i\nai n\nĠr ain\n", &[]).unwrap();
        assert_eq!(bpe.flavour(), Flavour::Gpt2);
        assert_eq!(bpe.max_len, 77);
        let (ids, _) = bpe.encode("a rain");
        assert_eq!(&ids[..4], &[0, 4, 12, 1]);
        assert_eq!(ids[4], 2);
    }
}
