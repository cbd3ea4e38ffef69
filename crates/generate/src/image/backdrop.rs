//! The background of a scene: the sky of the time of day (sun, moon,
//! stars, clouds) and the ground of the setting.

use resvg::tiny_skia::{FillRule, PathBuilder, Pixmap, Rect, Transform};

use super::scene::{Scene, Setting, TimeOfDay};
use mediagen_core::rng::Rng;
use mediagen_media::draw::{gradient, solid};

fn rect(pm: &mut Pixmap, x: f32, y: f32, w: f32, h: f32, c: [u8; 3]) {
    if let Some(r) = Rect::from_xywh(x, y, w.max(1.0), h.max(1.0)) {
        pm.fill_rect(r, &solid(c), Transform::identity(), None);
    }
}

fn fill(pm: &mut Pixmap, path: Option<resvg::tiny_skia::Path>, c: [u8; 3]) {
    if let Some(path) = path {
        pm.fill_path(
            &path,
            &solid(c),
            FillRule::Winding,
            Transform::identity(),
            None,
        );
    }
}

fn circle(pm: &mut Pixmap, x: f32, y: f32, r: f32, c: [u8; 3]) {
    fill(pm, PathBuilder::from_circle(x, y, r.max(0.5)), c);
}

fn polygon(pm: &mut Pixmap, points: &[(f32, f32)], c: [u8; 3]) {
    let mut pb = PathBuilder::new();
    for (i, &(x, y)) in points.iter().enumerate() {
        if i == 0 {
            pb.move_to(x, y);
        } else {
            pb.line_to(x, y);
        }
    }
    pb.close();
    fill(pm, pb.finish(), c);
}

fn shade(c: [u8; 3], time: TimeOfDay) -> [u8; 3] {
    match time {
        TimeOfDay::Day => c,
        TimeOfDay::Sunset => [
            (c[0] as f32 * 0.85 + 25.0).min(255.0) as u8,
            (c[1] as f32 * 0.7) as u8,
            (c[2] as f32 * 0.6) as u8,
        ],
        TimeOfDay::Night => c.map(|v| (v as f32 * 0.35) as u8),
    }
}

/// The ground lines of a painted background, pixels from the top.
#[derive(Debug, Clone, Copy)]
pub struct Lines {
    /// Where standing objects' feet go.
    pub ground: f32,
    /// The far ground, for things in the background.
    pub far: f32,
}

