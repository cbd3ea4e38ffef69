//! Prompt → scene: objects (with colour, size, count), the relations
//! between them, the setting, the time of day and the style.

use super::icons::{Icon, Icons};

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

pub use mediagen_core::format::Style;

/// How an object is placed against another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Relation {
    /// On the other's head.
    Wearing,
    /// Standing on top of the other.
    On,
    Above,
    Under,
    NextTo,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The prompt word that named it.
    pub word: String,
    pub icon: Icon,
    pub color: Option<(&'static str, [u8; 3])>,
    pub scale: f32,
    pub count: usize,
    /// Placed relative to another object (its index).
    pub anchor: Option<(Relation, usize)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    pub objects: Vec<Object>,
    pub setting: Setting,
    pub time: TimeOfDay,
    pub style: Style,
    pub ignored: Vec<String>,
    /// True when the prompt named a setting or a time of day.
    pub described: bool,
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

static NUMBERS: &[(&str, usize)] = &[
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("pair", 2),
    ("several", 3),
    ("many", 5),
];

static SETTINGS: &[(&[&str], Setting)] = &[
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
    (&["sky", "clouds", "cloudy", "flying", "air"], Setting::Sky),
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

static TIMES: &[(&[&str], TimeOfDay)] = &[
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

static STYLES: &[(&[&str], Style)] = &[
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

static RELATIONS: &[(&str, Relation)] = &[
    ("wearing", Relation::Wearing),
    ("wears", Relation::Wearing),
    ("on", Relation::On),
    ("atop", Relation::On),
    ("above", Relation::Above),
    ("over", Relation::Above),
    ("under", Relation::Under),
    ("below", Relation::Under),
    ("beneath", Relation::Under),
    ("beside", Relation::NextTo),
    ("next", Relation::NextTo),
    ("near", Relation::NextTo),
    ("with", Relation::NextTo),
    ("and", Relation::NextTo),
];

static STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "at",
    "in",
    "is",
    "are",
    "to",
    "top",
    "by",
    "sitting",
    "standing",
    "lying",
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
    "one",
    "its",
    "his",
    "her",
    "their",
    "tall",
    "cute",
    "beautiful",
    "nice",
    "view",
    "background",
    "wallpaper",
    "front",
    "during",
    "under",
    "while",
    "s",
];

fn lookup<T: Copy>(table: &[(&[&str], T)], word: &str) -> Option<T> {
    table
        .iter()
        .find(|(ws, _)| ws.contains(&word))
        .map(|(_, t)| *t)
}

/// Reads a prompt. `style` from the request wins over style words.
pub fn parse(prompt: &str, icons: &Icons, style: Option<Style>) -> Scene {
    let words: Vec<String> = prompt
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let mut scene = Scene {
        objects: Vec::new(),
        setting: Setting::Meadow,
        time: TimeOfDay::Day,
        style: style.unwrap_or(Style::Flat),
        ignored: Vec::new(),
        described: false,
    };
    let mut setting = None;
    let (mut colour, mut scale, mut count) = (None, 1.0f32, 1usize);
    let mut relation: Option<Relation> = None;
    for w in &words {
        let w = w.as_str();
        if let Some(c) = COLOURS.iter().find(|(n, _)| *n == w) {
            colour = Some((c.0, c.1));
        } else if ["big", "large", "huge", "giant"].contains(&w) {
            scale = 1.35;
        } else if ["small", "tiny", "little", "baby"].contains(&w) {
            scale = 0.65;
        } else if let Some(&(_, n)) = NUMBERS.iter().find(|(n, _)| *n == w) {
            count = n;
        } else if let Ok(n) = w.parse::<usize>() {
            count = n.clamp(1, 6);
        } else if let Some(t) = lookup(TIMES, w) {
            scene.time = t;
            scene.described = true;
        } else if let Some(s) = lookup(STYLES, w) {
            if style.is_none() {
                scene.style = s;
            }
        } else if let Some(s) = lookup(SETTINGS, w) {
            setting.get_or_insert(s);
            scene.described = true;
            // "on a beach" names a place, not an object to stand on.
            if relation == Some(Relation::On) {
                relation = None;
            }
        } else if let Some(&(_, r)) = RELATIONS.iter().find(|(n, _)| *n == w) {
            // "with" and "and" only join two objects when one came before.
            if !scene.objects.is_empty() {
                relation = Some(r);
            }
        } else if STOPWORDS.contains(&w) {
        } else if let Some(icon) = icons.find(w) {
            let anchor = relation.take().and_then(|r| {
                let subject = scene.objects.len().checked_sub(1)?;
                Some((r, subject))
            });
            let index = scene.objects.len();
            let mut object = Object {
                word: w.to_owned(),
                icon,
                color: colour.take(),
                scale,
                count: if anchor.is_some() { 1 } else { count },
                anchor: None,
            };
            (scale, count) = (1.0, 1);
            // "A wearing B": B sits on A's head. "A on B": A stands on B.
            // "A under B": B floats above A. "A above B": A above B.
            match anchor {
                Some((Relation::Wearing, a)) => object.anchor = Some((Relation::Wearing, a)),
                Some((Relation::Above, a)) => {
                    scene.objects[a].anchor = Some((Relation::Above, index))
                }
                Some((Relation::On, a)) => scene.objects[a].anchor = Some((Relation::On, index)),
                Some((Relation::Under, a)) => object.anchor = Some((Relation::Above, a)),
                Some((Relation::NextTo, _)) | None => {}
            }
            scene.objects.push(object);
        } else {
            scene.ignored.push(w.to_owned());
        }
    }
    scene.setting = setting.unwrap_or(Setting::Meadow);
    scene
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs the icon set (`scripts/models.sh`, run by `make test`).
    fn icons() -> Icons {
        let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
        Icons::discover(&models).expect("the emoji icon set is installed (scripts/models.sh)")
    }

    #[test]
    fn prompts_become_scenes() {
        let icons = icons();
        let s = parse("A cat wearing a red hat on a beach at sunset", &icons, None);
        assert_eq!(
            (s.setting, s.time, s.style),
            (Setting::Beach, TimeOfDay::Sunset, Style::Flat)
        );
        assert_eq!(s.objects.len(), 2);
        assert_eq!(s.objects[0].icon.name, "cat");
        assert_eq!(s.objects[1].icon.name, "top_hat");
        assert_eq!(s.objects[1].color.map(|c| c.0), Some("red"));
        assert_eq!(s.objects[1].anchor, Some((Relation::Wearing, 0)));
        assert!(s.described && s.ignored.is_empty());

        let s = parse(
            "three small birds above a big tree, pixel art",
            &icons,
            None,
        );
        assert_eq!(s.objects[0].count, 3);
        assert_eq!(s.objects[0].scale, 0.65);
        assert_eq!(s.objects[0].anchor, Some((Relation::Above, 1)));
        assert_eq!(s.objects[1].icon.name, "deciduous_tree");
        assert_eq!(s.style, Style::Pixel);
        assert_eq!(
            parse("a dog on a table", &icons, None).objects[0].anchor,
            Some((Relation::On, 1))
        );
        assert_eq!(parse("puppies", &icons, None).objects.len(), 1);
        let nothing = parse("xyzzy plugh", &icons, None);
        assert!(nothing.objects.is_empty() && !nothing.described);
        assert_eq!(nothing.ignored, ["xyzzy", "plugh"]);
    }
}
