//! Planning an expansion (pure): which source frame is shown at each output
//! frame, from the clip's thumbnails, and how good the seams are.

use std::collections::HashMap;

use mediagen_core::rng::Rng;

/// Side of the grey analysis thumbnails, pixels.
pub const THUMB: usize = 48;
/// Frames crossfaded after each jump of a seamless plan.
pub const FADE: usize = 3;

pub use mediagen_core::format::ExpandMode as Mode;

/// Which way a run goes through the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Forward,
    Backward,
    /// The same frame, `len` times.
    Hold,
}

/// A stretch of output frames: `len` source frames from `from` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub from: usize,
    pub len: usize,
    pub dir: Dir,
    /// After a jump: the source frame that would have come next, faded out
    /// over the run's first [`FADE`] frames.
    pub fade: Option<usize>,
}

impl Run {
    fn frame(&self, k: usize) -> usize {
        match self.dir {
            Dir::Forward => self.from + k,
            Dir::Backward => self.from - k,
            Dir::Hold => self.from,
        }
    }
}

/// The output as runs of source frames.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub runs: Vec<Run>,
    /// Places where the output leaves the source's own order.
    pub jumps: usize,
}

/// One output frame: its source frame and, during a crossfade, the frame
/// fading out with the new frame's weight.
pub type Shown = (usize, Option<(usize, f32)>);

pub(super) fn fade_weight(k: usize) -> f32 {
    (k + 1) as f32 / (FADE + 1) as f32
}

impl Plan {
    pub fn frames(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }

    /// Every output frame in order (`n`: the source's frame count).
    pub fn shown(&self, n: usize) -> impl Iterator<Item = Shown> + '_ {
        self.runs.iter().flat_map(move |run| {
            (0..run.len).map(move |k| {
                let blend = run
                    .fade
                    .filter(|&f| k < FADE && f + k < n)
                    .map(|f| (f + k, fade_weight(k)));
                (run.frame(k), blend)
            })
        })
    }

    /// The source frames shown in order, without crossfades.
    pub fn sequence(&self) -> Vec<usize> {
        self.runs
            .iter()
            .flat_map(|r| (0..r.len).map(move |k| r.frame(k)))
            .collect()
    }
}

fn forward(from: usize, len: usize) -> Run {
    Run {
        from,
        len,
        dir: Dir::Forward,
        fade: None,
    }
}

/// The plan of a plain mode for `total` frames of an `n`-frame clip; a
/// shorter output is the clip's beginning.
pub fn plan_simple(mode: Mode, n: usize, total: usize) -> Plan {
    let mut plan = Plan::default();
    if total <= n || n < 2 {
        plan.runs.push(forward(0, total.min(n)));
        if total > n {
            plan.runs.push(Run {
                from: n - 1,
                len: total - n,
                dir: Dir::Hold,
                fade: None,
            });
            plan.jumps = 1;
        }
        return plan;
    }
    plan.runs.push(forward(0, n));
    let mut left = total - n;
    match mode {
        Mode::Freeze => plan.runs.push(Run {
            from: n - 1,
            len: left,
            dir: Dir::Hold,
            fade: None,
        }),
        Mode::Loop | Mode::Seamless => {
            while left > 0 {
                let len = left.min(n);
                plan.runs.push(forward(0, len));
                left -= len;
            }
        }
        Mode::Pingpong => {
            let mut back = true;
            while left > 0 {
                let len = left.min(n - 1);
                plan.runs.push(if back {
                    Run {
                        from: n - 2,
                        len,
                        dir: Dir::Backward,
                        fade: None,
                    }
                } else {
                    forward(1, len)
                });
                back = !back;
                left -= len;
            }
        }
    }
    plan.jumps = plan.runs.len() - 1;
    plan
}

/// Root-mean-square difference of two thumbnails, in 8-bit grey levels.
fn dist(a: &[u8], b: &[u8]) -> f32 {
    let sum: u32 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x.abs_diff(y) as u32;
            d * d
        })
        .sum();
    (sum as f32 / a.len() as f32).sqrt()
}

/// A candidate backward jump: after showing `src`, show `dst` (≤ `src`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Jump {
    src: usize,
    dst: usize,
    /// How visible the jump is, in typical frame-to-frame steps.
    cost: f32,
}

