//! Voices designed from what a description asks for: Kokoro style tables
//! blended from stock voices whose measured profiles fit, spoken at the
//! pitch, formant and pace factors a clone is spoken at.
//!
//! Where the stock voices of a language sit is measured (median pitch,
//! spectral centroid, speaking rate: [`VoiceProfile`]); the wish is a
//! point on the same scales, in standard deviations of those voices. Each
//! design leads with a different stock voice near that point (the three
//! are chosen far apart among the near ones), blends in one or two more
//! of the near ones, and takes factors that carry the voice the rest of
//! the way: a stock voice's pitch and pace are rarely as far out as
//! "deep" or "slowly" says.

use mediagen_core::rng::Rng;
use mediagen_core::voice::VoiceProfile;

use crate::clone::blend::mix;

/// A stock voice to design from.
#[derive(Debug, Clone, Copy)]
pub struct Stock<'a> {
    pub id: &'a str,
    /// `female` or `male`.
    pub gender: &'a str,
    pub profile: &'a VoiceProfile,
    pub table: &'a [f32],
}

/// What a description asks for, on the designer's scales.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wish {
    /// `female` or `male`; `None`: either.
    pub gender: Option<String>,
    /// `young`, `middle-aged` or `old`.
    pub age: Option<String>,
    /// -1 (lowest) to 1 (highest).
    pub pitch: f32,
    /// -1 (slowest) to 1 (quickest).
    pub pace: f32,
    /// -1 (dark) to 1 (bright).
    pub brightness: f32,
}

/// A designed voice: its table and the factors it is spoken at.
#[derive(Debug, Clone, PartialEq)]
pub struct Designed {
    pub table: Vec<f32>,
    pub pitch: f32,
    pub formant: f32,
    pub pace: f32,
    /// The stock voices blended, with their weights (the lead first).
    pub blend: Vec<(String, f32)>,
}

/// How many of the nearest stock voices a design may lead with or blend.
const NEAR: usize = 6;

/// Where a voice sits: pitch (log), brightness (centroid) and pace, each
/// in standard deviations of the stock voices.
fn place(profiles: &[&VoiceProfile]) -> impl Fn(&VoiceProfile) -> [f32; 3] {
    let scales: Vec<(f64, f64)> = [
        |p: &VoiceProfile| p.pitch_median.max(1.0).ln(),
        |p: &VoiceProfile| p.centroid,
        |p: &VoiceProfile| p.speaking_rate,
    ]
    .iter()
    .map(|f| {
        let xs: Vec<f64> = profiles.iter().map(|p| f(p)).collect();
        let n = xs.len().max(1) as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        (mean, sd.max(1e-9))
    })
    .collect();
    move |p: &VoiceProfile| {
        let z = |i: usize, x: f64| ((x - scales[i].0) / scales[i].1) as f32;
        [
            z(0, p.pitch_median.max(1.0).ln()),
            z(1, p.centroid),
            z(2, p.speaking_rate),
        ]
    }
}

fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    // Pitch weighs most: it is what a listener hears first.
    let w = [1.0, 0.6, 0.6];
    (0..3)
        .map(|i| w[i] * (a[i] - b[i]).powi(2))
        .sum::<f32>()
        .sqrt()
}

/// `n` voices for `wish` from `stock` (the stock voices of the language,
/// both genders), the same for the same seed. Empty when there is no
/// stock voice.
pub fn design(wish: &Wish, stock: &[Stock], seed: u64, n: usize) -> Vec<Designed> {
    let of_gender: Vec<&Stock> = match &wish.gender {
        Some(g) if stock.iter().any(|s| s.gender == g) => {
            stock.iter().filter(|s| s.gender == g).collect()
        }
        _ => stock.iter().collect(),
    };
    if of_gender.is_empty() {
        return Vec::new();
    }
    let profiles: Vec<&VoiceProfile> = of_gender.iter().map(|s| s.profile).collect();
    let at = place(&profiles);
    let age = match wish.age.as_deref() {
        Some("old") => -0.4,
        Some("young") => 0.4,
        _ => 0.0,
    };
    // The wish, in the stock voices' standard deviations.
    let target = [
        1.5 * wish.pitch + 0.5 * age,
        1.5 * wish.brightness + 0.5 * age,
        1.5 * wish.pace,
    ];
    let mut near: Vec<(&Stock, [f32; 3], f32)> = of_gender
        .iter()
        .map(|s| {
            let p = at(s.profile);
            (*s, p, distance(p, target))
        })
        .collect();
    near.sort_by(|a, b| a.2.total_cmp(&b.2).then_with(|| a.0.id.cmp(b.0.id)));
    near.truncate(NEAR);
    let mut rng = Rng::new(seed);
    // Leads: the nearest first, then each the farthest from those taken
    // among the near ones (ties to the nearer to the wish).
    let mut leads: Vec<usize> = vec![0];
    while leads.len() < n.min(near.len()) {
        let next = (0..near.len())
            .filter(|i| !leads.contains(i))
            .max_by(|&a, &b| {
                let apart = |i: usize| {
                    leads
                        .iter()
                        .map(|&l| distance(near[i].1, near[l].1))
                        .fold(f32::INFINITY, f32::min)
                        - 0.5 * near[i].2
                };
                apart(a).total_cmp(&apart(b))
            })
            .expect("a voice not taken");
        leads.push(next);
    }
    (0..n)
        .map(|i| {
            let lead = leads[i % leads.len()];
            let mut rng = rng.fork();
            // The lead, and one or two others of the near voices.
            let mut parts = vec![(lead, rng.range(0.55, 0.8))];
            let others: Vec<usize> = (0..near.len()).filter(|&j| j != lead).collect();
            let extra = if others.len() > 1 && rng.unit() < 0.5 {
                2
            } else {
                1
            };
            let mut pool = others;
            for _ in 0..extra.min(pool.len()) {
                let k = (rng.unit() * pool.len() as f32) as usize % pool.len();
                parts.push((pool.remove(k), rng.range(0.2, 1.0)));
            }
            let rest: f32 = parts[1..].iter().map(|p| p.1).sum();
            let share = 1.0 - parts[0].1;
            for p in parts.iter_mut().skip(1) {
                p.1 = share * p.1 / rest.max(1e-6);
            }
            let tables: Vec<&[f32]> = parts.iter().map(|&(j, _)| near[j].0.table).collect();
            let weights: Vec<f32> = parts.iter().map(|p| p.1).collect();
            // Where the blend sits (about), and the factors for the rest of
            // the way; a spread so the three differ even where they agree.
            let sits: [f32; 3] =
                std::array::from_fn(|d| parts.iter().map(|&(j, w)| w * near[j].1[d]).sum::<f32>());
            let sd_pitch = spread(&profiles, |p| p.pitch_median.max(1.0).ln());
            let sd_rate = spread(&profiles, |p| p.speaking_rate)
                / mean(&profiles, |p| p.speaking_rate).max(1e-6);
            let pitch = ((target[0] - sits[0]) * sd_pitch).exp() * (1.0 + 0.04 * rng.signed());
            let pace = (1.0 + (target[2] - sits[2]) * sd_rate) * (1.0 + 0.03 * rng.signed());
            let formant = 1.0 + 0.05 * wish.brightness + 0.04 * age + 0.02 * rng.signed();
            Designed {
                table: mix(&tables, &weights),
                pitch: pitch.clamp(0.75, 1.35),
                formant: formant.clamp(0.88, 1.12),
                pace: pace.clamp(0.75, 1.3),
                blend: parts
                    .iter()
                    .map(|&(j, w)| (near[j].0.id.to_owned(), w))
                    .collect(),
            }
        })
        .collect()
}

