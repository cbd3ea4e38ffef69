//! Image generation from text, embedded engine: the prompt is read into a
//! scene ([`scene`]: objects with colours, sizes, counts and relations, a
//! setting, a time of day, a style); the background is painted, the objects
//! are drawn from the Twemoji icon set ([`icons`]) with resvg, tinted and
//! placed by their relations, and a style filter is applied. Everything
//! drawn is reported with its bounding box.

pub mod icons;
pub mod scene;

use resvg::tiny_skia::{FillRule, PathBuilder, Pixmap, PixmapPaint, Rect, Transform};
use resvg::usvg;
use serde::Serialize;

use mediagen_core::rng::Rng;
use mediagen_media::draw::{gradient, solid};
use scene::{Relation, Scene, Setting, Style, TimeOfDay};

pub use mediagen_core::format::ImageFormat;

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("icon {0}: {1}")]
    Icon(String, String),
    #[error("encoding: {0}")]
    Encode(String),
    #[error("the canvas size is not allowed")]
    Size,
}

/// A box in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BBox {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// An object as drawn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placed {
    /// The prompt word.
    pub object: String,
    /// The icon used (its emoji and emojilib name).
    pub emoji: String,
    pub icon: String,
    pub bbox: BBox,
    pub color: Option<&'static str>,
    pub relation: Option<Relation>,
}

/// A rendered picture (premultiplied RGBA, as tiny-skia keeps it).
pub struct Picture {
    pixmap: Pixmap,
    pub placed: Vec<Placed>,
}

/// Largest SVG icon file read, bytes (Twemoji's are a few kB).
const MAX_ICON_BYTES: u64 = 512 * 1024;

fn rect(pm: &mut Pixmap, x: f32, y: f32, w: f32, h: f32, c: [u8; 3]) {
    if let Some(r) = Rect::from_xywh(x, y, w.max(1.0), h.max(1.0)) {
        pm.fill_rect(r, &solid(c), Transform::identity(), None);
    }
}

