//! The search for a style table that sounds like the samples.
//!
//! 1. **Stock voices.** What each stock voice sounds like on the search's
//!    sentences is known beforehand ([`hear_stock`]); the most alike is
//!    the first best.
//! 2. **Blends.** The tables heard so far, weighted so that the linear model
//!    of [`super::blend`] puts the blend's voice on the samples' voice,
//!    pulled toward the best so far. A blend that sounds more alike becomes
//!    the best and loosens the pull; one that does not tightens it.
//! 3. **A random walk** around the best when blends stop gaining: one step
//!    added to every row of the table alike (a sentence reads one row, by
//!    its length, so a step that differed by row would be judged on the
//!    rows of the search's sentences only), each number in proportion to
//!    its spread over the stock voices; kept when it sounds more alike, its
//!    size adapted to how often that happens. Every table heard joins the
//!    blends' basis, so the two alternate.
//! 4. **The pitch** the best table is spoken at, last: a table sets the
//!    pitch only together with everything else it moves, while the encoder
//!    hears pitch strongly (a reader at 193 Hz cloned by a table speaking
//!    at 133 Hz: likeness 0.65 as it is, 0.73 spoken 1.25 times higher;
//!    docs/voice.md). Heard at four factors around its own, the likeness
//!    over the factor's logarithm fitted by a parabola, whose top is heard
//!    too; the best heard is kept.
//! 5. **The formants** at that pitch, found the same way: every frequency
//!    of the voice but its pitch scaled (the length of the vocal tract,
//!    which a table sets only together with everything else too, and the
//!    encoder hears strongly: a reader whose clone was 0.72 alike was 0.79
//!    with its formants ×0.90; docs/voice.md).
//!
//! Every table stays inside the numbers' range over the stock voices (a
//! little widened): outside it the model was never trained and speaks
//! badly while the encoder may still find it alike.

use std::time::{Duration, Instant};

use mediagen_speakers::encoder::Embedding;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::blend::{mix, toward, Bounds};
use super::{CloneError, StockVoice, Studio};
use crate::tts::kokoro::STYLE_DIM;
use crate::tts::Style;

/// A random step's size, in spreads of each number over the stock voices.
const MIN_STEP: f32 = 0.03;
const MAX_STEP: f32 = 0.6;
/// Random steps taken before the blends are tried again.
const WALK_BEFORE_BLEND: usize = 4;
/// The pitch factors the best table is heard at, as natural logarithms
/// (×0.79, ×0.89, ×1.13, ×1.27), then the fitted top: the budget keeps time
/// for them.
const PITCH_GRID: [f32; 4] = [-0.24, -0.12, 0.12, 0.24];
/// Where the fitted top may lie (×0.70 to ×1.50), as logarithms.
const PITCH_FIT: (f32, f32) = (-0.357, 0.405);
/// The same for the formants (×0.85, ×0.92, ×1.08, ×1.17; the top within
/// ×0.80 to ×1.25, the engine's range).
const FORMANT_GRID: [f32; 4] = [-0.16, -0.08, 0.08, 0.16];
const FORMANT_FIT: (f32, f32) = (-0.223, 0.223);
/// Silence between sentences joined to be embedded (a quarter second at
/// the studio's 16 kHz).
pub const GAP: usize = 4_000;
/// Hearings the pitch and the formants take: the budget keeps time for them.
const TUNING_TRIES: usize = 2 * (PITCH_GRID.len() + 1);

/// How the search runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Every candidate speaks these (different lengths: the style differs
    /// by input length).
    pub sentences: Vec<String>,
    /// Wall time the search may take.
    pub budget: Duration,
    /// How far a table may leave the stock range, as a share of it.
    pub margin: f32,
    pub seed: u64,
}

