//! Image generation from text, embedded engine: the prompt is read into a
//! scene ([`scene`], words in [`words`]: objects with colours, sizes,
//! counts, relations, a setting, a time of day, a style); the background is
//! painted ([`backdrop`]); the objects' boxes are solved from their
//! relations, classes and sizes ([`layout`], [`classes`]); the objects are
//! drawn from the Twemoji icon set and our own drawings ([`icons`]) with
//! resvg, tinted, and a style filter is applied. Everything drawn is
//! reported with its box, and every relation with whether the picture
//! honours it ([`check`]).

pub mod backdrop;
pub mod check;
pub mod classes;
pub mod icons;
pub mod layout;
pub mod scene;
pub mod words;

use resvg::tiny_skia::{Pixmap, PixmapPaint, Transform};
use resvg::usvg;
use serde::Serialize;

use check::Checked;
use icons::Icon;
use layout::{Canvas, Item, Shape};
pub use mediagen_core::format::ImageFormat;
use mediagen_core::rng::Rng;
use scene::{Relation, Scene, Style};

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
    /// The icon used (its emoji, none for our own drawings, and its name).
    pub emoji: Option<String>,
    pub icon: String,
    pub bbox: BBox,
    pub color: Option<&'static str>,
    pub relation: Option<Relation>,
}

/// A rendered picture (premultiplied RGBA, as tiny-skia keeps it).
pub struct Picture {
    pixmap: Pixmap,
    /// What was drawn, back to front.
    pub placed: Vec<Placed>,
    /// Every stated relation and whether the picture honours it.
    pub relations: Vec<Checked>,
    /// Where standing objects' feet are, pixels from the top.
    pub ground_line: u32,
    /// How each placed object was drawn: its object, square size and
    /// position.
    draws: Vec<(usize, u32, i32, i32)>,
}

/// A box holds the pixels at least this opaque (of 255): fainter ones are
/// the anti-aliased fringe.
pub const OPAQUE: u8 = 24;

/// An icon's SVG, read and parsed (once per object and picture).
fn icon_tree(icon: &Icon) -> Result<usvg::Tree, ImageError> {
    let err = |e: String| ImageError::Icon(icon.name.clone(), e);
    let data = icon.svg().map_err(err)?;
    usvg::Tree::from_data(&data, &usvg::Options::default()).map_err(|e| err(e.to_string()))
}

/// Draws an icon into a `size`-pixel square, tinted to `color` when asked
/// (the icon's shading kept: its lightness scales the colour).
fn icon_pixmap(tree: &usvg::Tree, size: u32, color: Option<[u8; 3]>) -> Result<Pixmap, ImageError> {
    let mut pm = Pixmap::new(size, size).ok_or(ImageError::Size)?;
    let s = size as f32 / tree.size().width().max(tree.size().height());
    resvg::render(tree, Transform::from_scale(s, s), &mut pm.as_mut());
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

/// Draws `icon` onto `pm` with its top left corner at (`left`, `top`).
fn paste(pm: &mut Pixmap, icon: &Pixmap, left: i32, top: i32) {
    pm.draw_pixmap(
        left,
        top,
        icon.as_ref(),
        &PixmapPaint::default(),
        Transform::identity(),
        None,
    );
}

/// A box as its corners: left, top, right, bottom (exclusive).
type Corners = (u32, u32, u32, u32);

/// The box of a pixmap's pixels at least [`OPAQUE`], `None` when empty.
pub fn opaque_box(pm: &Pixmap) -> Option<Corners> {
    let (w, h) = (pm.width(), pm.height());
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for y in 0..h {
        for x in 0..w {
            if pm.pixel(x, y).is_some_and(|p| p.alpha() >= OPAQUE) {
                (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x + 1), y1.max(y + 1));
            }
        }
    }
    (x0 < x1).then_some((x0, y0, x1, y1))
}

/// An icon's drawing inside its square, from a small rendering.
fn shape(tree: &usvg::Tree) -> Result<Shape, ImageError> {
    const N: u32 = 64;
    let pm = icon_pixmap(tree, N, None)?;
    let (x0, y0, x1, y1) = opaque_box(&pm).unwrap_or((0, 0, N, N));
    let f = |v: u32| v as f32 / N as f32;
    Ok(Shape {
        x0: f(x0),
        y0: f(y0),
        x1: f(x1),
        y1: f(y1),
        head: head(&pm),
    })
}

