//! The prompt's vocabulary: colours, sizes, counts, settings, times of
//! day, styles, the phrases of spatial relations and the words passed over;
//! and the settings, times of day and relations a scene is made of.

use mediagen_core::format::Style;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Setting {
    Meadow,
    Beach,
    Forest,
    City,
    Snow,
    Desert,
    Room,
    Sky,
    Mountains,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeOfDay {
    Day,
    Sunset,
    Night,
}

/// How an object is placed: against other objects, or (the last four) in
/// the picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Relation {
    /// The subject wears the object on its head.
    Wearing,
    On,
    In,
    Above,
    Under,
    InFrontOf,
    Behind,
    NextTo,
    LeftOf,
    RightOf,
    /// Between the two objects.
    Between,
    Around,
    Near,
    Far,
    InBackground,
    InForeground,
    OnLeft,
    OnRight,
}

impl Relation {
    /// Places the subject against its object (it moves with it); the rest
    /// order objects side by side.
    pub fn attaches(self) -> bool {
        use Relation::*;
        matches!(
            self,
            Wearing | On | In | Above | Under | InFrontOf | Behind | Around
        )
    }
}

pub static COLOURS: &[(&str, [u8; 3])] = &[
    ("red", [220, 30, 40]),
    ("orange", [245, 140, 20]),
    ("yellow", [250, 215, 30]),
    ("green", [40, 170, 60]),
    ("blue", [40, 90, 220]),
    ("purple", [140, 60, 190]),
    ("violet", [140, 60, 190]),
    ("pink", [245, 120, 180]),
    ("brown", [130, 80, 40]),
    ("black", [25, 25, 25]),
    ("white", [245, 245, 245]),
    ("gray", [128, 128, 128]),
    ("grey", [128, 128, 128]),
    ("gold", [230, 180, 40]),
    ("golden", [230, 180, 40]),
];

/// Size words and the factor they scale an object by ("a giant dog" is
/// taller than a tree).
pub static SIZES: &[(&str, f32)] = &[
    ("tiny", 0.5),
    ("small", 0.7),
    ("little", 0.7),
    ("mini", 0.6),
    ("big", 1.35),
    ("large", 1.35),
    ("tall", 1.25),
    ("huge", 1.7),
    ("giant", 3.5),
    ("gigantic", 3.5),
    ("enormous", 3.5),
    ("massive", 3.0),
];

/// Count words (a digit is read as its number).
pub static NUMBERS: &[(&str, usize)] = &[
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("dozen", 12),
    ("pair", 2),
    ("couple", 2),
    ("both", 2),
    ("few", 3),
    ("several", 3),
    ("many", 5),
    ("lots", 5),
];

/// What a phrase of the prompt means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phrase {
    /// A relation to the next object.
    Relation(Relation),
    /// A place in the picture for the object before (or after).
    Place(Relation),
    Count(usize),
    /// "each", "every": one of the next object per copy of the subject.
    Each,
    /// "and", "with", a comma: another object of the same group.
    Join,
}

use Phrase::{Count, Each, Join, Place};
use Relation::*;

const fn rel(r: Relation) -> Phrase {
    Phrase::Relation(r)
}

/// Phrases, matched longest first.
pub static PHRASES: &[(&[&str], Phrase)] = &[
    (&["in", "front", "of"], rel(InFrontOf)),
    (&["in", "the", "front", "of"], rel(InFrontOf)),
    (&["behind"], rel(Behind)),
    (&["in", "back", "of"], rel(Behind)),
    (&["at", "the", "back", "of"], rel(Behind)),
    (&["on", "top", "of"], rel(On)),
    (&["on", "the", "top", "of"], rel(On)),
    (&["on"], rel(On)),
    (&["upon"], rel(On)),
    (&["onto"], rel(On)),
    (&["atop"], rel(On)),
    (&["in"], rel(In)),
    (&["inside"], rel(In)),
    (&["inside", "of"], rel(In)),
    (&["within"], rel(In)),
    (&["into"], rel(In)),
    (&["under"], rel(Under)),
    (&["below"], rel(Under)),
    (&["beneath"], rel(Under)),
    (&["underneath"], rel(Under)),
    (&["above"], rel(Above)),
    (&["over"], rel(Above)),
    (&["next", "to"], rel(NextTo)),
    (&["beside"], rel(NextTo)),
    (&["besides"], rel(NextTo)),
    (&["alongside"], rel(NextTo)),
    (&["by"], rel(NextTo)),
    (&["by", "the", "side", "of"], rel(NextTo)),
    (&["to", "the", "left", "of"], rel(LeftOf)),
    (&["on", "the", "left", "of"], rel(LeftOf)),
    (&["at", "the", "left", "of"], rel(LeftOf)),
    (&["to", "the", "left", "side", "of"], rel(LeftOf)),
    (&["on", "the", "left", "side", "of"], rel(LeftOf)),
    (&["left", "of"], rel(LeftOf)),
    (&["to", "the", "right", "of"], rel(RightOf)),
    (&["on", "the", "right", "of"], rel(RightOf)),
    (&["at", "the", "right", "of"], rel(RightOf)),
    (&["to", "the", "right", "side", "of"], rel(RightOf)),
    (&["on", "the", "right", "side", "of"], rel(RightOf)),
    (&["right", "of"], rel(RightOf)),
    (&["between"], rel(Between)),
    (&["in", "between"], rel(Between)),
    (&["around"], rel(Around)),
    (&["all", "around"], rel(Around)),
    (&["round"], rel(Around)),
    (&["surrounding"], rel(Around)),
    (&["encircling"], rel(Around)),
    (&["circling"], rel(Around)),
    (&["near"], rel(Near)),
    (&["near", "to"], rel(Near)),
    (&["close", "to"], rel(Near)),
    (&["nearby"], rel(Near)),
    (&["far", "from"], rel(Far)),
    (&["far", "away", "from"], rel(Far)),
    (&["away", "from"], rel(Far)),
    (&["wearing"], rel(Wearing)),
    (&["wears"], rel(Wearing)),
    (&["in", "the", "background"], Place(InBackground)),
    (&["in", "the", "distance"], Place(InBackground)),
    (&["far", "away"], Place(InBackground)),
    (&["in", "the", "foreground"], Place(InForeground)),
    (&["in", "front"], Place(InForeground)),
    (&["on", "the", "left"], Place(OnLeft)),
    (&["to", "the", "left"], Place(OnLeft)),
    (&["at", "the", "left"], Place(OnLeft)),
    (&["on", "the", "left", "side"], Place(OnLeft)),
    (&["on", "the", "right"], Place(OnRight)),
    (&["to", "the", "right"], Place(OnRight)),
    (&["at", "the", "right"], Place(OnRight)),
    (&["on", "the", "right", "side"], Place(OnRight)),
    (&["half", "a", "dozen"], Count(6)),
    (&["a", "dozen"], Count(12)),
    (&["a", "pair", "of"], Count(2)),
    (&["a", "couple", "of"], Count(2)),
    (&["a", "few"], Count(3)),
    (&["a", "lot", "of"], Count(5)),
    (&["lots", "of"], Count(5)),
    (&["a"], Count(1)),
    (&["an"], Count(1)),
    (&["each"], Each),
    (&["every"], Each),
    (&["and"], Join),
    (&["with"], Join),
    (&["plus"], Join),
    (&[","], Join),
];