/// The sky, sun or moon and stars, the ground of the setting.
pub fn paint(pm: &mut Pixmap, scene: &Scene, rng: &mut Rng) -> Lines {
    let (w, h) = (pm.width() as f32, pm.height() as f32);
    let m = w.min(h);
    let t = scene.time;
    if scene.setting == Setting::Room {
        let wall = shade([236, 226, 206], t);
        rect(pm, 0.0, 0.0, w, h * 0.7, wall);
        // A window showing the sky of the time of day.
        let (wx, wy, ww, wh) = (w * 0.62, h * 0.12, w * 0.26, h * 0.3);
        let sky = match t {
            TimeOfDay::Day => [150, 200, 245],
            TimeOfDay::Sunset => [250, 150, 80],
            TimeOfDay::Night => [15, 20, 50],
        };
        rect(
            pm,
            wx - m * 0.01,
            wy - m * 0.01,
            ww + m * 0.02,
            wh + m * 0.02,
            [250, 250, 250],
        );
        rect(pm, wx, wy, ww, wh, sky);
        rect(pm, 0.0, h * 0.7, w, h * 0.3, shade([165, 120, 80], t));
        rect(pm, 0.0, h * 0.7, w, m * 0.015, shade([120, 85, 55], t));
        return Lines {
            ground: h * 0.92,
            far: h * 0.76,
        };
    }
    let horizon = if scene.setting == Setting::Sky {
        h
    } else {
        h * 0.6
    };
    match t {
        TimeOfDay::Day => gradient(
            pm,
            0.0,
            horizon,
            &[(0.0, [70, 140, 230]), (1.0, [185, 220, 250])],
        ),
        TimeOfDay::Sunset => gradient(
            pm,
            0.0,
            horizon,
            &[
                (0.0, [45, 35, 100]),
                (0.55, [230, 90, 80]),
                (1.0, [255, 190, 90]),
            ],
        ),
        TimeOfDay::Night => gradient(pm, 0.0, horizon, &[(0.0, [5, 8, 30]), (1.0, [25, 35, 80])]),
    }
    match t {
        TimeOfDay::Day => circle(pm, w * 0.82, h * 0.16, m * 0.07, [255, 220, 80]),
        TimeOfDay::Sunset => circle(pm, w * 0.7, horizon, m * 0.11, [255, 140, 40]),
        TimeOfDay::Night => {
            for _ in 0..(w * h / 4000.0) as usize {
                let (x, y) = (rng.unit() * w, rng.unit() * horizon * 0.9);
                circle(pm, x, y, m * rng.range(0.001, 0.003), [255, 255, 235]);
            }
            circle(pm, w * 0.8, h * 0.15, m * 0.06, [240, 240, 210]);
        }
    }
    if t != TimeOfDay::Night {
        let clouds = if scene.setting == Setting::Sky { 6 } else { 3 };
        for _ in 0..clouds {
            let (x, y) = (rng.unit() * w, rng.range(0.08, 0.35) * horizon);
            let r = m * rng.range(0.04, 0.07);
            let c = shade([250, 250, 252], t);
            for k in 0..4 {
                circle(
                    pm,
                    x + k as f32 * r * 0.8,
                    y + (k % 2) as f32 * r * 0.25,
                    r,
                    c,
                );
            }
        }
    }
    let ground = |c: [u8; 3]| shade(c, t);
    match scene.setting {
        Setting::Sky => {
            return Lines {
                ground: h * 0.8,
                far: h * 0.7,
            }
        }
        Setting::Beach => {
            gradient(
                pm,
                horizon,
                h * 0.72,
                &[(0.0, ground([30, 110, 190])), (1.0, ground([70, 170, 215]))],
            );
            rect(pm, 0.0, h * 0.72, w, h * 0.28, ground([235, 210, 155]));
            rect(pm, 0.0, h * 0.72, w, m * 0.012, ground([250, 250, 245]));
        }
        Setting::Forest => {
            rect(pm, 0.0, horizon, w, h - horizon, ground([60, 120, 50]));
            let mut x = -m * 0.05;
            while x < w {
                let s = m * rng.range(0.12, 0.22);
                rect(
                    pm,
                    x + s * 0.45,
                    horizon - s * 0.2,
                    s * 0.1,
                    s * 0.3,
                    ground([100, 70, 40]),
                );
                polygon(
                    pm,
                    &[
                        (x, horizon - s * 0.15),
                        (x + s * 0.5, horizon - s * 1.3),
                        (x + s, horizon - s * 0.15),
                    ],
                    ground([30, 95, 45]),
                );
                x += s * rng.range(0.5, 0.8);
            }
        }
        Setting::City => {
            let mut x = 0.0;
            while x < w {
                let (bw, bh) = (m * rng.range(0.08, 0.16), h * rng.range(0.15, 0.4));
                rect(pm, x, horizon - bh, bw, bh, ground([70, 75, 95]));
                let lit = if t == TimeOfDay::Day {
                    [150, 180, 210]
                } else {
                    [255, 210, 90]
                };
                let mut wy = horizon - bh + m * 0.02;
                while wy < horizon - m * 0.03 {
                    let mut wx = x + m * 0.015;
                    while wx < x + bw - m * 0.03 {
                        rect(pm, wx, wy, m * 0.015, m * 0.02, lit);
                        wx += m * 0.03;
                    }
                    wy += m * 0.04;
                }
                x += bw + m * 0.01;
            }
            rect(pm, 0.0, horizon, w, h - horizon, ground([90, 90, 100]));
        }
        Setting::Snow => {
            rect(pm, 0.0, horizon, w, h - horizon, ground([245, 248, 255]));
            for _ in 0..(w * h / 3000.0) as usize {
                circle(
                    pm,
                    rng.unit() * w,
                    rng.unit() * h,
                    m * 0.003,
                    [255, 255, 255],
                );
            }
        }
        Setting::Desert => {
            rect(pm, 0.0, horizon, w, h - horizon, ground([232, 192, 122]));
            circle(
                pm,
                w * 0.25,
                horizon + h * 0.55,
                w * 0.6,
                ground([215, 170, 100]),
            );
        }
        Setting::Mountains => {
            for k in 0..3 {
                let (x, s) = (w * (k as f32 * 0.4 - 0.1), w * rng.range(0.5, 0.7));
                let peak = horizon - h * rng.range(0.25, 0.4);
                polygon(
                    pm,
                    &[(x, horizon), (x + s * 0.5, peak), (x + s, horizon)],
                    ground([110, 110, 135]),
                );
                let cap = (horizon - peak) * 0.25;
                polygon(
                    pm,
                    &[
                        (x + s * 0.5 - cap * 0.6, peak + cap),
                        (x + s * 0.5, peak),
                        (x + s * 0.5 + cap * 0.6, peak + cap),
                    ],
                    [245, 245, 250],
                );
            }
            rect(pm, 0.0, horizon, w, h - horizon, ground([105, 170, 75]));
        }
        Setting::Meadow | Setting::Room => {
            rect(pm, 0.0, horizon, w, h - horizon, ground([110, 185, 80]))
        }
    }
    Lines {
        ground: h * 0.9,
        far: horizon + 0.1 * h,
    }
}
