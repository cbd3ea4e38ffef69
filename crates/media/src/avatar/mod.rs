//! The built-in avatar catalog: original 2D presenters drawn by our own
//! renderer (tiny-skia), each an idle loop (breathing, blinks, a small head
//! motion) whose every motion repeats exactly over the clip, so the clip
//! loops seamlessly. Rendered once into the models directory as H.264 mp4
//! with a PNG poster.

use std::f32::consts::PI;
use std::path::{Path, PathBuf};
use std::time::Duration;

use resvg::tiny_skia::{FillRule, PathBuilder, Pixmap, Rect, Stroke, Transform};

use crate::draw::{gradient, solid};
use crate::media::{ffmpeg, MediaError};
use crate::process::run;

/// Side of the rendered square, pixels.
pub const SIZE: u32 = 512;
pub const FPS: u32 = 25;
/// Length of the idle loop, seconds.
pub const SECONDS: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    Oval,
    Round,
    Square,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hair {
    Short,
    Long,
    Bun,
    Curly,
    Bald,
    Bob,
}

/// A presenter's look and catalog record.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub gender: &'static str,
    pub labels: &'static [&'static str],
    pub face: Face,
    pub skin: [u8; 3],
    pub hair: Hair,
    pub hair_color: [u8; 3],
    pub shirt: [u8; 3],
    pub background: [[u8; 3]; 2],
    /// Seconds into the loop of the two blinks.
    pub blinks: [f32; 2],
    pub glasses: bool,
}

macro_rules! looks {
    ($( $id:literal, $name:literal, $gender:literal, $face:ident, $skin:expr, $hair:ident, $hc:expr, $shirt:expr, $bg:expr, $glasses:literal, [$($label:literal),*], $desc:literal; )*) => {
        /// Every built-in presenter.
        pub static CATALOG: &[Look] = &[ $( Look {
            id: $id, name: $name, description: $desc, gender: $gender, labels: &[$($label),*],
            face: Face::$face, skin: $skin, hair: Hair::$hair, hair_color: $hc, shirt: $shirt,
            background: $bg, blinks: [0.9, 2.7], glasses: $glasses,
        }, )* ];
    };
}

looks! {
    "av_ada", "Ada", "female", Oval, [241, 194, 167], Long, [60, 40, 30], [40, 90, 160], [[225, 235, 245], [180, 200, 225]], false, ["business", "friendly", "news"], "A friendly presenter in a blue blouse, long dark hair, office-blue backdrop.";
    "av_ben", "Ben", "male", Square, [224, 172, 105], Short, [40, 30, 25], [70, 70, 75], [[235, 230, 220], [200, 190, 170]], true, ["business", "tech", "glasses"], "A calm presenter with glasses and a charcoal shirt, warm studio backdrop.";
    "av_chloe", "Chloe", "female", Round, [255, 219, 186], Bun, [200, 150, 80], [220, 90, 110], [[250, 235, 240], [230, 190, 205]], false, ["lifestyle", "friendly", "education"], "A cheerful presenter with a blonde bun and a rose top.";
    "av_dev", "Dev", "male", Oval, [141, 85, 36], Curly, [25, 20, 20], [30, 130, 110], [[220, 240, 235], [170, 210, 200]], false, ["education", "tech", "casual"], "A relaxed presenter with curly hair and a teal shirt.";
    "av_emma", "Emma", "female", Oval, [198, 134, 66], Bob, [30, 25, 25], [245, 245, 240], [[40, 50, 70], [20, 25, 40]], false, ["news", "formal", "dark"], "A news anchor with a black bob and a white blouse on a dark set.";
    "av_farid", "Farid", "male", Square, [180, 120, 80], Bald, [0, 0, 0], [120, 40, 50], [[240, 230, 215], [215, 195, 170]], true, ["business", "formal", "glasses"], "A senior presenter with glasses and a burgundy jacket.";
    "av_grace", "Grace", "female", Round, [92, 58, 33], Curly, [20, 15, 15], [250, 190, 50], [[255, 245, 220], [250, 220, 160]], false, ["lifestyle", "friendly", "marketing"], "An upbeat presenter with curly hair and a sunflower-yellow top.";
    "av_hiro", "Hiro", "male", Oval, [240, 200, 160], Short, [15, 15, 20], [50, 60, 120], [[230, 230, 240], [190, 195, 220]], false, ["tech", "education", "casual"], "A young presenter with short black hair and an indigo shirt.";
    "av_ines", "Ines", "female", Oval, [224, 172, 105], Long, [120, 50, 30], [90, 140, 60], [[235, 245, 225], [200, 225, 185]], true, ["education", "friendly", "glasses"], "A teacher with auburn hair, glasses and a green cardigan.";
    "av_jon", "Jon", "male", Round, [255, 224, 196], Short, [170, 110, 60], [200, 100, 40], [[250, 240, 230], [240, 210, 180]], false, ["marketing", "casual", "friendly"], "A lively presenter with ginger hair and an orange hoodie.";
    "av_kai", "Kai", "neutral", Square, [150, 100, 60], Bob, [90, 60, 140], [35, 35, 40], [[235, 225, 245], [200, 185, 225]], false, ["creative", "casual", "tech"], "A creative presenter with violet hair and a black tee.";
    "av_lena", "Lena", "female", Round, [250, 210, 180], Bun, [80, 55, 35], [60, 70, 90], [[245, 245, 245], [210, 215, 220]], true, ["business", "formal", "glasses"], "A consultant with a brown bun, glasses and a slate blazer.";
}

