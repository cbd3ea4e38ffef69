//! The client commands' arguments, as clap reads them.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::connection::Connection;

/// The client commands of `mediagen`.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Speak text: `mediagen tts "Hello" --voice Heart -o out.mp3`.
    Tts(TtsArgs),
    /// Transcribe audio or video: `mediagen stt talk.mp4 --format srt`.
    Stt(SttArgs),
    /// Keep ranges of a video: `mediagen trim in.mp4 --range 5-10 --range 20-25 -o out.mp4`.
    Trim(TrimArgs),
    /// Dub a video or audio file: `mediagen dub in.mp4 --to es -o out.mp4`.
    Dub(DubArgs),
    /// Clone a voice from recordings: `mediagen clone --name Mine --consent a.wav`.
    Clone(CloneArgs),
    /// Design three voices from a description, then keep one:
    /// `mediagen design "a calm older man, deep British voice"`, then
    /// `mediagen design --keep design_… --name Narrator`.
    Design(DesignArgs),
    /// Say a recording again in another voice (a video keeps its picture):
    /// `mediagen change talk.wav --voice Heart -o out.mp3`.
    #[command(visible_alias = "voice-change")]
    Change(ChangeArgs),
    /// Make a video of any length from an avatar or a clip:
    /// `mediagen expand clip.mp4 --duration 30 -o long.mp4`.
    Expand(ExpandArgs),
    /// List voices: `mediagen voices --language es`.
    Voices(VoicesArgs),
    /// List avatars.
    Avatars(AvatarsArgs),
    /// Generate a sound: `mediagen sound "rain on a tin roof" -o rain.wav`.
    Sound(SoundArgs),
    /// Generate an image: `mediagen image "a red fox under a tree" -o fox.png`.
    Image(ImageArgs),
    /// List, show, wait for and cancel jobs.
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Create, list and revoke the account's API keys (an admin key).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Show the account's credits.
    Account(AccountArgs),
}

