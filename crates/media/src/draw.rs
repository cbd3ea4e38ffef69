//! Drawing helpers shared by the image and avatar renderers (tiny-skia).

use resvg::tiny_skia::{
    Color, GradientStop, LinearGradient, Paint, Pixmap, Point, Rect, SpreadMode, Transform,
};

pub fn rgb(c: [u8; 3]) -> Color {
    Color::from_rgba8(c[0], c[1], c[2], 255)
}

/// An anti-aliased solid paint.
pub fn solid(c: [u8; 3]) -> Paint<'static> {
    let mut p = Paint::default();
    p.set_color(rgb(c));
    p.anti_alias = true;
    p
}

/// A vertical gradient over `[y0, y1)`.
pub fn gradient(pm: &mut Pixmap, y0: f32, y1: f32, stops: &[(f32, [u8; 3])]) {
    let w = pm.width() as f32;
    let stops = stops
        .iter()
        .map(|&(p, c)| GradientStop::new(p, rgb(c)))
        .collect();
    let Some(shader) = LinearGradient::new(
        Point::from_xy(0.0, y0),
        Point::from_xy(0.0, y1.max(y0 + 1.0)),
        stops,
        SpreadMode::Pad,
        Transform::identity(),
    ) else {
        return;
    };
    let paint = Paint {
        shader,
        ..Paint::default()
    };
    if let Some(r) = Rect::from_xywh(0.0, y0, w, (y1 - y0).max(1.0)) {
        pm.fill_rect(r, &paint, Transform::identity(), None);
    }
}