fn darker(c: [u8; 3], k: f32) -> [u8; 3] {
    c.map(|v| (v as f32 * k) as u8)
}

fn ellipse(pm: &mut Pixmap, cx: f32, cy: f32, rx: f32, ry: f32, c: [u8; 3], t: Transform) {
    if let Some(r) = Rect::from_xywh(cx - rx, cy - ry, rx * 2.0, ry * 2.0) {
        if let Some(path) = PathBuilder::from_oval(r) {
            pm.fill_path(&path, &solid(c), FillRule::Winding, t, None);
        }
    }
}

/// A rounded rectangle `[x, y, width, height]` with corner radius `r`.
fn rounded(pm: &mut Pixmap, b: [f32; 4], r: f32, c: [u8; 3], t: Transform) {
    let [x, y, w, h] = b;
    let mut pb = PathBuilder::new();
    pb.move_to(x + r, y);
    pb.line_to(x + w - r, y);
    pb.quad_to(x + w, y, x + w, y + r);
    pb.line_to(x + w, y + h - r);
    pb.quad_to(x + w, y + h, x + w - r, y + h);
    pb.line_to(x + r, y + h);
    pb.quad_to(x, y + h, x, y + h - r);
    pb.line_to(x, y + r);
    pb.quad_to(x, y, x + r, y);
    pb.close();
    if let Some(path) = pb.finish() {
        pm.fill_path(&path, &solid(c), FillRule::Winding, t, None);
    }
}

/// The motions at `t` seconds: all periodic over the loop.
struct Pose {
    breath: f32,
    sway: f32,
    nod: f32,
    /// 1 open, 0 shut.
    eyes: f32,
    /// 0 shut, 1 wide open (talking; 0 in the idle loop).
    mouth: f32,
}

fn pose(look: &Look, t: f32, mouth: f32) -> Pose {
    let loop_s = SECONDS as f32;
    let phase = |period: f32| (2.0 * PI * t / period).sin();
    let blink = look
        .blinks
        .iter()
        .map(|&b| {
            let d = ((t - b).rem_euclid(loop_s)).min((b - t).rem_euclid(loop_s));
            (d / 0.08).min(1.0)
        })
        .fold(1.0f32, f32::min);
    Pose {
        breath: phase(loop_s),
        sway: phase(loop_s) * 0.6 + phase(loop_s / 2.0) * 0.4,
        nod: phase(loop_s / 2.0),
        eyes: blink,
        mouth,
    }
}