/// The longest phrase at the start of `words`: its length and meaning.
pub fn phrase(words: &[String]) -> Option<(usize, Phrase)> {
    PHRASES
        .iter()
        .filter(|(p, _)| p.len() <= words.len() && p.iter().zip(words).all(|(a, b)| a == b))
        .max_by_key(|(p, _)| p.len())
        .map(|(p, meaning)| (p.len(), *meaning))
}

pub static SETTINGS: &[(&[&str], Setting)] = &[
    (
        &[
            "beach", "shore", "seaside", "ocean", "sea", "coast", "sand", "sandy",
        ],
        Setting::Beach,
    ),
    (&["forest", "woods", "woodland", "jungle"], Setting::Forest),
    (
        &["city", "town", "street", "downtown", "skyline", "urban"],
        Setting::City,
    ),
    (&["snow", "snowy", "winter", "arctic", "icy"], Setting::Snow),
    (&["desert", "dunes", "sahara"], Setting::Desert),
    (
        &[
            "room", "indoors", "inside", "kitchen", "bedroom", "office", "living", "interior",
        ],
        Setting::Room,
    ),
    (&["sky", "cloudy", "air"], Setting::Sky),
    (
        &["mountain", "mountains", "hills", "alps", "valley"],
        Setting::Mountains,
    ),
    (
        &[
            "meadow",
            "field",
            "park",
            "garden",
            "grass",
            "grassy",
            "countryside",
            "farm",
        ],
        Setting::Meadow,
    ),
];

pub static TIMES: &[(&[&str], TimeOfDay)] = &[
    (
        &["sunset", "sunrise", "dusk", "dawn", "evening", "twilight"],
        TimeOfDay::Sunset,
    ),
    (
        &["night", "nighttime", "midnight", "starry", "stars", "dark"],
        TimeOfDay::Night,
    ),
    (
        &["day", "daytime", "noon", "sunny", "morning", "afternoon"],
        TimeOfDay::Day,
    ),
];

pub static STYLES: &[(&[&str], Style)] = &[
    (
        &["watercolor", "watercolour", "painting", "painted", "paint"],
        Style::Watercolor,
    ),
    (
        &["pixel", "pixelated", "8bit", "retro", "pixels"],
        Style::Pixel,
    ),
    (
        &["flat", "vector", "cartoon", "icon", "minimal"],
        Style::Flat,
    ),
];

/// Words that carry no picture of their own (postures, articles, filler).
pub static STOPWORDS: &[&str] = &[
    "the",
    "of",
    "at",
    "is",
    "are",
    "to",
    "it",
    "its",
    "his",
    "her",
    "their",
    "there",
    "that",
    "which",
    "who",
    "while",
    "sitting",
    "sits",
    "standing",
    "stands",
    "lying",
    "resting",
    "sleeping",
    "perched",
    "parked",
    "flying",
    "floating",
    "hanging",
    "hovering",
    "swimming",
    "walking",
    "running",
    "playing",
    "picture",
    "image",
    "photo",
    "illustration",
    "drawing",
    "style",
    "art",
    "scene",
    "very",
    "some",
    "cute",
    "beautiful",
    "nice",
    "pretty",
    "lovely",
    "happy",
    "view",
    "wallpaper",
    "during",
    "together",
    "side",
    "top",
    "them",
    "other",
    "s",
];
