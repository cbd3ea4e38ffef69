//! Sound generation from text prompts, embedded engine: the prompt becomes
//! a sound plan (recognised sources, their modifiers, the room), each source
//! is synthesized by its own generator ([`gen`]) from a seeded random
//! stream, and the layers are mixed, placed (distance, reverb) and, for
//! loops, crossfaded end into start. No prompt word is ever answered with
//! random noise: a prompt with nothing recognised is refused, naming what
//! the engine understands ([`vocabulary`]).

pub mod dsp;
mod gen;

use dsp::{reverb, rms, Biquad, Rng};
use gen::Generator;
pub use gen::Params;
use serde::Serialize;

use mediagen_media::audio::Audio;

/// Shortest and longest sounds, seconds.
pub const MIN_SECONDS: f32 = 0.5;
pub const MAX_SECONDS: f32 = 30.0;

/// What kind of source a concept is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A texture that fills the whole duration (rain, crowd).
    Ambience,
    /// A one-shot or repeating event (door, beep, footsteps).
    Effect,
    Music,
}

/// A sound the engine knows.
pub struct Concept {
    pub name: &'static str,
    /// Words that name it (matched with plural and -ing endings).
    pub keywords: &'static [&'static str],
    pub kind: Kind,
    /// Length chosen when the request gives none, seconds.
    pub natural: f32,
    generate: Generator,
}

macro_rules! concepts {
    ($( $name:literal, $kind:ident, $natural:literal, $gen:path, [$($kw:literal),*]; )*) => {
        /// Every concept, in the order the vocabulary lists them.
        pub static CONCEPTS: &[Concept] = &[ $( Concept {
            name: $name, keywords: &[$($kw),*], kind: Kind::$kind, natural: $natural, generate: $gen,
        }, )* ];
    };
}

concepts! {
    "rain", Ambience, 8.0, gen::rain, ["rain", "rainfall", "raindrop", "drizzle", "downpour", "shower", "rainstorm"];
    "wind", Ambience, 8.0, gen::wind, ["wind", "breeze", "gust", "gale", "howl", "blizzard"];
    "thunder", Effect, 6.0, gen::thunder, ["thunder", "thunderstorm", "storm", "lightning", "rumble"];
    "fire", Ambience, 8.0, gen::fire, ["fire", "campfire", "fireplace", "bonfire", "crackle", "crackling", "flame", "burn"];
    "ocean", Ambience, 10.0, gen::ocean, ["ocean", "sea", "wave", "surf", "beach", "shore", "seashore"];
    "stream", Ambience, 8.0, gen::stream, ["stream", "river", "brook", "creek", "water", "babbling", "bubbling", "bubble"];
    "birds", Ambience, 8.0, gen::birds, ["bird", "birdsong", "chirp", "tweet", "songbird", "sparrow", "robin"];
    "crowd", Ambience, 8.0, gen::crowd, ["crowd", "chatter", "people", "murmur", "talking", "restaurant", "cafe", "party"];
    "applause", Ambience, 5.0, gen::applause, ["applause", "clapping", "clap", "cheer", "ovation"];
    "footsteps", Effect, 4.0, gen::footsteps, ["footstep", "footsteps", "steps", "walking", "walk", "running", "stomp"];
    "door", Effect, 1.5, gen::door, ["door", "knock", "knocking", "slam", "creak"];
    "explosion", Effect, 4.0, gen::explosion, ["explosion", "explode", "blast", "boom", "bomb", "detonation"];
    "gunshot", Effect, 1.5, gen::gunshot, ["gunshot", "gunfire", "gun", "shot", "pistol", "rifle"];
    "engine", Ambience, 6.0, gen::engine, ["engine", "motor", "car", "truck", "motorcycle", "idle", "idling", "rev", "revving"];
    "siren", Ambience, 8.0, gen::siren, ["siren", "ambulance", "alarm", "police"];
    "bell", Effect, 4.0, gen::bell, ["bell", "church", "gong", "toll", "ding", "dong"];
    "chime", Effect, 2.5, gen::chime, ["chime", "windchime", "glockenspiel", "notification", "doorbell"];
    "beep", Effect, 0.5, gen::beep, ["beep", "beeping", "bleep", "tone", "ping"];
    "whoosh", Effect, 1.0, gen::whoosh, ["whoosh", "swoosh", "swish", "woosh", "swipe", "transition"];
    "laser", Effect, 0.5, gen::laser, ["laser", "zap", "blaster", "pew", "phaser"];
    "coin", Effect, 0.5, gen::coin, ["coin", "pickup", "collect", "reward"];
    "jump", Effect, 0.4, gen::jump, ["jump", "hop", "bounce", "boing"];
    "power-up", Effect, 0.8, gen::power_up, ["powerup", "levelup", "upgrade", "bonus"];
    "heartbeat", Effect, 5.0, gen::heartbeat, ["heartbeat", "heart", "pulse", "heartbeats"];
    "clock", Effect, 4.0, gen::clock, ["clock", "tick", "tock", "ticking", "metronome"];
    "typing", Effect, 5.0, gen::typing, ["typing", "keyboard", "keystroke", "typewriter", "type"];
    "music", Music, 12.0, gen::music, ["music", "melody", "song", "tune", "piano", "guitar", "harp", "pad", "strings", "synth", "drum", "beat", "chord", "lullaby", "jingle"];
}

