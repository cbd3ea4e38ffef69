//! `--voice` by id or by name: `Heart`, `af_heart`, `Bella (Kokoro)` or
//! `kokoro-af_heart` name the same voice a person sees in `mediagen voices`.

use serde_json::Value;

use crate::api::Api;
use crate::error::CliError;

/// The id of the voice `given` names, among every voice the key sees.
pub async fn voice_id(api: &Api, given: &str) -> Result<String, CliError> {
    let voices = api.list_all("/voices", &[], 10_000).await?;
    pick(&voices, given)
}

/// The names a voice answers to, lower-cased: its id, its name, its name
/// with its engine (`bella (kokoro)`), the engine's own name for it
/// (`af_heart`) and that with the engine (`kokoro-af_heart`).
fn names(voice: &Value) -> Vec<String> {
    let text = |k: &str| voice[k].as_str().unwrap_or_default().to_lowercase();
    let (name, engine, own) = (text("name"), text("engine"), text("engineVoice"));
    let mut names = vec![text("id"), format!("{name} ({engine})"), name];
    if !own.is_empty() {
        names.push(format!("{engine}-{own}"));
        names.push(own);
    }
    names
}

/// The id of the one voice of `voices` that answers to `given`; none or
/// several are a usage error that says what to type instead.
fn pick(voices: &[Value], given: &str) -> Result<String, CliError> {
    let wanted = given.trim().to_lowercase();
    if voices.iter().any(|v| v["id"].as_str() == Some(given)) {
        return Ok(given.to_owned());
    }
    let found: Vec<&Value> = voices
        .iter()
        .filter(|v| names(v).contains(&wanted))
        .collect();
    let line = |v: &Value| {
        format!(
            "  {} ({}, {}, {}): {}",
            v["name"].as_str().unwrap_or_default(),
            v["engine"].as_str().unwrap_or_default(),
            v["language"].as_str().unwrap_or_default(),
            v["gender"].as_str().unwrap_or_default(),
            v["id"].as_str().unwrap_or_default()
        )
    };
    match found.as_slice() {
        [one] => Ok(one["id"].as_str().unwrap_or_default().to_owned()),
        [] => {
            let near: Vec<String> = voices
                .iter()
                .filter(|v| !wanted.is_empty() && names(v).iter().any(|n| n.contains(&wanted)))
                .take(10)
                .map(&line)
                .collect();
            Err(CliError::Usage(if near.is_empty() {
                format!("no voice is called `{given}`; `mediagen voices` lists them")
            } else {
                format!(
                    "no voice is called `{given}`; voices with that in their name:\n{}",
                    near.join("\n")
                )
            }))
        }
        many => Err(CliError::Usage(format!(
            "`{given}` names {} voices; give one's id, or its name with the engine \
             (`{} ({})`):\n{}",
            many.len(),
            many[0]["name"].as_str().unwrap_or_default(),
            many[0]["engine"].as_str().unwrap_or_default(),
            many.iter().map(|v| line(v)).collect::<Vec<_>>().join("\n")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn voices() -> Vec<Value> {
        vec![
            json!({"id": "k1", "name": "Heart", "engine": "kokoro", "engineVoice": "af_heart",
                   "language": "en-US", "gender": "female"}),
            json!({"id": "k2", "name": "Bella", "engine": "kokoro", "engineVoice": "af_bella",
                   "language": "en-US", "gender": "female"}),
            json!({"id": "p1", "name": "Bella", "engine": "piper", "engineVoice": "en_US-bella-medium",
                   "language": "en-US", "gender": "female"}),
            json!({"id": "c1", "name": "My voice", "engine": "kokoro", "engineVoice": null,
                   "language": "en-US", "gender": "male"}),
        ]
    }

    #[test]
    fn a_voice_is_found_by_id_name_or_engine_name() {
        let v = voices();
        for (given, id) in [
            ("k1", "k1"),
            ("Heart", "k1"),
            ("heart", "k1"),
            ("af_heart", "k1"),
            ("kokoro-af_heart", "k1"),
            ("Heart (Kokoro)", "k1"),
            ("Bella (Kokoro)", "k2"),
            ("bella (piper)", "p1"),
            ("My voice", "c1"),
        ] {
            assert_eq!(pick(&v, given).unwrap(), id, "{given}");
        }
    }

    #[test]
    fn an_ambiguous_name_lists_the_candidates() {
        let e = pick(&voices(), "Bella").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(text.contains("names 2 voices"), "{text}");
        assert!(text.contains("Bella (kokoro, en-US, female): k2"), "{text}");
        assert!(text.contains("Bella (piper, en-US, female): p1"), "{text}");
    }

    #[test]
    fn an_unknown_name_suggests_near_ones() {
        let text = pick(&voices(), "hear").unwrap_err().to_string();
        assert!(text.contains("Heart (kokoro"), "{text}");
        let text = pick(&voices(), "zzz").unwrap_err().to_string();
        assert!(text.contains("no voice is called `zzz`"), "{text}");
    }
}