/// One frame of `look` at `t` seconds, mouth opening `mouth` (0–1).
pub fn frame(look: &Look, t: f32, mouth: f32) -> Pixmap {
    let s = SIZE as f32;
    let mut pm = Pixmap::new(SIZE, SIZE).expect("a 512-pixel canvas");
    let p = pose(look, t, mouth);
    // Backdrop: a soft vertical gradient.
    gradient(
        &mut pm,
        0.0,
        s,
        &[(0.0, look.background[0]), (1.0, look.background[1])],
    );
    let id = Transform::identity();
    // Shoulders and chest rise and widen a little with each breath.
    let lift = p.breath * s * 0.006;
    rounded(
        &mut pm,
        [s * 0.14, s * 0.74 - lift, s * 0.72, s * 0.4],
        s * 0.12,
        look.shirt,
        id,
    );
    rounded(
        &mut pm,
        [s * 0.42, s * 0.74 - lift, s * 0.16, s * 0.06],
        s * 0.03,
        darker(look.shirt, 0.8),
        id,
    );
    // Neck.
    rounded(
        &mut pm,
        [s * 0.44, s * 0.58 - lift, s * 0.12, s * 0.2],
        s * 0.04,
        darker(look.skin, 0.9),
        id,
    );
    // The head sways and nods about the neck.
    let (hx, hy) = (
        s * 0.5 + p.sway * s * 0.008,
        s * 0.42 - lift + p.nod * s * 0.004,
    );
    let head = Transform::from_rotate_at(p.sway * 1.6, hx, hy + s * 0.15);
    let (rx, ry) = match look.face {
        Face::Oval => (s * 0.15, s * 0.19),
        Face::Round => (s * 0.17, s * 0.18),
        Face::Square => (s * 0.16, s * 0.18),
    };
    // Hair behind the head.
    match look.hair {
        Hair::Long => rounded(
            &mut pm,
            [hx - rx * 1.2, hy - ry * 1.05, rx * 2.4, ry * 2.3],
            rx * 0.9,
            look.hair_color,
            head,
        ),
        Hair::Bob => rounded(
            &mut pm,
            [hx - rx * 1.2, hy - ry * 1.1, rx * 2.4, ry * 1.75],
            rx * 0.8,
            look.hair_color,
            head,
        ),
        Hair::Bun => ellipse(
            &mut pm,
            hx,
            hy - ry * 1.15,
            rx * 0.45,
            ry * 0.35,
            look.hair_color,
            head,
        ),
        _ => {}
    }
    // Ears, face.
    ellipse(
        &mut pm,
        hx - rx * 0.98,
        hy + ry * 0.05,
        rx * 0.16,
        ry * 0.16,
        darker(look.skin, 0.92),
        head,
    );
    ellipse(
        &mut pm,
        hx + rx * 0.98,
        hy + ry * 0.05,
        rx * 0.16,
        ry * 0.16,
        darker(look.skin, 0.92),
        head,
    );
    match look.face {
        Face::Square => rounded(
            &mut pm,
            [hx - rx, hy - ry, rx * 2.0, ry * 2.0],
            rx * 0.45,
            look.skin,
            head,
        ),
        _ => ellipse(&mut pm, hx, hy, rx, ry, look.skin, head),
    }
    // Hair on top.
    match look.hair {
        Hair::Short | Hair::Bun | Hair::Long | Hair::Bob => ellipse(
            &mut pm,
            hx,
            hy - ry * 0.72,
            rx * 1.02,
            ry * 0.42,
            look.hair_color,
            head,
        ),
        Hair::Curly => {
            for k in 0..9 {
                let a = PI * (k as f32 / 8.0);
                ellipse(
                    &mut pm,
                    hx - a.cos() * rx * 0.95,
                    hy - ry * 0.55 - a.sin() * ry * 0.45,
                    rx * 0.3,
                    ry * 0.25,
                    look.hair_color,
                    head,
                );
            }
        }
        Hair::Bald => {}
    }
    // Eyes (blinking), brows, nose, mouth.
    let ey = hy - ry * 0.05;
    for side in [-1.0f32, 1.0] {
        let ex = hx + side * rx * 0.4;
        let open = p.eyes.max(0.08);
        ellipse(
            &mut pm,
            ex,
            ey,
            rx * 0.17,
            ry * 0.1 * open,
            [250, 250, 250],
            head,
        );
        if p.eyes > 0.3 {
            ellipse(
                &mut pm,
                ex,
                ey,
                rx * 0.08,
                ry * 0.07 * open,
                [45, 35, 30],
                head,
            );
        }
        rounded(
            &mut pm,
            [ex - rx * 0.2, ey - ry * 0.24, rx * 0.4, ry * 0.05],
            ry * 0.02,
            darker(look.hair_color.map(|c| c.max(40)), 0.9),
            head,
        );
        if look.glasses {
            let mut pb = PathBuilder::new();
            pb.push_circle(ex, ey, rx * 0.26);
            if let Some(path) = pb.finish() {
                let stroke = Stroke {
                    width: s * 0.008,
                    ..Stroke::default()
                };
                pm.stroke_path(&path, &solid([30, 30, 35]), &stroke, head, None);
            }
        }
    }
    ellipse(
        &mut pm,
        hx,
        hy + ry * 0.2,
        rx * 0.08,
        ry * 0.1,
        darker(look.skin, 0.85),
        head,
    );
    let my = hy + ry * 0.5;
    let open = p.mouth.clamp(0.0, 1.0);
    ellipse(
        &mut pm,
        hx,
        my,
        rx * (0.3 - 0.05 * open),
        ry * (0.05 + 0.18 * open),
        [150, 60, 60],
        head,
    );
    if open < 0.2 {
        // A closed smile: the lower lip's highlight.
        ellipse(
            &mut pm,
            hx,
            my + ry * 0.02,
            rx * 0.22,
            ry * 0.025,
            [200, 110, 100],
            head,
        );
    }
    pm
}

