//! The embedded image engine places what a prompt says where a reader
//! pictures it: 60+ prompts written for this test, each checked on the
//! reported boxes with a geometric rule per relation (written here, apart
//! from the engine's own check). The pass rate per relation must be at
//! least 95 %, and every miss must be reported unmet in the result.
//! Needs the icon set (`scripts/models.sh`, run by `make test`).

use std::collections::BTreeMap;
use std::path::Path;

use mediagen_generate::image::classes::{self, Ground};
use mediagen_generate::image::icons::Icons;
use mediagen_generate::image::scene::{self, Relation};
use mediagen_generate::image::{render, BBox, ImageFormat, Picture, Placed};

fn icons() -> Icons {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    Icons::discover(&models).expect("the emoji icon set is installed (scripts/models.sh)")
}

/// What a prompt must show.
enum Want {
    /// subject, relation, object(s) by prompt word.
    Rel(&'static str, Relation, &'static [&'static str]),
    Count(&'static str, usize),
    Colour(&'static str, &'static str),
    /// The first is drawn taller than the second.
    Taller(&'static str, &'static str),
    /// A relation that contradicts another: reported unmet, with the
    /// conflict as its reason.
    Conflict(&'static str, Relation, &'static [&'static str]),
}

use Relation::*;
use Want::{Colour, Conflict, Count, Rel, Taller};

static CASES: &[(&str, &[Want])] = &[
    // Under, below, beneath.
    (
        "a red fox sitting under a tree at sunset",
        &[Rel("fox", Under, &["tree"]), Colour("fox", "red")],
    ),
    ("a cat under a table", &[Rel("cat", Under, &["table"])]),
    (
        "a dog below a lamp in a room",
        &[Rel("dog", Under, &["lamp"])],
    ),
    (
        "a rabbit beneath a tree",
        &[Rel("rabbit", Under, &["tree"])],
    ),
    (
        "a ball underneath a chair",
        &[Rel("ball", Under, &["chair"])],
    ),
    (
        "a man under an umbrella on a beach",
        &[Rel("man", Under, &["umbrella"])],
    ),
    ("a boy below a kite", &[Rel("boy", Under, &["kite"])]),
    // Above, over.
    (
        "three small birds above a big tree",
        &[Rel("birds", Above, &["tree"]), Count("birds", 3)],
    ),
    ("a lamp above a table", &[Rel("lamp", Above, &["table"])]),
    ("a cloud over a house", &[Rel("cloud", Above, &["house"])]),
    (
        "a butterfly over a flower",
        &[Rel("butterfly", Above, &["flower"])],
    ),
    ("an airplane above the mountains", &[]),
    // On, on top of.
    ("a cat on a chair", &[Rel("cat", On, &["chair"])]),
    ("a dog on top of a car", &[Rel("dog", On, &["car"])]),
    ("a cake on a table", &[Rel("cake", On, &["table"])]),
    ("a bird sitting on a bench", &[Rel("bird", On, &["bench"])]),
    (
        "two books on a table",
        &[Rel("books", On, &["table"]), Count("books", 2)],
    ),
    // In, inside.
    ("a fish in a bowl", &[Rel("fish", In, &["bowl"])]),
    ("a bird inside a cage", &[Rel("bird", In, &["cage"])]),
    ("a cat in a box", &[Rel("cat", In, &["box"])]),
    (
        "a mouse inside a cage in a room",
        &[Rel("mouse", In, &["cage"])],
    ),
    // In front of, behind.
    (
        "a dog in front of a house",
        &[Rel("dog", InFrontOf, &["house"])],
    ),
    (
        "a girl in front of a tree",
        &[Rel("girl", InFrontOf, &["tree"])],
    ),
    (
        "a car in front of a building",
        &[Rel("car", InFrontOf, &["building"])],
    ),
    ("a horse in front of a barn", &[]),
    ("a cat behind a dog", &[Rel("cat", Behind, &["dog"])]),
    ("a house behind a tree", &[Rel("house", Behind, &["tree"])]),
    ("a cow behind a fence", &[]),
    ("a castle behind a pine tree", &[]),
    (
        "a fox hiding behind a rock",
        &[Rel("fox", Behind, &["rock"])],
    ),
    // Next to, beside, near, far.
    ("a dog next to a cat", &[Rel("dog", NextTo, &["cat"])]),
    (
        "a chair beside a table",
        &[Rel("chair", NextTo, &["table"])],
    ),
    (
        "a bicycle beside a tree",
        &[Rel("bicycle", NextTo, &["tree"])],
    ),
    ("a tent next to a campfire", &[]),
    ("a duck near a pond", &[]),
    ("a robot near a car", &[Rel("robot", Near, &["car"])]),
    ("a house near a tree", &[Rel("house", Near, &["tree"])]),
    ("a cat far from a dog", &[Rel("cat", Far, &["dog"])]),
    (
        "a snowman far away from a house",
        &[Rel("snowman", Far, &["house"])],
    ),
    // Left of, right of.
    (
        "a car to the right of a tree",
        &[Rel("car", RightOf, &["tree"])],
    ),
    (
        "a tree to the left of a house",
        &[Rel("tree", LeftOf, &["house"])],
    ),
    (
        "a dog on the left of a cat",
        &[Rel("dog", LeftOf, &["cat"])],
    ),
    (
        "a bus on the right of a bicycle",
        &[Rel("bus", RightOf, &["bicycle"])],
    ),
    (
        "a horse left of a cow and a pig right of the cow",
        &[
            Rel("horse", LeftOf, &["cow"]),
            Rel("pig", RightOf, &["cow"]),
            Count("cow", 1),
        ],
    ),
    (
        "a rocket right of a moon",
        &[Rel("rocket", RightOf, &["moon"])],
    ),
    // Between, around.
    (
        "a fox between a house and a tree",
        &[Rel("fox", Between, &["house", "tree"])],
    ),
    (
        "a dog between two trees",
        &[Rel("dog", Between, &["trees", "trees"]), Count("trees", 2)],
    ),
    (
        "a girl in between a cat and a dog",
        &[Rel("girl", Between, &["cat", "dog"])],
    ),
    (
        "a cow between a house and a tractor",
        &[Rel("cow", Between, &["house", "tractor"])],
    ),
    (
        "four flowers around a tree",
        &[Rel("flowers", Around, &["tree"]), Count("flowers", 4)],
    ),
    ("birds around a tree", &[Rel("birds", Around, &["tree"])]),
    (
        "five balloons around a house",
        &[Rel("balloons", Around, &["house"]), Count("balloons", 5)],
    ),
    // The background and the foreground; the left and right of the picture.
    (
        "a castle in the background",
        &[Rel("castle", InBackground, &[])],
    ),
    (
        "a dog in the foreground and a house in the background",
        &[
            Rel("dog", InForeground, &[]),
            Rel("house", InBackground, &[]),
        ],
    ),
    (
        "a tree in the foreground with mountains",
        &[Rel("tree", InForeground, &[])],
    ),
    (
        "a church in the distance and a horse",
        &[Rel("church", InBackground, &[])],
    ),
    (
        "a cat on the left and a dog on the right",
        &[Rel("cat", OnLeft, &[]), Rel("dog", OnRight, &[])],
    ),
    // Wearing.
    (
        "a cat wearing a red hat on a beach",
        &[Rel("cat", Wearing, &["hat"]), Colour("hat", "red")],
    ),
    (
        "three dogs each wearing a crown",
        &[
            Rel("dogs", Wearing, &["crown"]),
            Count("dogs", 3),
            Count("crown", 3),
        ],
    ),
    // Several relations at once.
    (
        "a cat on a chair next to a table under a lamp",
        &[
            Rel("cat", On, &["chair"]),
            Rel("chair", NextTo, &["table"]),
            Rel("table", Under, &["lamp"]),
        ],
    ),
    (
        "a bird above a dog in front of a house",
        &[
            Rel("bird", Above, &["dog"]),
            Rel("dog", InFrontOf, &["house"]),
        ],
    ),
    (
        "a fox under a tree to the left of a house",
        &[
            Rel("fox", Under, &["tree"]),
            Rel("tree", LeftOf, &["house"]),
        ],
    ),
    (
        "a cat and a dog under a tree",
        &[Rel("cat", Under, &["tree"]), Rel("dog", Under, &["tree"])],
    ),
    (
        "a car to the right of a tree and a bus left of the tree",
        &[
            Rel("car", RightOf, &["tree"]),
            Rel("bus", LeftOf, &["tree"]),
        ],
    ),
    (
        "three cats around a dog",
        &[Rel("cats", Around, &["dog"]), Count("cats", 3)],
    ),
    (
        "a snowman wearing a hat next to a tree in the snow at night",
        &[
            Rel("snowman", Wearing, &["hat"]),
            Rel("snowman", NextTo, &["tree"]),
        ],
    ),
    (
        "an elephant behind a giraffe and a lion in front of the giraffe",
        &[
            Rel("elephant", Behind, &["giraffe"]),
            Rel("lion", InFrontOf, &["giraffe"]),
            Count("giraffe", 1),
        ],
    ),
    (
        "a bird inside a cage on a table",
        &[Rel("bird", In, &["cage"]), Rel("cage", On, &["table"])],
    ),
    (
        "a house on the right and a big tree on the left at sunset",
        &[Rel("house", OnRight, &[]), Rel("tree", OnLeft, &[])],
    ),
    (
        "a cat left of a dog and the dog left of the cat",
        &[
            Rel("cat", LeftOf, &["dog"]),
            Conflict("dog", LeftOf, &["cat"]),
        ],
    ),
    (
        "a robot next to a table with a cake on it",
        &[
            Rel("robot", NextTo, &["table"]),
            Rel("cake", On, &["table"]),
        ],
    ),
    // Counts and attributes.
    ("a dozen eggs", &[Count("eggs", 12)]),
    ("a pair of ducks next to a pond", &[Count("ducks", 2)]),
    (
        "5 balloons above a house",
        &[Count("balloons", 5), Rel("balloons", Above, &["house"])],
    ),
    (
        "half a dozen apples on a table",
        &[Count("apples", 6), Rel("apples", On, &["table"])],
    ),
    (
        "two cats each on a chair",
        &[
            Count("cats", 2),
            Count("chair", 2),
            Rel("cats", On, &["chair"]),
        ],
    ),
    (
        "a blue car and a yellow bus",
        &[Colour("car", "blue"), Colour("bus", "yellow")],
    ),
    (
        "a green frog on a big red mushroom",
        &[
            Colour("frog", "green"),
            Colour("mushroom", "red"),
            Rel("frog", On, &["mushroom"]),
        ],
    ),
    ("a tree and a dog", &[Taller("tree", "dog")]),
    (
        "a giant dog next to a tree",
        &[Taller("dog", "tree"), Rel("dog", NextTo, &["tree"])],
    ),
    ("a house and a small cat", &[Taller("house", "cat")]),
];

/// The test's own rules, on boxes and the drawing order.
struct Boxes<'a> {
    placed: &'a [Placed],
    ground: f32,
    w: f32,
    h: f32,
}

#[derive(Clone, Copy)]
struct B {
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    order: usize,
}

impl B {
    fn new(b: &BBox, order: usize) -> B {
        B {
            x0: b.x as f32,
            y0: b.y as f32,
            x1: (b.x + b.width) as f32,
            y1: (b.y + b.height) as f32,
            order,
        }
    }
    fn cx(&self) -> f32 {
        (self.x0 + self.x1) / 2.0
    }
    fn cy(&self) -> f32 {
        (self.y0 + self.y1) / 2.0
    }
    fn w(&self) -> f32 {
        self.x1 - self.x0
    }
    fn h(&self) -> f32 {
        self.y1 - self.y0
    }
    fn overlap_x(&self, o: &B) -> f32 {
        self.x1.min(o.x1) - self.x0.max(o.x0)
    }
    fn overlap_y(&self, o: &B) -> f32 {
        self.y1.min(o.y1) - self.y0.max(o.y0)
    }
    fn gap(&self, o: &B) -> f32 {
        (-self.overlap_x(o))
            .max(0.0)
            .hypot((-self.overlap_y(o)).max(0.0))
    }
}

impl Boxes<'_> {
    fn of(&self, word: &str) -> Vec<B> {
        self.placed
            .iter()
            .enumerate()
            .filter(|(_, p)| p.object == word)
            .map(|(i, p)| B::new(&p.bbox, i))
            .collect()
    }

    /// Every copy of `a` against some copy of `b` (or its own, by index,
    /// when both have as many copies).
    fn pairs(&self, a: &str, b: &str, rule: impl Fn(&B, &B) -> bool) -> bool {
        let (a, b) = (self.of(a), self.of(b));
        let each = a.len() == b.len() && a.len() > 1;
        !a.is_empty()
            && !b.is_empty()
            && a.iter().enumerate().all(|(k, x)| {
                if each {
                    rule(x, &b[k])
                } else {
                    b.iter().any(|y| rule(x, y))
                }
            })
    }

    fn holds(&self, subject: &str, rel: Relation, objects: &[&str]) -> bool {
        let (w, ground, h) = (self.w, self.ground, self.h);
        match (rel, objects) {
            (Under, [b]) => self.pairs(subject, b, |a, b| a.cy() > b.cy() && a.overlap_x(b) > 0.0),
            (Above, [b]) => self.pairs(subject, b, |a, b| {
                a.cy() < b.cy() && a.y1 <= b.y0 + 0.1 * b.h() && a.overlap_x(b) > 0.0
            }),
            (On, [b]) => self.pairs(subject, b, |a, b| {
                a.y1 >= b.y0 - 2.0
                    && a.y1 <= b.y0 + 0.35 * b.h()
                    && a.cx() >= b.x0
                    && a.cx() <= b.x1
                    && a.order > b.order
            }),
            (In, [b]) => self.pairs(subject, b, |a, b| {
                a.x0 >= b.x0 - 2.0
                    && a.x1 <= b.x1 + 2.0
                    && a.y0 >= b.y0 - 2.0
                    && a.y1 <= b.y1 + 2.0
                    && a.order > b.order
            }),
            (InFrontOf, [b]) => self.pairs(subject, b, |a, b| {
                a.overlap_x(b) > 0.0 && a.order > b.order && a.y1 >= b.y1 - 1.0
            }),
            (Behind, [b]) => self.pairs(subject, b, |a, b| {
                a.overlap_x(b) > 0.0 && a.order < b.order && a.y1 <= b.y1 + 1.0
            }),
            (NextTo, [b]) => self.pairs(subject, b, |a, b| {
                -a.overlap_x(b) <= 0.15 * w
                    && a.overlap_x(b) <= 0.35 * a.w().min(b.w())
                    && a.overlap_y(b) > 0.0
            }),
            (LeftOf, [b]) => self.pairs(subject, b, |a, b| {
                a.cx() < b.cx() && a.x1 <= b.x0 + 0.15 * a.w().min(b.w())
            }),
            (RightOf, [b]) => self.pairs(subject, b, |a, b| {
                a.cx() > b.cx() && a.x0 >= b.x1 - 0.15 * a.w().min(b.w())
            }),
            (Near, [b]) => self.pairs(subject, b, |a, b| a.gap(b) <= 0.15 * w),
            (Far, [b]) => self.pairs(subject, b, |a, b| a.gap(b) >= 0.25 * w),
            (Between, [b, c]) => {
                let mean = |v: Vec<B>| v.iter().map(B::cx).sum::<f32>() / v.len().max(1) as f32;
                let (lo, hi) = if b == c {
                    // "between two trees": between the two copies.
                    let xs: Vec<f32> = self.of(b).iter().map(B::cx).collect();
                    let lo = xs.iter().fold(f32::MAX, |m, &x| m.min(x));
                    (lo, xs.iter().fold(f32::MIN, |m, &x| m.max(x)))
                } else {
                    let (x, y) = (mean(self.of(b)), mean(self.of(c)));
                    (x.min(y), x.max(y))
                };
                let a = self.of(subject);
                !a.is_empty() && lo < hi && a.iter().all(|s| s.cx() > lo && s.cx() < hi)
            }
            (Around, [b]) => {
                let (a, t) = (self.of(subject), self.of(b));
                let Some(t) = t.first() else { return false };
                a.len() >= 2
                    && a.iter().any(|s| s.cx() < t.cx())
                    && a.iter().any(|s| s.cx() > t.cx())
                    && a.iter().all(|s| s.gap(t) <= 0.5 * t.w().max(t.h()))
            }
            (Wearing, [worn]) => self.pairs(worn, subject, |hat, head| {
                hat.overlap_x(head) > 0.0
                    && hat.y1 >= head.y0 - 0.05 * head.h()
                    && hat.y1 <= head.y0 + 0.5 * head.h()
                    && hat.order > head.order
            }),
            (InBackground, []) => {
                let a = self.of(subject);
                let others: Vec<usize> = self
                    .placed
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| {
                        p.object != subject && classes::of(&p.icon).ground != Ground::Sky
                    })
                    .map(|(i, _)| i)
                    .collect();
                !a.is_empty()
                    && a.iter()
                        .all(|s| s.y1 <= ground - 0.04 * h && others.iter().all(|&o| s.order < o))
            }
            (InForeground, []) => {
                let a = self.of(subject);
                !a.is_empty()
                    && a.iter().all(|s| {
                        s.y1 >= ground - 1.0
                            && self
                                .placed
                                .iter()
                                .enumerate()
                                .all(|(i, p)| p.object == subject || i < s.order)
                    })
            }
            (OnLeft, []) => self.of(subject).iter().all(|s| s.cx() < w / 3.0),
            (OnRight, []) => self.of(subject).iter().all(|s| s.cx() > 2.0 * w / 3.0),
            _ => false,
        }
    }
}

/// Standing objects no relation moves rest on the ground line; flying
/// ones are above it.
fn grounded(picture: &Picture, scene: &scene::Scene, h: f32) -> Vec<String> {
    let ground = picture.ground_line as f32;
    let mut wrong = Vec::new();
    for (i, o) in scene.objects.iter().enumerate() {
        let moved = scene.relations.iter().any(|s| {
            let vertical =
                s.relation.attaches() || matches!(s.relation, InBackground | InForeground);
            (vertical && s.moved() == i)
                || (s.relation == Under && s.objects == [i] && o.class.ground != Ground::Stands)
        });
        if moved {
            continue;
        }
        for p in picture.placed.iter().filter(|p| p.object == o.word) {
            let bottom = (p.bbox.y + p.bbox.height) as f32;
            let ok = match o.class.ground {
                Ground::Stands => (bottom - ground).abs() <= 0.07 * h * 1.01 + 3.0,
                _ => bottom < ground - 0.1 * h,
            };
            if !ok {
                wrong.push(format!("{} at bottom {bottom} (ground {ground})", o.word));
            }
        }
    }
    wrong
}

#[test]
fn prompts_are_laid_out_as_a_reader_pictures_them() {
    let icons = icons();
    assert!(CASES.len() >= 60, "{} prompts", CASES.len());
    let mut rates: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    // One picture per relation, for docs/image.md.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/image-layout");
    std::fs::create_dir_all(&examples).expect("target/image-layout");
    let mut written = std::collections::HashSet::new();
    let mut index = String::new();
    for (k, (prompt, wants)) in CASES.iter().enumerate() {
        let (width, height) = if k % 3 == 2 { (768, 512) } else { (512, 512) };
        let scene = scene::parse(prompt, &icons, None);
        let picture = render(&scene, width, height, 7).expect("render");
        if let Some(Rel(_, rel, _)) = wants.first() {
            if written.insert(format!("{rel:?}")) {
                index.push_str(&format!(
                    "| `{rel:?}` | {prompt} | ![{prompt}](image/{rel:?}.jpg) |\n"
                ));
                let file = examples.join(format!("{rel:?}.jpg"));
                let small = render(&scene, 320, 240, 7).expect("render");
                std::fs::write(&file, small.encode(ImageFormat::Jpeg).expect("jpeg"))
                    .expect("write the example");
            }
        }
        let boxes = Boxes {
            placed: &picture.placed,
            ground: picture.ground_line as f32,
            w: width as f32,
            h: height as f32,
        };
        for want in *wants {
            let (name, ok, reported_unmet) = match want {
                Rel(subject, rel, objects) => {
                    let ok = boxes.holds(subject, *rel, objects);
                    let stated = picture.relations.iter().find(|r| {
                        r.subject == *subject && r.relation == *rel && r.objects == *objects
                    });
                    let Some(stated) = stated else {
                        failures.push(format!("{prompt:?}: {rel:?} was not read"));
                        continue;
                    };
                    (
                        format!("{rel:?}"),
                        ok,
                        !stated.met && stated.reason.is_some(),
                    )
                }
                Conflict(subject, rel, objects) => {
                    let reported = picture.relations.iter().find(|r| {
                        r.subject == *subject && r.relation == *rel && r.objects == *objects
                    });
                    let said = reported.is_some_and(|r| {
                        !r.met && r.reason.as_deref().is_some_and(|t| t.contains("conflicts"))
                    });
                    if !said || boxes.holds(subject, *rel, objects) {
                        failures.push(format!("{prompt:?}: the conflict is not reported"));
                    }
                    continue;
                }
                Count(word, n) => {
                    let drawn = boxes.of(word).len();
                    ("count".to_owned(), drawn == *n, false)
                }
                Colour(word, colour) => {
                    let ok = picture
                        .placed
                        .iter()
                        .filter(|p| p.object == *word)
                        .all(|p| p.color == Some(colour));
                    ("colour".to_owned(), ok && !boxes.of(word).is_empty(), false)
                }
                Taller(a, b) => {
                    let height = |w: &str| boxes.of(w).first().map_or(0.0, B::h);
                    ("size".to_owned(), height(a) > height(b), false)
                }
            };
            let rate = rates.entry(name.clone()).or_default();
            rate.1 += 1;
            if ok {
                rate.0 += 1;
            } else if !reported_unmet {
                failures.push(format!(
                    "{prompt:?}: {name} not shown and not reported unmet: {:?}",
                    picture.placed
                ));
            } else {
                println!("{prompt:?}: {name} missed, reported unmet");
            }
        }
        // The engine never claims a relation the rules deny.
        for r in &picture.relations {
            let objects: Vec<&str> = r.objects.iter().map(String::as_str).collect();
            if r.met && !boxes.holds(&r.subject, r.relation, &objects) {
                failures.push(format!(
                    "{prompt:?}: {:?} reported met but is not",
                    r.relation
                ));
            }
        }
        for wrong in grounded(&picture, &scene, height as f32) {
            failures.push(format!("{prompt:?}: not grounded: {wrong}"));
        }
    }
    std::fs::write(examples.join("index.md"), index).expect("write the index");
    println!("relation     passed");
    for (name, (pass, all)) in &rates {
        println!(
            "{name:<13} {pass}/{all} ({:.0} %)",
            100.0 * *pass as f32 / *all as f32
        );
        if (*pass as f32) < 0.95 * *all as f32 {
            failures.push(format!("{name}: {pass} of {all} below 95 %"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The reported boxes are the pixels drawn: each object drawn alone on a
/// blank canvas covers exactly its box (every edge row and column has
/// opaque pixels, nothing opaque outside).
#[test]
fn boxes_match_the_pixels_drawn() {
    let icons = icons();
    for prompt in [
        "a cat wearing a red hat next to a table under a lamp",
        "three birds above a tree, a fish in a bowl",
        "a castle in the background and a giant dog in the foreground",
    ] {
        let scene = scene::parse(prompt, &icons, None);
        let picture = render(&scene, 640, 480, 3).expect("render");
        assert!(!picture.placed.is_empty());
        for (k, p) in picture.placed.iter().enumerate() {
            let alone = picture.layer(&scene, k).expect("layer");
            let (w, h) = (alone.width(), alone.height());
            let rgba = alone.rgba();
            let opaque = |x: u32, y: u32| rgba[((y * w + x) * 4 + 3) as usize] >= 24;
            let b = &p.bbox;
            assert!(b.width > 0 && b.height > 0, "{prompt}: {p:?}");
            let (x1, y1) = (b.x + b.width - 1, b.y + b.height - 1);
            assert!(
                (b.x..=x1).any(|x| opaque(x, b.y)),
                "{prompt}: top edge of {p:?}"
            );
            assert!(
                (b.x..=x1).any(|x| opaque(x, y1)),
                "{prompt}: bottom edge of {p:?}"
            );
            assert!(
                (b.y..=y1).any(|y| opaque(b.x, y)),
                "{prompt}: left edge of {p:?}"
            );
            assert!(
                (b.y..=y1).any(|y| opaque(x1, y)),
                "{prompt}: right edge of {p:?}"
            );
            let outside = (0..h)
                .flat_map(|y| (0..w).map(move |x| (x, y)))
                .filter(|&(x, y)| x < b.x || x > x1 || y < b.y || y > y1)
                .any(|(x, y)| opaque(x, y));
            assert!(
                !outside,
                "{prompt}: {p:?} has opaque pixels outside its box"
            );
            // And the alpha covers a fair part of the box.
            let inside = (b.y..=y1)
                .flat_map(|y| (b.x..=x1).map(move |x| (x, y)))
                .filter(|&(x, y)| opaque(x, y))
                .count();
            let share = inside as f32 / (b.width * b.height) as f32;
            assert!(share > 0.2, "{prompt}: {p:?} covers {share:.2} of its box");
        }
    }
}

/// Prompts put together at random from the vocabulary never break the
/// engine, and whatever it reports met, the rules confirm.
#[test]
fn random_prompts_are_drawn_and_reported_honestly() {
    let icons = icons();
    let nouns = [
        "cat", "dog", "tree", "house", "car", "bird", "lamp", "table", "chair", "fox", "cloud",
        "balloons", "eggs", "horse", "robot", "hat", "cage", "bowl", "fish", "trees",
    ];
    let joins = [
        "under",
        "above",
        "on",
        "in",
        "in front of",
        "behind",
        "next to",
        "to the left of",
        "right of",
        "near",
        "far from",
        "around",
        "wearing",
        "and",
        "with",
        "between",
    ];
    let extras = [
        "",
        "two",
        "a dozen",
        "big",
        "red",
        "giant",
        "in the background",
        "on the left",
        "each",
        "at sunset",
        "in a room",
        "three",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut wrong = Vec::new();
    for _ in 0..300 {
        let mut prompt = String::new();
        for k in 0..(2 + next(3)) {
            if k > 0 {
                prompt.push_str(joins[next(joins.len())]);
                prompt.push(' ');
            }
            prompt.push_str(&format!(
                "{} a {} ",
                extras[next(extras.len())],
                nouns[next(nouns.len())]
            ));
        }
        let scene = scene::parse(&prompt, &icons, None);
        let (width, height) = (320, 240);
        let picture = render(&scene, width, height, 1).expect("render");
        let boxes = Boxes {
            placed: &picture.placed,
            ground: picture.ground_line as f32,
            w: width as f32,
            h: height as f32,
        };
        for r in &picture.relations {
            let objects: Vec<&str> = r.objects.iter().map(String::as_str).collect();
            // The rules find objects by word: only where each word names
            // one object.
            let mut named = objects.clone();
            named.push(&r.subject);
            let words_unique = named.iter().all(|w| {
                scene.objects.iter().filter(|o| o.word == *w).count() == 1
                    && named.iter().filter(|v| *v == w).count() == 1
            });
            if r.met && words_unique && !boxes.holds(&r.subject, r.relation, &objects) {
                wrong.push(format!("{prompt:?}: {:?} reported met", r.relation));
            }
            if !r.met && r.reason.is_none() {
                wrong.push(format!(
                    "{prompt:?}: {:?} unmet without a reason",
                    r.relation
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