/// Candidate loops at most.
const CANDIDATES: usize = 24;
/// Jump sources and targets examined at most (longer clips are strided).
const ANALYSED: usize = 720;
/// The cost of ending anywhere but on the clip's last frame (in frame
/// steps: a stop elsewhere beats a visible jump).
const UNNATURAL_END: f32 = 4.0;
/// The fixed cost of a jump (fewer, longer loops win ties).
const JUMP_COST: f32 = 0.02;
/// The penalty for each earlier use of the same loop.
const REUSE: f32 = 0.15;

fn median(mut v: Vec<f32>) -> f32 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// The candidate jumps of a clip (video textures' filtered distance, local
/// minima, cheapest first), and the clip's typical frame step.
fn candidates(thumbs: &[Vec<u8>], fps: f64) -> Vec<Jump> {
    let n = thumbs.len();
    let steps: Vec<f32> = (1..n).map(|t| dist(&thumbs[t - 1], &thumbs[t])).collect();
    let scale = median(steps.clone()).max(0.5);
    let min_loop = ((0.4 * fps).round() as usize).max(6).min(n / 2).max(2);
    // Distances summed along the diagonal with binomial weights: a jump
    // from i to j is cheap when frames i+1+k and j+k match for k = -2..1.
    const TAPS: [(isize, f32); 4] = [(-2, 1.0), (-1, 3.0), (0, 3.0), (1, 1.0)];
    let filtered = |i: usize, j: usize| {
        let (mut sum, mut weight) = (0.0, 0.0);
        for (k, w) in TAPS {
            let (a, b) = (i as isize + 1 + k, j as isize + k);
            if a >= 0 && b >= 0 && (a as usize) < n && (b as usize) < n {
                sum += w * dist(&thumbs[a as usize], &thumbs[b as usize]);
                weight += w;
            }
        }
        sum / weight
    };
    let stride = n.div_ceil(ANALYSED).max(1);
    let sources: Vec<usize> = (0..n.saturating_sub(1)).step_by(stride).collect();
    let mut grid: HashMap<(usize, usize), f32> = HashMap::new();
    for (si, &i) in sources.iter().enumerate() {
        for (ti, &j) in sources.iter().enumerate() {
            if j + min_loop <= i + 1 {
                grid.insert((si, ti), filtered(i, j) / scale);
            }
        }
    }
    let mut jumps: Vec<Jump> = grid
        .iter()
        .filter(|(&(si, ti), &c)| {
            // A local minimum among its neighbours (±2 cells).
            (-2..=2isize).all(|di| {
                (-2..=2isize).all(|dj| {
                    let key = (si as isize + di, ti as isize + dj);
                    let other = (key.0 as usize, key.1 as usize);
                    key.0 < 0
                        || key.1 < 0
                        || other == (si, ti)
                        || grid
                            .get(&other)
                            .is_none_or(|&o| o > c || (o == c && other > (si, ti)))
                })
            })
        })
        .map(|(&(si, ti), &cost)| Jump {
            src: sources[si],
            dst: sources[ti],
            cost,
        })
        .collect();
    // Beside each of the best loops, the loops a frame or two longer or
    // shorter: a nearly free way to hit an exact length.
    jumps.sort_by(|a, b| a.cost.total_cmp(&b.cost).then(a.src.cmp(&b.src)));
    // Loops much worse than the best are never worth it.
    let cheapest = jumps.first().map_or(0.0, |j| j.cost);
    jumps.retain(|j| j.cost <= cheapest + 3.0);
    jumps.truncate(CANDIDATES);
    let best: Vec<Jump> = jumps.iter().take(6).copied().collect();
    for j in best {
        for d in [-2isize, -1, 1, 2] {
            let dst = j.dst as isize + d;
            if dst >= 0 && dst as usize + min_loop <= j.src + 1 {
                let dst = dst as usize;
                jumps.push(Jump {
                    src: j.src,
                    dst,
                    cost: filtered(j.src, dst) / scale,
                });
            }
        }
    }
    // A clip whose last frame leads into its first (an idle loop) loops
    // for free.
    if n >= 3 {
        let wrap = dist(&thumbs[n - 1], &thumbs[0]);
        let edge = steps[0].max(steps[n - 2]);
        if wrap <= 1.25 * edge + 1e-3 {
            jumps.push(Jump {
                src: n - 1,
                dst: 0,
                cost: (wrap - scale).max(0.0) / scale,
            });
        }
    }
    jumps.sort_by_key(|j| (j.src, j.dst));
    jumps.dedup_by(|a, b| a.src == b.src && a.dst == b.dst);
    jumps
}