/// Where a look's files go: `<dir>/<id>.mp4` and `<dir>/<id>.png`.
pub fn files(dir: &Path, look: &Look) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{}.mp4", look.id)),
        dir.join(format!("{}.png", look.id)),
    )
}

/// Renders `look`'s idle loop and poster into `dir` unless they are there;
/// written under temporary names and renamed, so concurrent starts are safe.
pub fn ensure_rendered(dir: &Path, look: &Look) -> Result<(), MediaError> {
    let (video, poster) = files(dir, look);
    if video.exists() && poster.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    let nonce: u32 = rand::random();
    let (tmp_video, tmp_poster) = (
        dir.join(format!(".{}.{nonce:08x}.mp4", look.id)),
        dir.join(format!(".{}.{nonce:08x}.png", look.id)),
    );
    let frames = FPS * SECONDS;
    let mut raw = Vec::with_capacity((SIZE * SIZE * 4 * frames) as usize);
    for i in 0..frames {
        let pm = frame(look, i as f32 / FPS as f32, 0.0);
        if i == 0 {
            pm.save_png(&tmp_poster)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        raw.extend_from_slice(pm.data());
    }
    let mut cmd = ffmpeg();
    cmd.args(["-f", "rawvideo", "-pix_fmt", "rgba", "-s"])
        .arg(format!("{SIZE}x{SIZE}"))
        .args(["-r", &FPS.to_string(), "-i", "pipe:0"])
        .args([
            "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p",
        ])
        .args(["-movflags", "+faststart", "-f", "mp4"])
        .arg(&tmp_video);
    run(cmd, &raw, Duration::from_secs(120))?;
    std::fs::rename(&tmp_poster, &poster)?;
    std::fs::rename(&tmp_video, &video)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_are_distinct_and_loops_close() {
        assert!(CATALOG.len() >= 12);
        let mut ids: Vec<_> = CATALOG.iter().map(|l| l.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), CATALOG.len());
        for look in CATALOG {
            // The frame after the last is the first: the loop is seamless.
            let first = frame(look, 0.0, 0.0);
            let wrap = frame(look, SECONDS as f32, 0.0);
            assert_eq!(first.data(), wrap.data(), "{}", look.id);
            // It moves: breathing and sway change the picture.
            assert_ne!(first.data(), frame(look, 1.0, 0.0).data(), "{}", look.id);
        }
        // Blinks shut the eyes.
        let look = &CATALOG[0];
        assert_ne!(
            frame(look, look.blinks[0], 0.0).data(),
            frame(look, look.blinks[0] + 0.3, 0.0).data()
        );
    }
}