fn circle(pm: &mut Pixmap, x: f32, y: f32, r: f32, c: [u8; 3]) {
    if let Some(path) = PathBuilder::from_circle(x, y, r.max(0.5)) {
        pm.fill_path(
            &path,
            &solid(c),
            FillRule::Winding,
            Transform::identity(),
            None,
        );
    }
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
    if let Some(path) = pb.finish() {
        pm.fill_path(
            &path,
            &solid(c),
            FillRule::Winding,
            Transform::identity(),
            None,
        );
    }
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

/// The sky, sun or moon and stars, the ground of the setting. Returns the
/// ground line (where standing objects' feet go).
fn background(pm: &mut Pixmap, scene: &Scene, rng: &mut Rng) -> f32 {
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
        return h * 0.92;
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
        Setting::Sky => return h * 0.8,
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
    h * 0.9
}

/// Draws an icon into a `size`-pixel square, tinted to `color` when asked
/// (the icon's shading kept: its lightness scales the colour).
fn icon_pixmap(
    file: &std::path::Path,
    size: u32,
    color: Option<[u8; 3]>,
) -> Result<Pixmap, ImageError> {
    let err = |e: String| ImageError::Icon(file.display().to_string(), e);
    let len = std::fs::metadata(file)
        .map_err(|e| err(e.to_string()))?
        .len();
    if len > MAX_ICON_BYTES {
        return Err(err("too large".into()));
    }
    let data = std::fs::read(file).map_err(|e| err(e.to_string()))?;
    let tree =
        usvg::Tree::from_data(&data, &usvg::Options::default()).map_err(|e| err(e.to_string()))?;
    let mut pm = Pixmap::new(size, size).ok_or(ImageError::Size)?;
    let s = size as f32 / tree.size().width().max(tree.size().height());
    resvg::render(&tree, Transform::from_scale(s, s), &mut pm.as_mut());
    if let Some(c) = color {
        for px in pm.pixels_mut() {
            let a = px.alpha();
            if a == 0 {
                continue;
            }
            let d = px.demultiply();
            let lum =
                (0.3 * d.red() as f32 + 0.59 * d.green() as f32 + 0.11 * d.blue() as f32) / 255.0;
            let k = 0.45 + 0.75 * lum;
            let v = |ch: u8| ((ch as f32 * k).min(255.0) * a as f32 / 255.0) as u8;
            if let Some(p) =
                resvg::tiny_skia::PremultipliedColorU8::from_rgba(v(c[0]), v(c[1]), v(c[2]), a)
            {
                *px = p;
            }
        }
    }
    Ok(pm)
}

/// Renders a scene at `width`×`height`; the same scene and seed give the
/// same pixels.
pub fn render(scene: &Scene, width: u32, height: u32, seed: u64) -> Result<Picture, ImageError> {
    let mut pm = Pixmap::new(width, height).ok_or(ImageError::Size)?;
    let mut rng = Rng::new(seed);
    let mut bg_rng = rng.fork();
    let ground = background(&mut pm, scene, &mut bg_rng);
    let (w, h) = (width as f32, height as f32);
    let m = w.min(h);
    // Boxes: (centre x, bottom y, size) per object copy.
    let mut boxes: Vec<Option<Vec<(f32, f32, f32)>>> = vec![None; scene.objects.len()];
    let roots: Vec<usize> = (0..scene.objects.len())
        .filter(|&i| scene.objects[i].anchor.is_none())
        .collect();
    let copies: usize = roots
        .iter()
        .map(|&i| scene.objects[i].count)
        .sum::<usize>()
        .max(1);
    let slot = w / copies as f32;
    let base = (m * 0.55 / (copies as f32).sqrt()).min(slot * 0.92);
    let mut k = 0;
    for &i in &roots {
        let o = &scene.objects[i];
        let mut list = Vec::new();
        for _ in 0..o.count {
            let jitter = rng.range(-0.03, 0.03) * slot;
            list.push(((k as f32 + 0.5) * slot + jitter, ground, base * o.scale));
            k += 1;
        }
        boxes[i] = Some(list);
    }
    let mut order = roots.clone();
    // Anchored objects, once what they hang on is placed.
    for _ in 0..scene.objects.len() {
        for i in 0..scene.objects.len() {
            if boxes[i].is_some() {
                continue;
            }
            let Some((rel, j)) = scene.objects[i].anchor else {
                continue;
            };
            let Some(&(cx, bottom, size)) = boxes[j].as_ref().and_then(|b| b.first()) else {
                continue;
            };
            let o = &scene.objects[i];
            let top = bottom - size;
            let placed = match rel {
                Relation::Wearing => {
                    let hat = size * 0.5 * o.scale;
                    let (fx, fy) = head(&scene.objects[j].icon.file);
                    (
                        cx - size / 2.0 + fx * size,
                        top + fy * size + hat * 0.35,
                        hat,
                    )
                }
                Relation::On => (cx, top + size * 0.12, size * 0.6 * o.scale),
                _ => (cx, top - h * 0.04, size * 0.6 * o.scale),
            };
            boxes[i] = Some(vec![placed]);
            order.push(i);
        }
    }
    // "A on B": B must be drawn under A: anchors first.
    order.sort_by_key(|&i| depth(scene, i));
    let mut placed = Vec::new();
    for i in order {
        let o = &scene.objects[i];
        for &(cx, bottom, size) in boxes[i].iter().flatten() {
            let size = size.clamp(8.0, m);
            let x = (cx - size / 2.0).clamp(0.0, w - size);
            let y = (bottom - size).clamp(0.0, h - size);
            let icon = icon_pixmap(&o.icon.file, size as u32, o.color.map(|c| c.1))?;
            pm.draw_pixmap(
                x as i32,
                y as i32,
                icon.as_ref(),
                &PixmapPaint::default(),
                Transform::identity(),
                None,
            );
            placed.push(Placed {
                object: o.word.clone(),
                emoji: o.icon.emoji.clone(),
                icon: o.icon.name.clone(),
                bbox: BBox {
                    x: x as u32,
                    y: y as u32,
                    width: size as u32,
                    height: size as u32,
                },
                color: o.color.map(|c| c.0),
                relation: o.anchor.map(|a| a.0),
            });
        }
    }
    match scene.style {
        Style::Flat => {}
        Style::Pixel => pixelate(&mut pm),
        Style::Watercolor => watercolor(&mut pm, &mut rng),
    }
    Ok(Picture { pixmap: pm, placed })
}

/// Where a wearer's head is, as fractions of its icon's box: the middle of
/// the first row (from the top) whose opaque run is at least a fifth of the
/// width, so ears, tails and antennae are passed over.
fn head(file: &std::path::Path) -> (f32, f32) {
    const N: u32 = 64;
    let Ok(pm) = icon_pixmap(file, N, None) else {
        return (0.5, 0.1);
    };
    for y in 0..N {
        let row: Vec<bool> = (0..N)
            .map(|x| pm.pixel(x, y).is_some_and(|p| p.alpha() > 128))
            .collect();
        let (mut best, mut run, mut start, mut best_start) = (0, 0, 0, 0);
        for (x, &opaque) in row.iter().enumerate() {
            if opaque {
                if run == 0 {
                    start = x;
                }
                run += 1;
                if run > best {
                    (best, best_start) = (run, start);
                }
            } else {
                run = 0;
            }
        }
        if best * 5 >= N as usize {
            return (
                (best_start as f32 + best as f32 / 2.0) / N as f32,
                y as f32 / N as f32,
            );
        }
    }
    (0.5, 0.1)
}

fn depth(scene: &Scene, i: usize) -> usize {
    let mut d = 0;
    let mut at = i;
    while let Some((_, j)) = scene.objects[at].anchor {
        d += 1;
        at = j;
        if d > scene.objects.len() {
            break;
        }
    }
    d
}

/// Pixel art: blocks of a 64th of the short side, each its mean colour,
/// channels on 16 levels.
fn pixelate(pm: &mut Pixmap) {
    let (w, h) = (pm.width() as usize, pm.height() as usize);
    let block = (w.min(h) / 64).max(2);
    let data = pm.data_mut();
    for by in (0..h).step_by(block) {
        for bx in (0..w).step_by(block) {
            let mut sum = [0u32; 4];
            let mut n = 0;
            for y in by..(by + block).min(h) {
                for x in bx..(bx + block).min(w) {
                    let i = (y * w + x) * 4;
                    for c in 0..4 {
                        sum[c] += u32::from(data[i + c]);
                    }
                    n += 1;
                }
            }
            let mean = sum.map(|s| (((s / n) / 16) * 16 + 8).min(255) as u8);
            for y in by..(by + block).min(h) {
                for x in bx..(bx + block).min(w) {
                    let i = (y * w + x) * 4;
                    data[i..i + 3].copy_from_slice(&mean[..3]);
                    data[i + 3] = 255;
                }
            }
        }
    }
}

/// Watercolour-like: soft edges (two box blurs), colour pooling at paper
/// grain (seeded noise), a lighter wash.
fn watercolor(pm: &mut Pixmap, rng: &mut Rng) {
    let (w, h) = (pm.width() as usize, pm.height() as usize);
    let r = (w.min(h) / 200).max(1);
    let data = pm.data_mut();
    for _ in 0..2 {
        box_blur(data, w, h, r, true);
        box_blur(data, w, h, r, false);
    }
    for px in data.chunks_exact_mut(4) {
        let grain = rng.range(-10.0, 10.0);
        for c in &mut px[..3] {
            let v = *c as f32 * 0.88 + 255.0 * 0.12 + grain;
            *c = v.clamp(0.0, 255.0) as u8;
        }
        px[3] = 255;
    }
}

fn box_blur(data: &mut [u8], w: usize, h: usize, r: usize, horizontal: bool) {
    let (lines, len) = if horizontal { (h, w) } else { (w, h) };
    let index = |line: usize, k: usize| {
        if horizontal {
            (line * w + k) * 4
        } else {
            (k * w + line) * 4
        }
    };
    let mut buf = vec![[0u32; 4]; len];
    for line in 0..lines {
        for (k, b) in buf.iter_mut().enumerate() {
            let i = index(line, k);
            *b = [data[i], data[i + 1], data[i + 2], data[i + 3]].map(u32::from);
        }
        let mut acc = [0u32; 4];
        let span = (2 * r + 1) as u32;
        for k in 0..=2 * r {
            let v = buf[k.saturating_sub(r).min(len - 1)];
            for c in 0..4 {
                acc[c] += v[c];
            }
        }
        for k in 0..len {
            let i = index(line, k);
            for c in 0..4 {
                data[i + c] = (acc[c] / span) as u8;
            }
            let (out, inn) = (buf[k.saturating_sub(r)], buf[(k + r + 1).min(len - 1)]);
            for c in 0..4 {
                acc[c] = acc[c] + inn[c] - out[c];
            }
        }
    }
}

impl Picture {
    pub fn width(&self) -> u32 {
        self.pixmap.width()
    }

    pub fn height(&self) -> u32 {
        self.pixmap.height()
    }

    /// Straight (not premultiplied) RGBA.
    pub fn rgba(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.pixmap.data().len());
        for px in self.pixmap.pixels() {
            let c = px.demultiply();
            out.extend_from_slice(&[c.red(), c.green(), c.blue(), c.alpha()]);
        }
        out
    }

    /// A picture of RGB pixels (8 bits a channel, row-major), such as a
    /// neural model's.
    pub fn from_rgb(width: u32, height: u32, rgb: &[u8]) -> Result<Self, ImageError> {
        let mut pixmap = Pixmap::new(width, height).ok_or(ImageError::Size)?;
        if rgb.len() != pixmap.data().len() / 4 * 3 {
            return Err(ImageError::Size);
        }
        for (px, c) in pixmap
            .data_mut()
            .chunks_exact_mut(4)
            .zip(rgb.chunks_exact(3))
        {
            px[..3].copy_from_slice(c);
            px[3] = 255;
        }
        Ok(Self {
            pixmap,
            placed: Vec::new(),
        })
    }

    pub fn encode(&self, format: ImageFormat) -> Result<Vec<u8>, ImageError> {
        let enc = |e: &dyn std::fmt::Display| ImageError::Encode(e.to_string());
        match format {
            ImageFormat::Png => self.pixmap.encode_png().map_err(|e| enc(&e)),
            ImageFormat::Jpeg => {
                let rgb: Vec<u8> = self
                    .rgba()
                    .chunks_exact(4)
                    .flat_map(|p| [p[0], p[1], p[2]])
                    .collect();
                let mut out = Vec::new();
                jpeg_encoder::Encoder::new(&mut out, 90)
                    .encode(
                        &rgb,
                        self.width() as u16,
                        self.height() as u16,
                        jpeg_encoder::ColorType::Rgb,
                    )
                    .map_err(|e| enc(&e))?;
                Ok(out)
            }
            ImageFormat::Webp => {
                let mut out = Vec::new();
                image_webp::WebPEncoder::new(&mut out)
                    .encode(
                        &self.rgba(),
                        self.width(),
                        self.height(),
                        image_webp::ColorType::Rgba8,
                    )
                    .map_err(|e| enc(&e))?;
                Ok(out)
            }
        }
    }
}