/// What a modifier word does to the source it describes (or to every
/// source when it describes none).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Effect {
    Intensity(f32),
    Rate(f32),
    Pitch(f32),
    Distant,
    Minor(bool),
    /// Reverb room size for the whole mix (indoors, hall, cave).
    Room(f32),
}

static MODIFIERS: &[(&[&str], Effect)] = &[
    (
        &[
            "heavy",
            "loud",
            "strong",
            "intense",
            "violent",
            "powerful",
            "hard",
            "torrential",
            "roaring",
        ],
        Effect::Intensity(1.5),
    ),
    (
        &[
            "light", "soft", "gentle", "quiet", "faint", "calm", "subtle", "weak",
        ],
        Effect::Intensity(0.55),
    ),
    (
        &[
            "fast",
            "quick",
            "rapid",
            "hurried",
            "frantic",
            "energetic",
            "upbeat",
        ],
        Effect::Rate(1.5),
    ),
    (
        &["slow", "lazy", "relaxing", "peaceful", "sleepy", "steady"],
        Effect::Rate(0.7),
    ),
    (
        &["deep", "low", "big", "large", "huge", "massive", "giant"],
        Effect::Pitch(0.7),
    ),
    (
        &["high", "small", "tiny", "little", "squeaky", "bright"],
        Effect::Pitch(1.4),
    ),
    (
        &["distant", "far", "faraway", "muffled", "background"],
        Effect::Distant,
    ),
    (
        &[
            "sad",
            "melancholic",
            "melancholy",
            "dark",
            "gloomy",
            "minor",
            "eerie",
            "spooky",
            "tense",
        ],
        Effect::Minor(true),
    ),
    (
        &[
            "happy",
            "cheerful",
            "joyful",
            "major",
            "uplifting",
            "playful",
        ],
        Effect::Minor(false),
    ),
    (
        &[
            "room", "indoor", "indoors", "inside", "kitchen", "office", "corridor",
        ],
        Effect::Room(0.4),
    ),
    (
        &[
            "hall",
            "cave",
            "cathedral",
            "tunnel",
            "canyon",
            "warehouse",
            "stadium",
        ],
        Effect::Room(0.9),
    ),
];

/// Words that carry no sound meaning (never reported as ignored).
static STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "and",
    "with",
    "in",
    "on",
    "at",
    "to",
    "from",
    "by",
    "for",
    "some",
    "sound",
    "sounds",
    "noise",
    "noises",
    "effect",
    "effects",
    "audio",
    "ambience",
    "ambient",
    "like",
    "that",
    "is",
    "are",
    "then",
    "over",
    "under",
    "into",
    "through",
    "very",
    "it",
    "its",
    "as",
    "or",
    "while",
    "during",
    "near",
    "close",
    "nearby",
    "being",
    "lots",
    "many",
    "few",
    "bpm",
    "loop",
    "looping",
    "seamless",
    "sfx",
    "fx",
    "game",
    "video",
    "style",
    "s",
    "my",
    "your",
    "one",
    "two",
    "three",
    "after",
    "before",
    "again",
    "constant",
    "continuous",
    "short",
    "long",
];