/// How the caller follows and stops the search.
pub struct Progress<'a> {
    /// Called with the share of the budget spent (0 to 1).
    pub report: &'a (dyn Fn(f32) + Sync),
    /// Checked before every candidate.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct Found {
    pub styles: Vec<f32>,
    /// The factors its pitch and its formants are spoken at.
    pub pitch: f32,
    pub formant: f32,
    /// Its likeness to the search's target (the sentences joined).
    pub likeness: f32,
    /// The best stock voice and its likeness, on the search's sentences.
    pub best_stock: (String, f32),
    /// Candidates heard: blends, random steps.
    pub heard: [usize; 2],
    /// Likeness of the best after each candidate.
    pub trace: Vec<f32>,
}

/// A table heard: its embedding (the sentences joined) and likeness.
struct Heard {
    styles: Vec<f32>,
    embedding: Embedding,
    likeness: f32,
}

/// Searches for a style table whose speech sounds like `target`.
pub fn search(
    studio: &dyn Studio,
    stock: &[StockVoice],
    target: &Embedding,
    options: &Options,
    progress: &Progress,
) -> Result<Found, CloneError> {
    let started = Instant::now();
    let spent = || started.elapsed().as_secs_f32() / options.budget.as_secs_f32().max(1e-3);
    let check = || {
        if (progress.cancelled)() {
            Err(CloneError::Cancelled)
        } else {
            Ok(())
        }
    };
    if stock.is_empty() || options.sentences.is_empty() {
        return Err(CloneError::NoStock);
    }
    let hear = |styles: Vec<f32>| -> Result<Heard, CloneError> {
        check()?;
        let heard = speak_joined(studio, Style::plain(&styles), &options.sentences)?;
        (progress.report)(spent().min(1.0));
        Ok(Heard::new(styles, heard, target))
    };
    let mut heard = [0usize; 2];
    let mut trace = Vec::new();

    // 1. The stock voices.
    let mut basis: Vec<Heard> = stock
        .iter()
        .map(|v| Heard::new(v.styles.clone(), v.heard.clone(), target))
        .collect();
    let mut best = (0..basis.len())
        .max_by(|&a, &b| basis[a].likeness.total_cmp(&basis[b].likeness))
        .expect("stock voices");
    let best_stock = (stock[best].key.clone(), basis[best].likeness);
    let tables: Vec<&[f32]> = stock.iter().map(|v| v.styles.as_slice()).collect();
    let bounds = Bounds::of(&tables, options.margin);
    let width = STYLE_DIM;
    let row_spread = bounds.row_spread(width);
    trace.push(basis[best].likeness);

    // 2 and 3, alternating, while the budget lasts.
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut pull = 0.1f64;
    let mut blending = true;
    let mut failed_blends = 0;
    let mut step = 0.15f32;
    let mut walked = 0;
    // Time for the pitch and the formants at the end: as long as the
    // candidates so far took.
    let tuning_share = |candidates: usize| {
        let each = started.elapsed().as_secs_f32() / candidates.max(1) as f32;
        let each = if candidates == 0 { 3.0 } else { each };
        TUNING_TRIES as f32 * each / options.budget.as_secs_f32().max(1e-3)
    };
    while spent() + tuning_share(heard[0] + heard[1]) < 1.0 {
        let candidate = if blending {
            let embeddings: Vec<&[f32]> = basis.iter().map(|h| h.embedding.0.as_slice()).collect();
            let mut anchor = vec![0.0; basis.len()];
            anchor[best] = 1.0;
            let Some(weights) = toward(&embeddings, &target.0, &anchor, pull) else {
                blending = false;
                continue;
            };
            let styles: Vec<&[f32]> = basis.iter().map(|h| h.styles.as_slice()).collect();
            heard[0] += 1;
            bounds.clamp(mix(&styles, &weights))
        } else {
            heard[1] += 1;
            let delta: Vec<f32> = row_spread
                .iter()
                .map(|s| step * s * gaussian(&mut rng))
                .collect();
            let moved = basis[best]
                .styles
                .iter()
                .enumerate()
                .map(|(i, x)| x + delta[i % width])
                .collect();
            bounds.clamp(moved)
        };
        let h = hear(candidate)?;
        let better = h.likeness > basis[best].likeness;
        basis.push(h);
        if better {
            best = basis.len() - 1;
        }
        if blending {
            if better {
                pull = (pull / 2.0).max(1e-4);
                failed_blends = 0;
            } else {
                pull *= 4.0;
                failed_blends += 1;
                if failed_blends >= 2 {
                    blending = false;
                    walked = 0;
                }
            }
        } else {
            step = if better { step * 1.5 } else { step * 0.8 }.clamp(MIN_STEP, MAX_STEP);
            walked += 1;
            // Steps around the best, kept or not, tell the blends which way
            // the voice moves with each number: after a few, blend again.
            if better || walked >= WALK_BEFORE_BLEND {
                blending = true;
                failed_blends = 0;
                pull = pull.min(0.1);
            }
        }
        trace.push(basis[best].likeness);
    }
    let winner = basis.swap_remove(best);

    // 4 and 5. The pitch, then the formants at that pitch: the best heard
    // at a few factors around its own, a parabola fitted to the likeness
    // over the factor's logarithm (one sentence's whim moves one point,
    // less the curve), its top heard too.
    let mut hear_at = |pitch: f32, formant: f32| -> Result<f32, CloneError> {
        check()?;
        let style = Style {
            table: &winner.styles,
            pitch,
            formant,
            pace: 1.0,
        };
        let likeness = speak_joined(studio, style, &options.sentences)?.similarity(target);
        (progress.report)(spent().min(1.0));
        trace.push(likeness.max(*trace.last().unwrap_or(&likeness)));
        Ok(likeness)
    };
    let in_time = || spent() < 1.0;
    let (pitch, likeness) = tune(
        &mut |x| hear_at(x.exp(), 1.0),
        &in_time,
        winner.likeness,
        PITCH_GRID,
        PITCH_FIT,
    )?;
    let (formant, likeness) = tune(
        &mut |x| hear_at(pitch.exp(), x.exp()),
        &in_time,
        likeness,
        FORMANT_GRID,
        FORMANT_FIT,
    )?;
    Ok(Found {
        styles: winner.styles,
        pitch: pitch.exp(),
        formant: formant.exp(),
        likeness,
        best_stock,
        heard,
        trace,
    })
}

