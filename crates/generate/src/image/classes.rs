//! What each icon is in a scene: whether it stands on the ground, flies,
//! hangs or belongs to the sky, whether it is worn, and how big it is in
//! the world. Kept with the icon set ([`super::icons`]): an icon is looked
//! up by its full name, then by each part of its name from the last
//! (`deciduous_tree` → `tree`, `guide_dog` → `dog`).

use serde::Serialize;

/// Where an object rests when no relation places it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ground {
    /// On the ground line of the setting (or on what it is "on").
    Stands,
    /// In the air above the ground.
    Flies,
    /// Hanging from above (a ceiling, or high up outdoors).
    Hangs,
    /// High in the sky (sun, moon, clouds, rainbows).
    Sky,
}

/// An icon's class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Class {
    pub ground: Ground,
    /// Its largest real-world dimension, metres (the sky's objects: how
    /// big they look).
    pub metres: f32,
    /// Worn on the head (hats, crowns, glasses, bows).
    pub worn: bool,
    /// A creature or a person (can wear things).
    pub creature: bool,
}

use Ground::{Flies, Hangs, Sky, Stands};

/// (name or name part, ground, metres, kind): kind `c` creature, `w` worn,
/// `-` neither.
static TABLE: &[(&str, Ground, f32, char)] = &[
    // The sky.
    ("sun", Sky, 3.0, '-'),
    ("moon", Sky, 3.0, '-'),
    ("cloud", Sky, 5.0, '-'),
    ("rainbow", Sky, 9.0, '-'),
    ("star", Sky, 1.0, '-'),
    ("comet", Sky, 2.0, '-'),
    ("snowflake", Sky, 0.4, '-'),
    ("lightning", Sky, 3.0, '-'),
    // Flying things.
    ("bird", Flies, 0.3, 'c'),
    ("dove", Flies, 0.3, 'c'),
    ("eagle", Flies, 0.7, 'c'),
    ("owl", Flies, 0.45, 'c'),
    ("parrot", Flies, 0.4, 'c'),
    ("bat", Flies, 0.3, 'c'),
    ("butterfly", Flies, 0.15, 'c'),
    ("honeybee", Flies, 0.08, 'c'),
    ("bee", Flies, 0.08, 'c'),
    ("mosquito", Flies, 0.05, 'c'),
    ("fly", Flies, 0.05, 'c'),
    ("airplane", Flies, 4.0, '-'),
    ("helicopter", Flies, 3.5, '-'),
    ("rocket", Flies, 3.5, '-'),
    ("saucer", Flies, 3.0, '-'),
    ("balloon", Flies, 0.5, '-'),
    ("kite", Flies, 0.9, '-'),
    ("parachute", Flies, 2.5, '-'),
    ("dragon", Flies, 5.0, 'c'),
    ("angel", Flies, 1.7, 'c'),
    ("ghost", Flies, 1.6, 'c'),
    // Hanging things.
    ("lamp", Hangs, 0.6, '-'),
    ("bulb", Hangs, 0.25, '-'),
    ("lantern", Hangs, 0.45, '-'),
    ("bell", Hangs, 0.35, '-'),
    // Worn things.
    ("hat", Stands, 0.3, 'w'),
    ("cap", Stands, 0.25, 'w'),
    ("crown", Stands, 0.22, 'w'),
    ("glasses", Stands, 0.16, 'w'),
    ("sunglasses", Stands, 0.16, 'w'),
    ("ribbon", Stands, 0.15, 'w'),
    ("helmet", Stands, 0.3, 'w'),
    // Plants and places.
    ("tree", Stands, 8.0, '-'),
    ("evergreen", Stands, 10.0, '-'),
    ("palm", Stands, 9.0, '-'),
    ("christmas_tree", Stands, 2.5, '-'),
    ("cactus", Stands, 2.0, '-'),
    ("sunflower", Stands, 1.8, '-'),
    ("tulip", Stands, 0.4, '-'),
    ("rose", Stands, 0.45, '-'),
    ("flower", Stands, 0.4, '-'),
    ("blossom", Stands, 0.4, '-'),
    ("hibiscus", Stands, 0.4, '-'),
    ("seedling", Stands, 0.2, '-'),
    ("herb", Stands, 0.25, '-'),
    ("mushroom", Stands, 0.15, '-'),
    ("rock", Stands, 0.8, '-'),
    ("house", Stands, 9.0, '-'),
    ("castle", Stands, 16.0, '-'),
    ("building", Stands, 20.0, '-'),
    ("church", Stands, 14.0, '-'),
    ("tent", Stands, 3.0, '-'),
    ("hut", Stands, 4.0, '-'),
    ("mountain", Stands, 60.0, '-'),
    ("volcano", Stands, 60.0, '-'),
    ("fountain", Stands, 3.0, '-'),
    ("snowman", Stands, 1.6, 'c'),
    // Vehicles.
    ("automobile", Stands, 4.5, '-'),
    ("car", Stands, 4.5, '-'),
    ("taxi", Stands, 4.5, '-'),
    ("bus", Stands, 11.0, '-'),
    ("truck", Stands, 8.0, '-'),
    ("tractor", Stands, 4.0, '-'),
    ("bicycle", Stands, 1.8, '-'),
    ("motorcycle", Stands, 2.1, '-'),
    ("scooter", Stands, 1.6, '-'),
    ("locomotive", Stands, 16.0, '-'),
    ("train", Stands, 20.0, '-'),
    ("sailboat", Stands, 7.0, '-'),
    ("boat", Stands, 5.0, '-'),
    ("ship", Stands, 30.0, '-'),
    ("canoe", Stands, 4.5, '-'),
    // People.
    ("person", Stands, 1.75, 'c'),
    ("man", Stands, 1.78, 'c'),
    ("woman", Stands, 1.68, 'c'),
    ("child", Stands, 1.25, 'c'),
    ("boy", Stands, 1.3, 'c'),
    ("girl", Stands, 1.3, 'c'),
    ("baby", Stands, 0.6, 'c'),
    ("older", Stands, 1.7, 'c'),
    ("robot", Stands, 1.5, 'c'),
    ("alien", Stands, 1.4, 'c'),
    ("mage", Stands, 1.75, 'c'),
    ("vampire", Stands, 1.8, 'c'),
    ("zombie", Stands, 1.75, 'c'),
    ("santa", Stands, 1.75, 'c'),
    // Animals.
    ("dog", Stands, 0.9, 'c'),
    ("poodle", Stands, 0.7, 'c'),
    ("cat", Stands, 0.5, 'c'),
    ("fox", Stands, 0.7, 'c'),
    ("wolf", Stands, 1.2, 'c'),
    ("lion", Stands, 2.2, 'c'),
    ("tiger", Stands, 2.4, 'c'),
    ("leopard", Stands, 2.0, 'c'),
    ("horse", Stands, 2.4, 'c'),
    ("unicorn", Stands, 2.4, 'c'),
    ("zebra", Stands, 2.3, 'c'),
    ("cow", Stands, 2.4, 'c'),
    ("ox", Stands, 2.6, 'c'),
    ("water_buffalo", Stands, 2.8, 'c'),
    ("pig", Stands, 1.5, 'c'),
    ("ram", Stands, 1.3, 'c'),
    ("ewe", Stands, 1.3, 'c'),
    ("goat", Stands, 1.3, 'c'),
    ("llama", Stands, 1.8, 'c'),
    ("deer", Stands, 1.9, 'c'),
    ("camel", Stands, 3.0, 'c'),
    ("elephant", Stands, 4.0, 'c'),
    ("giraffe", Stands, 5.0, 'c'),
    ("rhinoceros", Stands, 3.5, 'c'),
    ("hippopotamus", Stands, 3.5, 'c'),
    ("bear", Stands, 2.0, 'c'),
    ("panda", Stands, 1.6, 'c'),
    ("koala", Stands, 0.7, 'c'),
    ("kangaroo", Stands, 1.6, 'c'),
    ("gorilla", Stands, 1.7, 'c'),
    ("monkey", Stands, 0.6, 'c'),
    ("sloth", Stands, 0.6, 'c'),
    ("otter", Stands, 1.0, 'c'),
    ("beaver", Stands, 0.9, 'c'),
    ("badger", Stands, 0.8, 'c'),
    ("raccoon", Stands, 0.7, 'c'),
    ("skunk", Stands, 0.6, 'c'),
    ("rabbit", Stands, 0.4, 'c'),
    ("hedgehog", Stands, 0.25, 'c'),
    ("squirrel", Stands, 0.35, 'c'),
    ("chipmunk", Stands, 0.25, 'c'),
    ("mouse", Stands, 0.12, 'c'),
    ("rat", Stands, 0.3, 'c'),
    ("hamster", Stands, 0.15, 'c'),
    ("chicken", Stands, 0.45, 'c'),
    ("rooster", Stands, 0.55, 'c'),
    ("chick", Stands, 0.12, 'c'),
    ("duck", Stands, 0.45, 'c'),
    ("goose", Stands, 0.8, 'c'),
    ("swan", Stands, 1.3, 'c'),
    ("turkey", Stands, 1.0, 'c'),
    ("peacock", Stands, 1.2, 'c'),
    ("flamingo", Stands, 1.3, 'c'),
    ("penguin", Stands, 1.0, 'c'),
    ("turtle", Stands, 0.6, 'c'),
    ("snake", Stands, 1.5, 'c'),
    ("lizard", Stands, 0.4, 'c'),
    ("crocodile", Stands, 4.0, 'c'),
    ("frog", Stands, 0.15, 'c'),
    ("snail", Stands, 0.06, 'c'),
    ("ladybug", Stands, 0.03, 'c'),
    ("ant", Stands, 0.02, 'c'),
    ("spider", Stands, 0.06, 'c'),
    ("sauropod", Stands, 20.0, 'c'),
    ("rex", Stands, 12.0, 'c'),
    ("fish", Stands, 0.3, 'c'),
    ("dolphin", Stands, 2.5, 'c'),
    ("shark", Stands, 4.0, 'c'),
    ("whale", Stands, 15.0, 'c'),
    ("octopus", Stands, 1.0, 'c'),
    // Furniture and things.
    ("chair", Stands, 1.0, '-'),
    ("table", Stands, 1.5, '-'),
    ("bench", Stands, 1.6, '-'),
    ("bed", Stands, 2.0, '-'),
    ("couch", Stands, 2.0, '-'),
    ("door", Stands, 2.1, '-'),
    ("window", Stands, 1.3, '-'),
    ("cage", Stands, 0.8, '-'),
    ("bowl", Stands, 0.4, '-'),
    ("toilet", Stands, 0.8, '-'),
    ("bathtub", Stands, 1.6, '-'),
    ("television", Stands, 0.9, '-'),
    ("computer", Stands, 0.5, '-'),
    ("laptop", Stands, 0.35, '-'),
    ("guitar", Stands, 1.0, '-'),
    ("umbrella", Stands, 1.0, '-'),
    ("clock", Stands, 0.3, '-'),
    ("package", Stands, 0.5, '-'),
    ("gift", Stands, 0.35, '-'),
    ("book", Stands, 0.25, '-'),
    ("ball", Stands, 0.22, '-'),
    ("basketball", Stands, 0.24, '-'),
    ("cup", Stands, 0.12, '-'),
    ("beverage", Stands, 0.12, '-'),
    ("bottle", Stands, 0.3, '-'),
    ("candle", Stands, 0.2, '-'),
    ("cake", Stands, 0.3, '-'),
    ("pizza", Stands, 0.35, '-'),
    ("apple", Stands, 0.08, '-'),
    ("banana", Stands, 0.2, '-'),
    ("egg", Stands, 0.06, '-'),
    ("face", Stands, 0.3, 'c'),
    // Full names whose last part would mislead.
    ("hot_dog", Stands, 0.2, '-'),
    ("teddy_bear", Stands, 0.4, '-'),
    ("carousel_horse", Stands, 2.0, '-'),
    ("fish_cake_with_swirl", Stands, 0.08, '-'),
];

/// The class of an icon by its name.
pub fn of(name: &str) -> Class {
    let parts: Vec<&str> = name.split('_').collect();
    let found = std::iter::once(name)
        .chain(parts.iter().rev().copied())
        .find_map(|p| TABLE.iter().find(|(n, ..)| *n == p));
    match found {
        Some(&(_, ground, metres, kind)) => Class {
            ground,
            metres,
            worn: kind == 'w',
            creature: kind == 'c',
        },
        None => Class {
            ground: Stands,
            metres: 0.5,
            worn: false,
            creature: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_their_parts_find_a_class() {
        assert_eq!(of("deciduous_tree").ground, Stands);
        assert_eq!(of("deciduous_tree").metres, 8.0);
        assert_eq!(of("christmas_tree").metres, 2.5);
        assert_eq!(of("bird").ground, Flies);
        assert_eq!(of("crescent_moon").ground, Sky);
        assert_eq!(of("lamp").ground, Hangs);
        assert!(of("top_hat").worn && of("guide_dog").creature);
        assert_eq!(of("xylophone").metres, 0.5);
        // A tree is taller than a dog, a dog than a cat.
        assert!(of("deciduous_tree").metres > of("dog").metres);
        assert!(of("dog").metres > of("cat").metres);
    }
}