/// One planned source.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Layer {
    pub concept: &'static str,
    pub kind: Kind,
    /// The prompt words that named it.
    pub matched: Vec<String>,
    pub intensity: f32,
    pub rate: f32,
    pub pitch: f32,
    pub distant: bool,
    #[serde(skip)]
    params: Params,
}

/// What the prompt asks for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub layers: Vec<Layer>,
    /// Content words the engine did not use.
    pub ignored_terms: Vec<String>,
    /// Reverb room size of the whole mix, 0 for none.
    pub room: f32,
    /// Beats per minute asked for.
    pub bpm: Option<f32>,
}

/// A prompt with nothing the engine can make.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub ignored_terms: Vec<String>,
}

/// Lower-case words of a prompt ("power-up" → "power", "up").
fn words(prompt: &str) -> Vec<String> {
    prompt
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// True when `word` is `key` or `key` with an inflection.
fn names(word: &str, key: &str) -> bool {
    word == key
        || word.strip_prefix(key).is_some_and(|rest| {
            [
                "s", "es", "ing", "ed", "er", "ers", "y", "ning", "ping", "ting", "ming",
            ]
            .contains(&rest)
        })
        || (key.ends_with('e') && word.strip_prefix(&key[..key.len() - 1]) == Some("ing"))
}

fn concept_of(word: &str) -> Option<&'static Concept> {
    CONCEPTS
        .iter()
        .find(|c| c.keywords.iter().any(|k| names(word, k)))
}

fn modifier_of(word: &str) -> Option<Effect> {
    MODIFIERS
        .iter()
        .find(|(ws, _)| ws.iter().any(|w| names(word, w)))
        .map(|(_, e)| *e)
}

/// Reads a prompt into a sound plan.
pub fn plan(prompt: &str) -> Result<Plan, Unsupported> {
    let ws = words(prompt);
    let mut layers: Vec<Layer> = Vec::new();
    let mut ignored = Vec::new();
    let mut pending: Vec<Effect> = Vec::new();
    let mut global: Vec<Effect> = Vec::new();
    let mut room: f32 = 0.0;
    let mut bpm = None;
    let mut i = 0;
    while i < ws.len() {
        let w = &ws[i];
        // Two words written as one ("power up", "wind chimes", "foot steps").
        let joined = ws.get(i + 1).map(|n| format!("{w}{n}"));
        if let Some(c) = joined.as_deref().and_then(concept_of) {
            add(
                &mut layers,
                c,
                vec![w.clone(), ws[i + 1].clone()],
                &mut pending,
            );
            i += 2;
            continue;
        }
        if let Ok(n) = w.parse::<f32>() {
            if ws.get(i + 1).is_some_and(|n| n == "bpm") {
                bpm = Some(n.clamp(30.0, 240.0));
                i += 2;
                continue;
            }
        }
        if let Some(n) = w.strip_suffix("bpm").and_then(|n| n.parse::<f32>().ok()) {
            bpm = Some(n.clamp(30.0, 240.0));
        } else if let Some(c) = concept_of(w) {
            add(&mut layers, c, vec![w.clone()], &mut pending);
        } else if let Some(e) = modifier_of(w) {
            match e {
                Effect::Room(r) => room = room.max(r),
                e => pending.push(e),
            }
        } else if !STOPWORDS.contains(&w.as_str()) && w.parse::<f64>().is_err() {
            ignored.push(w.clone());
        }
        i += 1;
    }
    if layers.is_empty() {
        return Err(Unsupported {
            ignored_terms: ignored,
        });
    }
    // Modifiers after the last source describe them all ("rain, heavy").
    global.append(&mut pending);
    for layer in &mut layers {
        for e in &global {
            apply(layer, *e);
        }
        layer.params.bpm = bpm;
        layer.params.words = ws.clone();
    }
    Ok(Plan {
        layers,
        ignored_terms: ignored,
        room,
        bpm,
    })
}