/// Renders a scene at `width`×`height`; the same scene and seed give the
/// same pixels.
pub fn render(scene: &Scene, width: u32, height: u32, seed: u64) -> Result<Picture, ImageError> {
    let mut pm = Pixmap::new(width, height).ok_or(ImageError::Size)?;
    let mut rng = Rng::new(seed);
    let mut bg_rng = rng.fork();
    let lines = backdrop::paint(&mut pm, scene, &mut bg_rng);
    let canvas = Canvas {
        w: width as f32,
        h: height as f32,
        ground: lines.ground,
        far: lines.far,
    };
    let trees = scene
        .objects
        .iter()
        .map(|o| icon_tree(&o.icon))
        .collect::<Result<Vec<_>, _>>()?;
    let shapes = trees.iter().map(shape).collect::<Result<Vec<_>, _>>()?;
    let plan = layout::solve(scene, &shapes, canvas, |p| {
        scene
            .relations
            .iter()
            .filter(|s| check::holds(s, scene, &p.items, &canvas))
            .count()
    });
    let mut placed = Vec::with_capacity(plan.items.len());
    let mut drawn = Vec::with_capacity(plan.items.len());
    let mut draws = Vec::with_capacity(plan.items.len());
    // Copies of an object are drawn one after another: the last icon drawn
    // (and its opaque box) is kept for the next copy, and only it.
    let mut last: Option<((usize, u32), Pixmap, Corners)> = None;
    // An icon's square is at most twice the canvas's longer side.
    let largest = 2.0 * width.max(height) as f32;
    for it in &plan.items {
        let o = &scene.objects[it.object];
        let s = &shapes[it.object];
        let square = (it.h / (s.y1 - s.y0).max(0.01)).clamp(4.0, largest);
        let size = square.round() as u32;
        let (left, top) = (
            (it.left() - s.x0 * square).round() as i32,
            (it.top() - s.y0 * square).round() as i32,
        );
        if last
            .as_ref()
            .is_none_or(|(key, ..)| *key != (it.object, size))
        {
            let icon = icon_pixmap(&trees[it.object], size, o.color.map(|c| c.1))?;
            let opaque = opaque_box(&icon).unwrap_or((0, 0, size, size));
            last = Some(((it.object, size), icon, opaque));
        }
        let Some((_, icon, (x0, y0, x1, y1))) = &last else {
            continue;
        };
        paste(&mut pm, icon, left, top);
        // The box of the pixels drawn, within the canvas.
        let (x0, y0, x1, y1) = (*x0, *y0, *x1, *y1);
        let clip = |v: i32, max: u32| v.clamp(0, max as i32) as u32;
        let (bx0, by0) = (clip(left + x0 as i32, width), clip(top + y0 as i32, height));
        let (bx1, by1) = (clip(left + x1 as i32, width), clip(top + y1 as i32, height));
        let bbox = BBox {
            x: bx0,
            y: by0,
            width: bx1.saturating_sub(bx0),
            height: by1.saturating_sub(by0),
        };
        draws.push((it.object, size, left, top));
        drawn.push(Item {
            object: it.object,
            copy: it.copy,
            cx: bbox.x as f32 + bbox.width as f32 / 2.0,
            bottom: (bbox.y + bbox.height) as f32,
            w: bbox.width as f32,
            h: bbox.height as f32,
        });
        placed.push(Placed {
            object: o.word.clone(),
            emoji: o.icon.emoji.clone(),
            icon: o.icon.name.clone(),
            bbox,
            color: o.color.map(|c| c.0),
            relation: scene
                .relations
                .iter()
                .find(|s| s.moved() == it.object)
                .map(|s| s.relation),
        });
    }
    let relations = check::report(scene, &drawn, &canvas, &plan.conflicts);
    match scene.style {
        Style::Flat => {}
        Style::Pixel => pixelate(&mut pm),
        Style::Watercolor => watercolor(&mut pm, &mut rng),
    }
    Ok(Picture {
        pixmap: pm,
        placed,
        relations,
        ground_line: lines.ground.round() as u32,
        draws,
    })
}

/// Where a wearer's head is, as fractions of its icon's square: the middle
/// of the first row (from the top) whose opaque run is at least a fifth of
/// the width, so ears, tails and antennae are passed over.
fn head(pm: &Pixmap) -> (f32, f32) {
    let n = pm.width();
    for y in 0..pm.height() {
        let row: Vec<bool> = (0..n)
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
        if best * 5 >= n as usize {
            return (
                (best_start as f32 + best as f32 / 2.0) / n as f32,
                y as f32 / pm.height() as f32,
            );
        }
    }
    (0.5, 0.1)
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

    /// The `k`th placed object drawn alone on a transparent canvas of this
    /// picture's size, exactly as it was drawn here.
    pub fn layer(&self, scene: &Scene, k: usize) -> Result<Picture, ImageError> {
        let &(object, size, left, top) = self.draws.get(k).ok_or(ImageError::Size)?;
        let o = scene.objects.get(object).ok_or(ImageError::Size)?;
        let mut pixmap = Pixmap::new(self.width(), self.height()).ok_or(ImageError::Size)?;
        paste(
            &mut pixmap,
            &icon_pixmap(&icon_tree(&o.icon)?, size, o.color.map(|c| c.1))?,
            left,
            top,
        );
        Ok(Picture {
            pixmap,
            placed: Vec::new(),
            relations: Vec::new(),
            ground_line: self.ground_line,
            draws: Vec::new(),
        })
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
            relations: Vec::new(),
            ground_line: height,
            draws: Vec::new(),
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
