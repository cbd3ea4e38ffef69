//! Where the client finds its server and key: a flag, else the environment
//! (`MEDIAGEN_URL`, `MEDIAGEN_API_KEY`), else the client config file, else
//! the default address of `mediagen serve`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Deserialize;

use crate::error::CliError;

/// The address `mediagen serve` listens on by default.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// Options every client command takes.
#[derive(Args, Debug, Clone, Default)]
pub struct Connection {
    /// The server's address, with or without `/v1` [default: `url` in the
    /// client config file, else http://127.0.0.1:8080].
    #[arg(long, env = "MEDIAGEN_URL")]
    pub url: Option<String>,
    /// The API key [default: `api_key` in the client config file]. Prefer
    /// the environment variable: a flag shows in the process list.
    #[arg(long, env = "MEDIAGEN_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// A TOML file with `url` and `api_key` [default:
    /// $XDG_CONFIG_HOME/mediagen/client.toml, else
    /// ~/.config/mediagen/client.toml, read when present].
    #[arg(long, env = "MEDIAGEN_CLIENT_CONFIG")]
    pub client_config: Option<PathBuf>,
    /// Print the API's JSON objects instead of text (no progress bars).
    #[arg(long)]
    pub json: bool,
}

/// The client config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    url: Option<String>,
    api_key: Option<String>,
}

/// A resolved server address (ending in `/v1`) and key.
#[derive(Debug, Clone)]
pub struct Target {
    pub base: String,
    pub api_key: String,
}

impl Connection {
    /// Resolves flags, environment and file, in that order.
    pub fn resolve(&self) -> Result<Target, CliError> {
        let file = match (&self.client_config, default_file()) {
            (Some(path), _) => read_file(path)?,
            (None, Some(path)) if path.is_file() => read_file(&path)?,
            _ => FileConfig::default(),
        };
        let url = self
            .url
            .clone()
            .or(file.url)
            .unwrap_or_else(|| DEFAULT_URL.to_string());
        let api_key = self.api_key.clone().or(file.api_key).ok_or_else(|| {
            CliError::Usage(
                "no API key: set MEDIAGEN_API_KEY, pass --api-key or put api_key in the client config file"
                    .into(),
            )
        })?;
        Ok(Target {
            base: base_url(&url)?,
            api_key,
        })
    }
}

fn default_file() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(dir.join("mediagen").join("client.toml"))
}

fn read_file(path: &Path) -> Result<FileConfig, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Local(format!("cannot read {}: {e}", path.display())))?;
    toml::from_str(&text)
        .map_err(|e| CliError::Usage(format!("{}: {}", path.display(), e.message())))
}

/// `http://host:8080`, `http://host:8080/` and `http://host:8080/v1` all
/// name the same API.
fn base_url(url: &str) -> Result<String, CliError> {
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(CliError::Usage(format!(
            "the server address must start with http:// or https:// (got `{url}`)"
        )));
    }
    let root = url.strip_suffix("/v1").unwrap_or(url);
    Ok(format!("{root}/v1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_with_and_without_the_version_are_one() {
        for url in [
            "http://h:8080",
            "http://h:8080/",
            "http://h:8080/v1",
            "http://h:8080/v1/",
        ] {
            assert_eq!(base_url(url).unwrap(), "http://h:8080/v1", "{url}");
        }
        assert!(base_url("h:8080").is_err());
    }

    #[test]
    fn flags_win_over_the_file() {
        let dir = std::env::temp_dir().join(format!("mediagen-client-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("client.toml");
        std::fs::write(&path, "url = \"http://file:1\"\napi_key = \"from-file\"\n").unwrap();
        let mut conn = Connection {
            client_config: Some(path.clone()),
            ..Connection::default()
        };
        let t = conn.resolve().unwrap();
        assert_eq!(
            (t.base.as_str(), t.api_key.as_str()),
            ("http://file:1/v1", "from-file")
        );
        conn.api_key = Some("flag".into());
        conn.url = Some("http://flag:2".into());
        let t = conn.resolve().unwrap();
        assert_eq!(
            (t.base.as_str(), t.api_key.as_str()),
            ("http://flag:2/v1", "flag")
        );
        std::fs::write(&path, "url = \"http://file:1\"\ntoken = \"x\"\n").unwrap();
        conn.api_key = None;
        assert!(matches!(conn.resolve(), Err(CliError::Usage(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