fn add(
    layers: &mut Vec<Layer>,
    c: &'static Concept,
    matched: Vec<String>,
    pending: &mut Vec<Effect>,
) {
    let layer = match layers.iter_mut().find(|l| l.concept == c.name) {
        Some(l) => {
            l.matched.extend(matched);
            l
        }
        None => {
            layers.push(Layer {
                concept: c.name,
                kind: c.kind,
                matched,
                intensity: 1.0,
                rate: 1.0,
                pitch: 1.0,
                distant: false,
                params: Params::default(),
            });
            layers.last_mut().expect("just pushed")
        }
    };
    for e in pending.drain(..) {
        apply(layer, e);
    }
}

fn apply(layer: &mut Layer, e: Effect) {
    let p = &mut layer.params;
    match e {
        Effect::Intensity(x) => p.intensity = x,
        Effect::Rate(x) => p.rate = x,
        Effect::Pitch(x) => p.pitch = x,
        Effect::Minor(m) => p.minor = m,
        Effect::Distant => layer.distant = true,
        Effect::Room(_) => {}
    }
    layer.intensity = p.intensity;
    layer.rate = p.rate;
    layer.pitch = p.pitch;
}

impl Plan {
    /// The length chosen when none is asked: the longest natural length of
    /// the sources.
    pub fn natural_seconds(&self) -> f32 {
        self.layers
            .iter()
            .filter_map(|l| CONCEPTS.iter().find(|c| c.name == l.concept))
            .map(|c| c.natural)
            .fold(MIN_SECONDS, f32::max)
            .min(MAX_SECONDS)
    }
}

/// Extra samples to make for a seamless loop of `n` samples: half a
/// second, at most a quarter of the loop.
pub fn loop_tail(n: usize, sample_rate: f32) -> usize {
    ((0.5 * sample_rate) as usize).min(n / 4)
}

/// Makes `buf` (`n` samples plus a tail) a seamless loop of `n` samples:
/// the tail, which continues the end, is crossfaded (equal power) over the
/// head, so the last sample flows into the first.
pub fn close_loop(buf: &mut Vec<f32>, n: usize) {
    let tail = buf.len().saturating_sub(n);
    for i in 0..tail {
        let x = i as f32 / tail as f32 * 0.5 * std::f32::consts::PI;
        buf[i] = buf[i] * x.sin() + buf[n + i] * x.cos();
    }
    buf.truncate(n);
}

/// Renders a plan: exactly `seconds` long at `sample_rate`, the same samples
/// for the same plan and seed. A loop's end flows into its start.
pub fn render(plan: &Plan, seconds: f32, seed: u64, looped: bool, sample_rate: u32) -> Audio {
    let sr = sample_rate as f32;
    let n = (seconds * sr).round() as usize;
    // A loop is rendered longer and its tail crossfaded over its head.
    let tail = if looped { loop_tail(n, sr) } else { 0 };
    let mut rng = Rng::new(seed);
    let mut mix = vec![0.0f32; n + tail];
    for layer in &plan.layers {
        let concept = CONCEPTS
            .iter()
            .find(|c| c.name == layer.concept)
            .expect("planned concepts exist");
        let mut layer_rng = rng.fork();
        let mut buf = (concept.generate)(&mut layer_rng, &layer.params, sr, n + tail);
        buf.resize(n + tail, 0.0);
        // Textures to a common loudness, events to a common peak.
        let level = match concept.kind {
            Kind::Ambience | Kind::Music => 0.15 / rms(&buf).max(1e-6),
            Kind::Effect => 0.7 / buf.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1e-6),
        };
        let mut gain = level * layer.params.intensity.clamp(0.3, 1.6);
        if layer.distant {
            Biquad::lowpass(sr, 1500.0, 0.7).apply(&mut buf);
            reverb(&mut buf, sr, 0.85, 0.5);
            gain *= 0.5;
        }
        for (m, b) in mix.iter_mut().zip(&buf) {
            *m += b * gain;
        }
    }
    if plan.room > 0.0 {
        reverb(&mut mix, sr, plan.room, 0.25 + 0.2 * plan.room);
    }
    close_loop(&mut mix, n);
    // Loudness: the loudest layer's intensity sets the level under a
    // -1 dBFS peak.
    let loudest = plan
        .layers
        .iter()
        .map(|l| l.params.intensity)
        .fold(0.0f32, f32::max)
        .clamp(0.45, 1.0);
    let peak = mix.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1e-6);
    let scale = 0.89 * loudest / peak;
    for s in &mut mix {
        *s *= scale;
    }
    Audio::new(mix, sample_rate)
}