/// Where media goes: a file, or stdout with `-o -` (the default when
/// stdout is not a terminal).
#[derive(Args, Debug)]
pub struct Output {
    /// Where to write the result (`-`: stdout) [default: stdout when it is
    /// not a terminal].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct TtsArgs {
    /// The text to speak (`-`: read it from stdin).
    pub text: String,
    /// A voice: its id, or its name as `mediagen voices` lists it (`Heart`,
    /// `af_heart`, `Bella (Kokoro)`).
    #[arg(long)]
    pub voice: String,
    #[command(flatten)]
    pub out: Output,
    /// mp3, wav, ogg, flac, aac or pcm [default: from the output's
    /// extension, else mp3].
    #[arg(long)]
    pub format: Option<String>,
    /// 0.5–2.0.
    #[arg(long)]
    pub speed: Option<f64>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct SttArgs {
    /// An audio or video file.
    pub file: PathBuf,
    /// text, srt, vtt, json or verbose_json.
    #[arg(long, default_value = "text")]
    pub format: String,
    /// ISO 639-1, or `auto` [default: auto].
    #[arg(long)]
    pub language: Option<String>,
    /// A speech-to-text model of `GET /v1/models` [default: the server's].
    #[arg(long)]
    pub model: Option<String>,
    /// Translate into English.
    #[arg(long)]
    pub translate: bool,
    /// Say who speaks when (each line starts with its speaker).
    #[arg(long)]
    pub diarize: bool,
    /// How many people speak, when known (with `--diarize`).
    #[arg(long, requires = "diarize")]
    pub speakers: Option<u32>,
    /// Write the transcript here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct TrimArgs {
    /// The video to cut.
    pub input: PathBuf,
    /// A range to keep, START-END in seconds or [h:]m:s (`5-10`,
    /// `1:05-1:12.5`); repeat for more, kept in the order given.
    #[arg(long = "range", required = true, value_parser = parse_range)]
    pub ranges: Vec<(f64, f64)>,
    #[command(flatten)]
    pub out: Output,
    /// accurate (frame-exact) or fast (keyframes, stream copy).
    #[arg(long)]
    pub mode: Option<String>,
    /// mp4, webm, mov or mkv [default: from the output's extension, else mp4].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct DubArgs {
    /// The video or audio to dub.
    pub input: PathBuf,
    /// The target language (ISO 639-1).
    #[arg(long)]
    pub to: String,
    /// The source language [default: detected].
    #[arg(long)]
    pub from: Option<String>,
    /// One voice for every line (an id or a name).
    #[arg(long)]
    pub voice: Option<String>,
    /// auto (a catalog voice near the speaker) or clone.
    #[arg(long)]
    pub voice_mode: Option<String>,
    /// Where to write the dub (the video when the input has one, else
    /// audio; `-`: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct CloneArgs {
    /// Recordings of the voice (about a minute in all is best).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The new voice's name.
    #[arg(long)]
    pub name: String,
    /// Confirms that the speaker agreed to having their voice cloned
    /// (required).
    #[arg(long, required = true)]
    pub consent: bool,
    /// neural (default: a Kokoro voice searched for) or world.
    #[arg(long)]
    pub method: Option<String>,
    /// fast, standard or best: how long a neural clone searches.
    #[arg(long)]
    pub quality: Option<String>,
    /// The recordings' language (BCP-47) [default: detected].
    #[arg(long)]
    pub language: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct DesignArgs {
    /// What the voice sounds like (gender, age, accent, pitch, pace,
    /// timbre, in words).
    #[arg(required_unless_present = "keep")]
    pub description: Option<String>,
    /// What the previews say [default: a sentence in the voice's language].
    #[arg(long, conflicts_with = "keep")]
    pub text: Option<String>,
    #[arg(long, conflicts_with = "keep")]
    pub seed: Option<u64>,
    /// Where the previews go (`design-1.mp3` … `design-3.mp3`).
    #[arg(short = 'd', long, default_value = ".", conflicts_with = "keep")]
    pub dir: PathBuf,
    /// Keep this preview (its `designId`) as a voice of the account.
    #[arg(long, requires = "name")]
    pub keep: Option<String>,
    /// The kept voice's name.
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct ChangeArgs {
    /// The recording (audio or video).
    pub input: PathBuf,
    /// The voice to speak in (an id or a name).
    #[arg(long)]
    pub voice: String,
    /// convert (default: keeps the words and timing) or resynthesize.
    #[arg(long)]
    pub mode: Option<String>,
    #[command(flatten)]
    pub out: Output,
    /// mp3, wav, ogg, flac, aac or pcm [default: from the output's
    /// extension, else mp3].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct ExpandArgs {
    /// A video clip to expand (or `--avatar`).
    #[arg(required_unless_present = "avatar", conflicts_with = "avatar")]
    pub input: Option<PathBuf>,
    /// An avatar id from `mediagen avatars`.
    #[arg(long)]
    pub avatar: Option<String>,
    /// Seconds the video lasts (at most 600), or `--audio`.
    #[arg(long, required_unless_present = "audio")]
    pub duration: Option<f64>,
    /// A sound to put under the picture, which it lasts as long as.
    #[arg(long, conflicts_with = "duration")]
    pub audio: Option<PathBuf>,
    /// seamless (default), loop, pingpong or freeze.
    #[arg(long)]
    pub mode: Option<String>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub out: Output,
    /// mp4, webm, mov or mkv [default: from the output's extension, else mp4].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct VoicesArgs {
    /// A language (`es`, `en-GB`).
    #[arg(long)]
    pub language: Option<String>,
    /// male, female or neutral.
    #[arg(long)]
    pub gender: Option<String>,
    /// kokoro, piper or espeak.
    #[arg(long)]
    pub engine: Option<String>,
    /// premade (the catalog) or cloned (the account's own).
    #[arg(long)]
    pub category: Option<String>,
    /// Words to search for in names and descriptions.
    #[arg(long)]
    pub search: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 500)]
    pub limit: usize,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct AvatarsArgs {
    /// Words to search for.
    #[arg(long)]
    pub search: Option<String>,
    /// male, female or neutral.
    #[arg(long)]
    pub gender: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 500)]
    pub limit: usize,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct SoundArgs {
    /// What to hear.
    pub prompt: String,
    #[command(flatten)]
    pub out: Output,
    /// Seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// mp3, wav, ogg, flac, aac or pcm [default: from the output's
    /// extension, else mp3].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Args, Debug)]
pub struct ImageArgs {
    /// What to see.
    pub prompt: String,
    #[command(flatten)]
    pub out: Output,
    #[arg(long)]
    pub width: Option<u32>,
    #[arg(long)]
    pub height: Option<u32>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// flat, watercolor or pixel.
    #[arg(long)]
    pub style: Option<String>,
    /// png, jpeg or webp [default: from the output's extension, else png].
    #[arg(long)]
    pub format: Option<String>,
    #[command(flatten)]
    pub conn: Connection,
}

#[derive(Subcommand, Debug)]
pub enum JobsCommand {
    /// The account's jobs, newest first.
    List {
        /// queued, processing, completed, failed or cancelled.
        #[arg(long)]
        status: Option<String>,
        /// A job kind (`tts`, `stt`, `video.trim`, `dubbing`, …).
        #[arg(long)]
        kind: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Print only the jobs' ids, one a line.
        #[arg(long, conflicts_with = "json")]
        ids: bool,
        #[command(flatten)]
        conn: Connection,
    },
    /// One job.
    Show {
        id: String,
        #[command(flatten)]
        conn: Connection,
    },
    /// Wait for a job to end (exit 1 when it failed or was cancelled).
    Wait {
        id: String,
        #[command(flatten)]
        conn: Connection,
    },
    /// Cancel a queued or running job.
    Cancel {
        id: String,
        #[command(flatten)]
        conn: Connection,
    },
}

#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// The account's keys (never their secrets).
    List {
        #[command(flatten)]
        conn: Connection,
    },
    /// Create a key and print its secret alone on stdout (shown once).
    Create {
        /// read, write or admin.
        #[arg(long, default_value = "write")]
        level: String,
        /// A label such as `production`.
        #[arg(long)]
        name: Option<String>,
        /// When it stops working (ISO 8601, `2027-01-31T00:00:00Z`)
        /// [default: never].
        #[arg(long)]
        expires_at: Option<String>,
        #[command(flatten)]
        conn: Connection,
    },
    /// Revoke a key at once.
    Revoke {
        id: String,
        #[command(flatten)]
        conn: Connection,
    },
}

#[derive(Args, Debug)]
pub struct AccountArgs {
    #[command(flatten)]
    pub conn: Connection,
}

/// `5-10`, `1:05-1:12.5`: a range in seconds.
pub(crate) fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let (start, end) = text
        .split_once('-')
        .ok_or_else(|| format!("`{text}` is not START-END"))?;
    let (start, end) = (seconds(start)?, seconds(end)?);
    if start >= end {
        return Err(format!("`{text}` ends before it starts"));
    }
    Ok((start, end))
}

/// `75`, `1:15`, `0:01:15.5` in seconds.
fn seconds(text: &str) -> Result<f64, String> {
    let mut total = 0.0;
    for part in text.trim().split(':') {
        let value: f64 = part
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{text}` is not a time"))?;
        total = total * 60.0 + value;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_seconds_and_clock_times() {
        assert_eq!(parse_range("5-10").unwrap(), (5.0, 10.0));
        assert_eq!(parse_range("1:05-1:12.5").unwrap(), (65.0, 72.5));
        assert_eq!(parse_range("0:01:00-0:01:01").unwrap(), (60.0, 61.0));
        assert!(parse_range("10-5").is_err());
        assert!(parse_range("5").is_err());
        assert!(parse_range("a-b").is_err());
        assert!(parse_range("-1-2").is_err());
    }
}