fn mean(profiles: &[&VoiceProfile], f: impl Fn(&VoiceProfile) -> f64) -> f32 {
    (profiles.iter().map(|p| f(p)).sum::<f64>() / profiles.len().max(1) as f64) as f32
}

fn spread(profiles: &[&VoiceProfile], f: impl Fn(&VoiceProfile) -> f64) -> f32 {
    let m = f64::from(mean(profiles, &f));
    let n = profiles.len().max(1) as f64;
    ((profiles.iter().map(|p| (f(p) - m).powi(2)).sum::<f64>() / n).sqrt()) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(pitch: f64, centroid: f64, rate: f64, gender: &str) -> VoiceProfile {
        VoiceProfile {
            pitch_median: pitch,
            pitch_spread: 0.1,
            centroid,
            speaking_rate: rate,
            gender: gender.into(),
            seconds: 5.0,
        }
    }

    #[test]
    fn designs_follow_the_wish_and_differ() {
        let profiles: Vec<(String, VoiceProfile, Vec<f32>)> = (0..8)
            .map(|i| {
                let gender = if i < 4 { "male" } else { "female" };
                let pitch = if i < 4 {
                    100.0 + 10.0 * i as f64
                } else {
                    180.0 + 15.0 * i as f64
                };
                (
                    format!("v{i}"),
                    profile(
                        pitch,
                        1500.0 + 50.0 * i as f64,
                        4.0 + 0.1 * i as f64,
                        gender,
                    ),
                    vec![i as f32; 4],
                )
            })
            .collect();
        let stock: Vec<Stock> = profiles
            .iter()
            .map(|(id, p, t)| Stock {
                id,
                gender: &p.gender,
                profile: p,
                table: t,
            })
            .collect();
        let deep = Wish {
            gender: Some("male".into()),
            pitch: -0.8,
            pace: -0.7,
            brightness: -0.4,
            ..Wish::default()
        };
        let high = Wish {
            gender: Some("male".into()),
            pitch: 0.8,
            pace: 0.7,
            brightness: 0.4,
            ..Wish::default()
        };
        let a = design(&deep, &stock, 7, 3);
        let b = design(&high, &stock, 7, 3);
        assert_eq!(a.len(), 3);
        assert_eq!(
            a,
            design(&deep, &stock, 7, 3),
            "the same seed, the same voices"
        );
        // Men only; the deep one leads with the lowest man.
        assert!(a
            .iter()
            .all(|d| d.blend.iter().all(|(id, _)| id.as_str() < "v4")));
        assert_eq!(a[0].blend[0].0, "v0");
        assert_eq!(b[0].blend[0].0, "v3");
        // Three different leads; weights sum to one.
        let leads: Vec<&str> = a.iter().map(|d| d.blend[0].0.as_str()).collect();
        assert!(
            leads[0] != leads[1] && leads[1] != leads[2] && leads[0] != leads[2],
            "{leads:?}"
        );
        for d in a.iter().chain(&b) {
            let sum: f32 = d.blend.iter().map(|p| p.1).sum();
            assert!((sum - 1.0).abs() < 1e-4, "{d:?}");
        }
        // Deep and slow are spoken lower and slower than high and quick.
        let avg = |ds: &[Designed], f: fn(&Designed) -> f32| ds.iter().map(f).sum::<f32>() / 3.0;
        assert!(avg(&a, |d| d.pitch) < avg(&b, |d| d.pitch));
        assert!(avg(&a, |d| d.pace) < avg(&b, |d| d.pace));
    }
}