/// The vocabulary for `GET /v1/sound-generation/vocabulary`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Vocabulary {
    pub concepts: Vec<VocabConcept>,
    pub modifiers: Vec<VocabModifier>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VocabConcept {
    pub name: &'static str,
    pub kind: Kind,
    pub keywords: &'static [&'static str],
    /// Seconds made when no duration is asked.
    pub default_duration: f32,
}

#[derive(Debug, Serialize)]
pub struct VocabModifier {
    pub words: &'static [&'static str],
    pub effect: String,
}

pub fn vocabulary() -> Vocabulary {
    Vocabulary {
        concepts: CONCEPTS
            .iter()
            .map(|c| VocabConcept {
                name: c.name,
                kind: c.kind,
                keywords: c.keywords,
                default_duration: c.natural,
            })
            .collect(),
        modifiers: MODIFIERS
            .iter()
            .map(|(words, e)| VocabModifier {
                words,
                effect: match e {
                    Effect::Intensity(x) if *x > 1.0 => "louder, denser".into(),
                    Effect::Intensity(_) => "softer, sparser".into(),
                    Effect::Rate(x) if *x > 1.0 => "faster".into(),
                    Effect::Rate(_) => "slower".into(),
                    Effect::Pitch(x) if *x < 1.0 => "lower, bigger".into(),
                    Effect::Pitch(_) => "higher, smaller".into(),
                    Effect::Distant => "far away: muffled, reverberant, quieter".into(),
                    Effect::Minor(true) => "music in a minor key".into(),
                    Effect::Minor(false) => "music in a major key".into(),
                    Effect::Room(r) if *r < 0.5 => "indoors: a room's reverb".into(),
                    Effect::Room(_) => "a large space's reverb".into(),
                },
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_become_plans() {
        let p = plan("Distant thunder and heavy rain on a tin roof").unwrap();
        let names: Vec<_> = p.layers.iter().map(|l| l.concept).collect();
        assert_eq!(names, ["thunder", "rain"]);
        assert!(p.layers[0].distant && !p.layers[1].distant);
        assert_eq!(p.layers[1].intensity, 1.5);
        assert_eq!(p.ignored_terms, ["tin", "roof"]);
        let p = plan("upbeat piano melody at 128 bpm").unwrap();
        assert_eq!(p.layers[0].concept, "music");
        assert_eq!(p.bpm, Some(128.0));
        assert_eq!(plan("wind chimes").unwrap().layers[0].concept, "chime");
        assert_eq!(
            plan("8-bit power-up").unwrap().layers[0].concept,
            "power-up"
        );
        assert_eq!(plan("birds chirping").unwrap().layers.len(), 1);
        let none = plan("a quantum spreadsheet").unwrap_err();
        assert_eq!(none.ignored_terms, ["quantum", "spreadsheet"]);
    }

    #[test]
    fn every_concept_sounds_and_is_seeded() {
        for c in CONCEPTS {
            let p = plan(c.keywords[0]).unwrap();
            assert_eq!(p.layers[0].concept, c.name, "{}", c.keywords[0]);
            let a = render(&p, 1.0, 7, false, 22_050);
            assert_eq!(a.samples.len(), 22_050);
            assert!(rms(&a.samples) > 0.005, "{} is silent", c.name);
            assert!(a.samples.iter().all(|x| x.is_finite() && x.abs() <= 0.9));
            assert_eq!(a.samples, render(&p, 1.0, 7, false, 22_050).samples);
        }
    }
}