/// The seamless plan for `total` frames from the clip's thumbnails.
pub fn plan_seamless(thumbs: &[Vec<u8>], fps: f64, total: usize, seed: u64) -> Plan {
    let n = thumbs.len();
    if total <= n || n < 4 {
        return plan_simple(Mode::Loop, n, total);
    }
    let jumps = candidates(thumbs, fps);
    // Positions the walk can be at after a jump (and the start).
    let mut positions: Vec<usize> = std::iter::once(0)
        .chain(jumps.iter().map(|j| j.dst))
        .collect();
    positions.sort_unstable();
    positions.dedup();
    let slot = |x: usize| positions.binary_search(&x).expect("a jump target");
    let end_cost = |last: usize| if last == n - 1 { 0.0 } else { UNNATURAL_END };
    // value[p][r]: the least cost of showing exactly r more frames from
    // position p (jumps' costs plus the end's).
    let width = total + 1;
    let mut value = vec![f32::INFINITY; positions.len() * width];
    for r in 1..=total {
        for (p, &x) in positions.iter().enumerate() {
            let mut best = if x + r <= n {
                end_cost(x + r - 1)
            } else {
                f32::INFINITY
            };
            for j in jumps.iter().filter(|j| j.src >= x) {
                let shown = j.src - x + 1;
                if shown < r {
                    let rest = value[slot(j.dst) * width + r - shown];
                    best = best.min(j.cost + JUMP_COST + rest);
                }
            }
            value[p * width + r] = best;
        }
    }
    // The walk: the cheapest finish, with a penalty on reused loops.
    let mut rng = Rng::new(seed);
    let mut uses = vec![0u32; jumps.len()];
    let (mut last, mut streak) = (usize::MAX, 0);
    let (mut x, mut r) = (0, total);
    let mut plan = Plan::default();
    let mut fade = None;
    loop {
        let mut best: (f32, Option<usize>) = (
            if x + r <= n {
                end_cost(x + r - 1)
            } else {
                f32::INFINITY
            },
            None,
        );
        for (ji, j) in jumps.iter().enumerate().filter(|(_, j)| j.src >= x) {
            let shown = j.src - x + 1;
            if shown >= r || (ji == last && streak >= 3) {
                continue;
            }
            let rest = value[slot(j.dst) * width + r - shown];
            let score = j.cost + JUMP_COST + rest + REUSE * uses[ji] as f32 + 0.05 * rng.unit();
            if score < best.0 {
                best = (score, Some(ji));
            }
        }
        match best.1 {
            Some(ji) if best.0.is_finite() => {
                let j = jumps[ji];
                let shown = j.src - x + 1;
                plan.runs.push(Run {
                    from: x,
                    len: shown,
                    dir: Dir::Forward,
                    fade,
                });
                fade = (j.src + 1 < n).then_some(j.src + 1);
                uses[ji] += 1;
                streak = if ji == last { streak + 1 } else { 1 };
                last = ji;
                plan.jumps += 1;
                x = j.dst;
                r -= shown;
            }
            _ => {
                // The end (always possible: the search above only prefers a
                // jump when it can still finish).
                let len = r.min(n - x);
                plan.runs.push(Run {
                    from: x,
                    len,
                    dir: Dir::Forward,
                    fade,
                });
                if len < r {
                    plan.runs.push(Run {
                        from: x + len - 1,
                        len: r - len,
                        dir: Dir::Hold,
                        fade: None,
                    });
                    plan.jumps += 1;
                }
                break;
            }
        }
    }
    plan
}

