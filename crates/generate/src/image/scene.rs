//! Prompt → scene: objects (with colour, size, count), the relations
//! between them, the setting, the time of day and the style. The words are
//! in [`super::words`].

use serde::Serialize;

use super::classes::{self, Class};
use super::icons::{Icon, Icons};
use super::words::{self, Phrase};

pub use super::words::{Relation, Setting, TimeOfDay};
pub use mediagen_core::format::Style;

/// A relation the prompt states: `subject` and its objects (indices into
/// [`Scene::objects`]; two for between, none for a place in the picture).
/// With `each`, copy k of the subject goes with copy k of the object.
#[derive(Debug, Clone, PartialEq)]
pub struct Stated {
    pub relation: Relation,
    pub subject: usize,
    pub objects: Vec<usize>,
    pub each: bool,
}

impl Stated {
    /// The object this relation moves: the worn thing for wearing, else
    /// the subject.
    pub fn moved(&self) -> usize {
        match (self.relation, self.objects.first()) {
            (Relation::Wearing, Some(&worn)) => worn,
            _ => self.subject,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The prompt word(s) that named it.
    pub word: String,
    pub icon: Icon,
    pub class: Class,
    pub color: Option<(&'static str, [u8; 3])>,
    /// From size words ("giant", "small").
    pub scale: f32,
    pub count: usize,
}

/// Something the prompt asked that was drawn differently, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Adjustment {
    pub object: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    pub objects: Vec<Object>,
    pub relations: Vec<Stated>,
    pub setting: Setting,
    pub time: TimeOfDay,
    pub style: Style,
    pub ignored: Vec<String>,
    pub adjustments: Vec<Adjustment>,
    /// True when the prompt named a setting or a time of day.
    pub described: bool,
}

/// Most copies of one object drawn.
pub const MAX_COUNT: usize = 12;
/// Copies drawn for a plural without a number ("birds").
pub const PLURAL_COUNT: usize = 3;

fn lookup<T: Copy>(table: &[(&[&str], T)], word: &str) -> Option<T> {
    table
        .iter()
        .find(|(ws, _)| ws.contains(&word))
        .map(|(_, t)| *t)
}

/// The prompt's words, lower case; commas kept as words (they join).
fn tokens(prompt: &str) -> Vec<String> {
    prompt
        .to_lowercase()
        .replace(',', " , ")
        .split(|c: char| !(c.is_alphanumeric() || c == ','))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The reader's state between words.
#[derive(Default)]
struct Reader {
    colour: Option<(&'static str, [u8; 3])>,
    scale: Option<f32>,
    count: Option<usize>,
    relation: Option<Relation>,
    each: bool,
    /// Objects the next relation applies to ("a cat and a dog under …").
    group: Vec<usize>,
    /// The last object was the object of a relation.
    after_object: bool,
    joined: bool,
    joined_with: bool,
    /// Between's first object, waiting for its second.
    between: Option<usize>,
    /// A place in the picture named before its object.
    place: Option<Relation>,
}

/// Reads a prompt. `style` from the request wins over style words.
pub fn parse(prompt: &str, icons: &Icons, style: Option<Style>) -> Scene {
    let words = tokens(prompt);
    let mut scene = Scene {
        objects: Vec::new(),
        relations: Vec::new(),
        setting: Setting::Meadow,
        time: TimeOfDay::Day,
        style: style.unwrap_or(Style::Flat),
        ignored: Vec::new(),
        adjustments: Vec::new(),
        described: false,
    };
    let mut setting = None;
    let mut r = Reader::default();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if let Some((len, meaning)) = words::phrase(&words[i..]) {
            r.phrase(meaning, &mut scene);
            i += len;
            continue;
        }
        i += 1;
        if let Some(c) = words::COLOURS.iter().find(|(n, _)| *n == w) {
            r.colour = Some((c.0, c.1));
        } else if let Some(&(_, s)) = words::SIZES.iter().find(|(n, _)| *n == w) {
            r.scale = Some(s);
        } else if let Some(&(_, n)) = words::NUMBERS.iter().find(|(n, _)| *n == w) {
            r.count = Some(n);
        } else if let Ok(n) = w.parse::<usize>() {
            r.count = Some(n);
        } else if let Some(t) = lookup(words::TIMES, w) {
            scene.time = t;
            scene.described = true;
            // "on a sunny day" names a time, not an object.
            r.relation = None;
        } else if let Some(s) = lookup(words::STYLES, w) {
            if style.is_none() {
                scene.style = s;
            }
        } else if let Some(s) = lookup(words::SETTINGS, w) {
            setting.get_or_insert(s);
            scene.described = true;
            // "on a beach" names a place, not an object to stand on.
            r.relation = None;
        } else if ["it", "them"].contains(&w) {
            r.pronoun(&mut scene);
        } else if words::STOPWORDS.contains(&w) {
        } else if let Some((icon, plural)) = two_words(icons, &words[i - 1..]) {
            let word = words[i - 1..=i].join(" ");
            i += 1;
            r.object(word, icon, plural, &mut scene);
        } else if let Some((icon, plural)) = icons.find(w) {
            r.object(w.to_owned(), icon, plural, &mut scene);
        } else {
            scene.ignored.push(w.to_owned());
        }
    }
    r.finish(&mut scene);
    scene.setting = setting.unwrap_or(Setting::Meadow);
    scene
}

/// An icon named by two words ("palm tree", "teddy bears"), and whether
/// the second was a plural.
fn two_words(icons: &Icons, words: &[String]) -> Option<(Icon, bool)> {
    let [first, second, ..] = words else {
        return None;
    };
    if let Some(icon) = icons.named(&format!("{first}_{second}")) {
        return Some((icon, false));
    }
    let singular = second.strip_suffix('s')?;
    icons
        .named(&format!("{first}_{singular}"))
        .map(|icon| (icon, true))
}

impl Reader {
    fn phrase(&mut self, meaning: Phrase, scene: &mut Scene) {
        match meaning {
            Phrase::Relation(rel) => {
                // "with" and "and" only join two objects when one came before.
                if !self.group.is_empty() {
                    self.relation = Some(rel);
                }
            }
            Phrase::Place(place) => {
                if self.group.is_empty() || self.relation.is_some() {
                    self.place = Some(place);
                } else {
                    for &s in &self.group {
                        scene.relations.push(Stated {
                            relation: place,
                            subject: s,
                            objects: Vec::new(),
                            each: false,
                        });
                    }
                    // "a house on the right and a tree …": a new group.
                    self.after_object = true;
                }
            }
            Phrase::Count(n) => self.count = Some(n),
            Phrase::Each => self.each = true,
            Phrase::Join => {
                if self.relation.is_none() {
                    self.joined = true;
                }
                self.joined_with = self.relation.is_none();
            }
        }
    }

    fn object(&mut self, word: String, icon: Icon, plural: bool, scene: &mut Scene) {
        let class = classes::of(&icon.name);
        let requested = self.count.take();
        // "the cow" again is the same cow.
        let same = scene.objects.iter().position(|o| o.icon == icon);
        if let (None, false, Some(index)) = (requested, plural, same) {
            (self.colour, self.scale) = (None, None);
            self.relate(index, scene);
            return;
        }
        let mut count = requested.unwrap_or(if plural { PLURAL_COUNT } else { 1 });
        if count > MAX_COUNT {
            scene.adjustments.push(Adjustment {
                object: word.clone(),
                reason: format!("{count} asked, at most {MAX_COUNT} of one object are drawn"),
            });
            count = MAX_COUNT;
        }
        let index = scene.objects.len();
        scene.objects.push(Object {
            word,
            icon,
            class,
            color: self.colour.take(),
            scale: self.scale.take().unwrap_or(1.0),
            count: count.max(1),
        });
        // "a cat with a hat": the hat is worn.
        if self.joined_with && self.relation.is_none() && class.worn {
            if let Some(&wearer) = self.group.last() {
                if scene.objects[wearer].class.creature {
                    self.relation = Some(Relation::Wearing);
                    self.joined = false;
                }
            }
        }
        self.relate(index, scene);
    }

    /// The object at `index` was named: it completes a pending relation,
    /// or joins or starts the group.
    fn relate(&mut self, index: usize, scene: &mut Scene) {
        match self.relation.take() {
            Some(Relation::Between) => match self.between.take() {
                None => {
                    self.between = Some(index);
                    self.relation = Some(Relation::Between);
                }
                Some(first) => {
                    self.state(Relation::Between, vec![first, index], scene);
                    self.group = vec![index];
                    self.after_object = true;
                }
            },
            // What is worn goes with its wearer: "a snowman wearing a hat
            // next to a tree" has the snowman next to the tree.
            Some(Relation::Wearing) => self.state(Relation::Wearing, vec![index], scene),
            Some(rel) => {
                self.state(rel, vec![index], scene);
                self.group = vec![index];
                self.after_object = true;
            }
            None => {
                if self.joined && !self.after_object {
                    self.group.push(index);
                } else {
                    self.group = vec![index];
                }
                self.after_object = false;
            }
        }
        if let Some(place) = self.place.take() {
            scene.relations.push(Stated {
                relation: place,
                subject: index,
                objects: Vec::new(),
                each: false,
            });
        }
        self.joined = false;
        self.joined_with = false;
    }

    /// "it" after a relation: the last object against the one before it
    /// ("a table with a cake on it").
    fn pronoun(&mut self, scene: &mut Scene) {
        let (Some(rel), Some(&subject)) = (self.relation, self.group.last()) else {
            return;
        };
        let before = match self.group.len() {
            n if n >= 2 => Some(self.group[n - 2]),
            _ => subject.checked_sub(1),
        };
        if let Some(object) = before {
            self.relation = None;
            self.group = vec![subject];
            self.state(rel, vec![object], scene);
            self.after_object = true;
        }
    }

    /// States `rel` of every object of the group.
    fn state(&mut self, rel: Relation, objects: Vec<usize>, scene: &mut Scene) {
        let each = std::mem::take(&mut self.each);
        for &s in &self.group {
            let target = objects[0];
            // "a hat on a cat" is worn.
            let (rel, subject, objects) = if rel == Relation::On
                && scene.objects[s].class.worn
                && scene.objects[target].class.creature
            {
                (Relation::Wearing, target, vec![s])
            } else {
                (rel, s, objects.clone())
            };
            scene.relations.push(Stated {
                relation: rel,
                subject,
                objects,
                each,
            });
        }
    }

    fn finish(&mut self, scene: &mut Scene) {
        // "between a dog" with no second object: stated, and reported unmet.
        if let Some(first) = self.between.take() {
            self.state(Relation::Between, vec![first], scene);
        }
        // "between two trees": between two objects of one kind.
        for k in 0..scene.relations.len() {
            let s = &scene.relations[k];
            if s.relation != Relation::Between || s.objects.len() != 1 {
                continue;
            }
            let b = s.objects[0];
            if scene.objects[b].count == 2 {
                scene.objects[b].count = 1;
                let twin = scene.objects[b].clone();
                scene.objects.push(twin);
                let index = scene.objects.len() - 1;
                scene.relations[k].objects.push(index);
            }
        }
        // "each": as many of one as of the other, paired.
        for k in 0..scene.relations.len() {
            let s = &scene.relations[k];
            if !s.each || s.objects.len() != 1 {
                continue;
            }
            let (a, b) = (s.subject, s.objects[0]);
            let n = scene.objects[a].count.max(scene.objects[b].count);
            scene.objects[a].count = n;
            scene.objects[b].count = n;
        }
        // Wearing pairs each wearer with its own hat.
        for s in &mut scene.relations {
            if s.relation == Relation::Wearing {
                let (a, b) = (s.subject, s.objects[0]);
                if scene.objects[b].count == scene.objects[a].count && scene.objects[a].count > 1 {
                    s.each = true;
                }
            }
        }
    }
}

impl Scene {
    /// The scene without the objects whose icons are named (a negative
    /// prompt), and without the relations that named them.
    pub fn without(mut self, icon_names: &[&str]) -> Scene {
        let keep: Vec<bool> = self
            .objects
            .iter()
            .map(|o| !icon_names.contains(&o.icon.name.as_str()))
            .collect();
        let mut new_index = Vec::with_capacity(keep.len());
        let mut next = 0;
        for &k in &keep {
            new_index.push(k.then_some(next));
            next += usize::from(k);
        }
        self.relations = self
            .relations
            .into_iter()
            .filter_map(|s| {
                Some(Stated {
                    subject: new_index[s.subject]?,
                    objects: s
                        .objects
                        .iter()
                        .map(|&o| new_index[o])
                        .collect::<Option<Vec<_>>>()?,
                    ..s
                })
            })
            .collect();
        self.objects = self
            .objects
            .into_iter()
            .zip(keep)
            .filter_map(|(o, k)| k.then_some(o))
            .collect();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs the icon set (`scripts/models.sh`, run by `make test`).
    fn icons() -> Icons {
        let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
        Icons::discover(&models).expect("the emoji icon set is installed (scripts/models.sh)")
    }

    fn stated(s: &Scene) -> Vec<(Relation, String, Vec<String>)> {
        s.relations
            .iter()
            .map(|r| {
                (
                    r.relation,
                    s.objects[r.subject].word.clone(),
                    r.objects
                        .iter()
                        .map(|&o| s.objects[o].word.clone())
                        .collect(),
                )
            })
            .collect()
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
        assert_eq!(
            stated(&s),
            [(Relation::Wearing, "cat".into(), vec!["hat".into()])]
        );
        assert!(s.described && s.ignored.is_empty());

        let s = parse(
            "three small birds above a big tree, pixel art",
            &icons,
            None,
        );
        assert_eq!(s.objects[0].count, 3);
        assert_eq!(s.objects[0].scale, 0.7);
        assert_eq!(s.relations[0].relation, Relation::Above);
        assert_eq!(s.objects[1].icon.name, "deciduous_tree");
        assert_eq!(s.style, Style::Pixel);
        assert_eq!(
            parse("puppies", &icons, None).objects[0].count,
            PLURAL_COUNT
        );
        let nothing = parse("xyzzy plugh", &icons, None);
        assert!(nothing.objects.is_empty() && !nothing.described);
        assert_eq!(nothing.ignored, ["xyzzy", "plugh"]);
    }

    #[test]
    fn phrases_counts_and_groups() {
        let icons = icons();
        let s = parse("a car to the right of a tree", &icons, None);
        assert_eq!(
            stated(&s),
            [(Relation::RightOf, "car".into(), vec!["tree".into()])]
        );
        let s = parse(
            "a cat on a chair next to a table under a lamp",
            &icons,
            None,
        );
        let r: Vec<Relation> = s.relations.iter().map(|r| r.relation).collect();
        assert_eq!(r, [Relation::On, Relation::NextTo, Relation::Under]);
        let s = parse("a cat and a dog under a tree", &icons, None);
        assert_eq!(s.relations.len(), 2);
        let s = parse("a fox between a house and a tree", &icons, None);
        assert_eq!(
            stated(&s),
            [(
                Relation::Between,
                "fox".into(),
                vec!["house".into(), "tree".into()]
            )]
        );
        let s = parse("a dozen eggs, a pair of shoes and 5 balloons", &icons, None);
        let counts: Vec<usize> = s.objects.iter().map(|o| o.count).collect();
        assert_eq!(counts, [12, 2, 5]);
        let s = parse("40 birds", &icons, None);
        assert_eq!(s.objects[0].count, MAX_COUNT);
        assert_eq!(s.adjustments.len(), 1);
        let s = parse("three dogs each wearing a hat", &icons, None);
        assert_eq!(s.objects[1].count, 3);
        assert!(s.relations[0].each);
        let s = parse("a castle in the background", &icons, None);
        assert_eq!(s.relations[0].relation, Relation::InBackground);
        let s = parse("a red car and a blue tree", &icons, None);
        assert_eq!(s.objects[0].color.map(|c| c.0), Some("red"));
        assert_eq!(s.objects[1].color.map(|c| c.0), Some("blue"));
        let s = parse("a cat with a hat", &icons, None);
        assert_eq!(s.relations[0].relation, Relation::Wearing);
        let s = parse("a snowman wearing a hat next to a tree", &icons, None);
        assert_eq!(
            stated(&s)[1],
            (Relation::NextTo, "snowman".into(), vec!["tree".into()])
        );
        let s = parse("a house on the right and a tree on the left", &icons, None);
        assert_eq!(
            stated(&s),
            [
                (Relation::OnRight, "house".into(), vec![]),
                (Relation::OnLeft, "tree".into(), vec![])
            ]
        );
        let s = parse(
            "a horse left of a cow and a pig right of the cow",
            &icons,
            None,
        );
        assert_eq!(s.objects.len(), 3, "the cow is one cow");
        let s = parse("a table with a cake on it", &icons, None);
        assert_eq!(
            stated(&s),
            [(Relation::On, "cake".into(), vec!["table".into()])]
        );
        let s = parse("a dog on a table", &icons, None).without(&["table"]);
        assert!(s.relations.is_empty() && s.objects.len() == 1);
    }
}