/// The factor (a logarithm) most alike: 0 (heard, `own`), each of `grid`,
/// and the top of the parabola fitted through them, heard while `in_time`.
fn tune(
    hear: &mut dyn FnMut(f32) -> Result<f32, CloneError>,
    in_time: &dyn Fn() -> bool,
    own: f32,
    grid: [f32; 4],
    fit: (f32, f32),
) -> Result<(f32, f32), CloneError> {
    let mut points = vec![(0.0f32, own)];
    // The budget's end stops it too (a search that had almost no time).
    for x in grid {
        if !in_time() {
            break;
        }
        points.push((x, hear(x)?));
    }
    let mut best = points[0];
    for &p in &points {
        if p.1 > best.1 {
            best = p;
        }
    }
    if let Some(top) = parabola_top(&points, fit) {
        if in_time() && points.iter().all(|p| (p.0 - top).abs() > 0.02) {
            let likeness = hear(top)?;
            if likeness > best.1 {
                best = (top, likeness);
            }
        }
    }
    Ok(best)
}

/// The top of the least-squares parabola through `points` (x, y), within
/// `bounds`; `None` when the parabola opens upward or is flat (no top).
fn parabola_top(points: &[(f32, f32)], bounds: (f32, f32)) -> Option<f32> {
    // Normal equations of y = a + b·x + c·x².
    let mut m = [[0.0f64; 4]; 3];
    for &(x, y) in points {
        let (x, y) = (f64::from(x), f64::from(y));
        let row = [1.0, x, x * x];
        for (mi, ri) in m.iter_mut().zip(row) {
            for (mij, rj) in mi.iter_mut().zip(row) {
                *mij += ri * rj;
            }
            mi[3] += ri * y;
        }
    }
    // Gauss–Jordan elimination with partial pivoting.
    for col in 0..3 {
        let pivot = (col..3).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        m.swap(col, pivot);
        if m[col][col].abs() < 1e-12 {
            return None;
        }
        let pivot_row = m[col];
        for (r, mr) in m.iter_mut().enumerate() {
            if r != col {
                let f = mr[col] / pivot_row[col];
                for (x, p) in mr.iter_mut().zip(pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let (b, c) = (m[1][3] / m[1][1], m[2][3] / m[2][2]);
    (c < -1e-9).then(|| ((-b / (2.0 * c)) as f32).clamp(bounds.0, bounds.1))
}

/// What a stock voice sounds like on the search's sentences.
pub fn hear_stock(
    studio: &dyn Studio,
    key: &str,
    styles: Vec<f32>,
    sentences: &[String],
) -> Result<StockVoice, CloneError> {
    Ok(StockVoice {
        heard: speak_joined(studio, Style::plain(&styles), sentences)?,
        key: key.to_owned(),
        styles,
    })
}

/// The speaker embedding of `style` speaking the sentences, joined with
/// [`GAP`] between them and embedded as one utterance: over six readers'
/// real recordings this ranks tables as the bench does better than the
/// mean likeness of each sentence's own embedding (docs/voice.md), as a
/// short sentence alone is a noisy embedding.
fn speak_joined(
    studio: &dyn Studio,
    style: Style,
    sentences: &[String],
) -> Result<Embedding, CloneError> {
    let spoken = sentences
        .iter()
        .map(|sentence| studio.speak(style, sentence).map_err(CloneError::Engine))
        .collect::<Result<Vec<_>, _>>()?;
    studio.embed(&join(&spoken)).map_err(CloneError::Engine)
}

/// 16-kHz speech of several sentences as one utterance, [`GAP`] after each.
pub fn join(spoken: &[Vec<f32>]) -> Vec<f32> {
    let mut joined = Vec::with_capacity(spoken.iter().map(|s| s.len() + GAP).sum());
    for audio in spoken {
        joined.extend_from_slice(audio);
        joined.extend(std::iter::repeat_n(0.0, GAP));
    }
    joined
}

impl Heard {
    fn new(styles: Vec<f32>, embedding: Embedding, target: &Embedding) -> Self {
        Self {
            likeness: embedding.similarity(target),
            styles,
            embedding,
        }
    }
}

/// A standard normal draw (Box–Muller).
fn gaussian(rng: &mut StdRng) -> f32 {
    let u: f32 = rng.gen_range(f32::EPSILON..1.0);
    let v: f32 = rng.gen();
    (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::{join, parabola_top, GAP};

    #[test]
    fn sentences_are_joined_with_a_gap_after_each() {
        let joined = join(&[vec![0.5; 3], vec![-0.5; 2]]);
        assert_eq!(joined.len(), 5 + 2 * GAP);
        assert_eq!(&joined[..3], &[0.5; 3]);
        assert!(joined[3..3 + GAP].iter().all(|&x| x == 0.0));
        assert_eq!(&joined[3 + GAP..5 + GAP], &[-0.5; 2]);
        assert!(join(&[]).is_empty());
    }

    #[test]
    fn the_pitch_is_the_top_of_the_fitted_parabola() {
        let at =
            |top: f32| [0.0f32, -0.24, -0.12, 0.12, 0.24].map(|x| (x, 0.7 - (x - top) * (x - top)));
        let bounds = (-0.357, 0.405);
        let found = parabola_top(&at(0.1), bounds).unwrap();
        assert!((found - 0.1).abs() < 1e-4, "{found}");
        // Rising all the way: the top is past the points, kept in bounds.
        assert_eq!(parabola_top(&at(2.0), bounds), Some(0.405));
        // A likeness that only falls away from the middle of nowhere: no top.
        let valley = [0.0f32, -0.24, 0.24].map(|x| (x, x * x));
        assert_eq!(parabola_top(&valley, bounds), None);
        // Noise on one point moves the top a little, not to that point.
        let mut noisy = at(0.1);
        noisy[3].1 += 0.01;
        let found = parabola_top(&noisy, bounds).unwrap();
        assert!((found - 0.1).abs() < 0.05, "{found}");
    }
}