/// How rough the plan's seams are: the largest jolt in motion (second
/// difference of the thumbnails, crossfades included) at any seam, in units
/// of the clip's mean frame-to-frame step. 0 without seams; about 1 means a
/// seam jolts like an ordinary frame step; lower is better.
pub fn seam_score(thumbs: &[Vec<u8>], plan: &Plan) -> f64 {
    let n = thumbs.len();
    if n < 2 || plan.runs.len() < 2 {
        return 0.0;
    }
    let mean_step = (1..n)
        .map(|t| dist(&thumbs[t - 1], &thumbs[t]))
        .sum::<f32>()
        / (n - 1) as f32;
    let shown: Vec<Shown> = plan.shown(n).collect();
    let picture = |t: usize| -> Vec<f32> {
        let (f, blend) = shown[t];
        match blend {
            None => thumbs[f].iter().map(|&v| v as f32).collect(),
            Some((old, w)) => thumbs[f]
                .iter()
                .zip(&thumbs[old])
                .map(|(&a, &b)| w * a as f32 + (1.0 - w) * b as f32)
                .collect(),
        }
    };
    let mut worst = 0.0f32;
    let mut start = 0;
    for run in &plan.runs[..plan.runs.len() - 1] {
        start += run.len;
        let lo = start.saturating_sub(1).max(1);
        let hi = (start + FADE).min(shown.len() - 2);
        for t in lo..=hi {
            let (a, b, c) = (picture(t - 1), picture(t), picture(t + 1));
            let jolt = a
                .iter()
                .zip(&b)
                .zip(&c)
                .map(|((&a, &b), &c)| (c - 2.0 * b + a).powi(2))
                .sum::<f32>()
                / a.len() as f32;
            worst = worst.max(jolt.sqrt());
        }
    }
    ((worst / mean_step.max(0.5)) as f64 * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thumbnails of a pattern moving with period `period` frames.
    fn periodic(n: usize, period: f32) -> Vec<Vec<u8>> {
        (0..n)
            .map(|t| {
                let phase = t as f32 / period * std::f32::consts::TAU;
                (0..THUMB * THUMB)
                    .map(|p| {
                        let x = (p % THUMB) as f32;
                        (128.0 + 100.0 * (x / 6.0 + phase).sin()) as u8
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn simple_plans_have_the_exact_length() {
        for mode in Mode::ALL {
            for total in [1, 50, 125, 935] {
                let plan = plan_simple(mode, 125, total);
                assert_eq!(plan.frames(), total, "{mode:?} {total}");
                assert!(plan.sequence().iter().all(|&f| f < 125));
            }
        }
        let pp = plan_simple(Mode::Pingpong, 4, 10).sequence();
        assert_eq!(pp, [0, 1, 2, 3, 2, 1, 0, 1, 2, 3]);
        let fr = plan_simple(Mode::Freeze, 3, 5).sequence();
        assert_eq!(fr, [0, 1, 2, 2, 2]);
    }

    #[test]
    fn seamless_plans_jump_where_the_motion_matches() {
        // 3.5 periods of 36 frames: ending at frame 125 and starting over
        // would jolt; jumping back a whole period does not.
        let thumbs = periodic(126, 36.0);
        for total in [126, 127, 200, 935, 1500] {
            let plan = plan_seamless(&thumbs, 25.0, total, 7);
            assert_eq!(plan.frames(), total);
            let seq = plan.sequence();
            assert_eq!(seq[0], 0);
            // Whole periods back, but for a frame or two to fit the length.
            let mut off = 0;
            for w in seq.windows(2) {
                if w[1] != w[0] + 1 {
                    let back = (w[0] + 1 - w[1]) % 36;
                    assert!(back.min(36 - back) <= 2, "{w:?}");
                    off += usize::from(back != 0);
                }
            }
            assert!(off <= 2, "{total}: {off} jumps off the period");
            // No loop taken more than three times in a row.
            let mut streak = (0, (0, 0));
            for w in seq.windows(2).filter(|w| w[1] != w[0] + 1) {
                streak = if streak.1 == (w[0], w[1]) {
                    (streak.0 + 1, streak.1)
                } else {
                    (1, (w[0], w[1]))
                };
                assert!(streak.0 <= 3, "{total}: {plan:?}");
            }
            let score = seam_score(&thumbs, &plan);
            let looped = seam_score(&thumbs, &plan_simple(Mode::Loop, 126, total));
            if total > 126 {
                assert!(score < looped, "{score} vs {looped}");
            }
        }
    }

    #[test]
    fn a_loopable_clip_wraps_around() {
        let thumbs = periodic(72, 36.0);
        // Six more periods: the plan can end on the clip's own last frame.
        let plan = plan_seamless(&thumbs, 25.0, 72 + 6 * 36, 1);
        assert_eq!(plan.frames(), 72 + 6 * 36);
        let score = seam_score(&thumbs, &plan);
        assert!(score < 1.0, "{score} {plan:?}");
        assert_eq!(*plan.sequence().last().unwrap(), 71);
    }
}
