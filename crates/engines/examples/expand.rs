//! Expands a clip: `expand <input> <seconds> <mode> <output.mp4>`; prints
//! the plan's jumps and seam score and the time each stage took.

use std::path::Path;
use std::time::Instant;

use mediagen_engines::expand::{
    plan_seamless, plan_simple, render, seam_score, thumbnails, Mode, Output,
};
use mediagen_engines::video::{inspect, Container};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--steps") {
        // `expand --steps <video>...`: the largest frame-to-frame step of each.
        for p in &args[2..] {
            println!("{p}: {:.2}", largest_step(Path::new(p)));
        }
        return;
    }
    let [_, input, seconds, mode, output] = &args[..] else {
        eprintln!("usage: expand <input> <seconds> <mode> <output.mp4>");
        std::process::exit(2);
    };
    let input = Path::new(input);
    let seconds: f64 = seconds.parse().expect("seconds");
    let mode = Mode::parse(mode).expect("mode");
    let t0 = Instant::now();
    let info = inspect(input).expect("probe").expect("a video");
    let thumbs = thumbnails(input, &info).expect("thumbnails");
    let t1 = Instant::now();
    let total = (seconds * info.fps).round() as usize;
    let plan = match mode {
        Mode::Seamless => plan_seamless(&thumbs, info.fps, total, 1),
        m => plan_simple(m, thumbs.len(), total),
    };
    let t2 = Instant::now();
    let out = Output {
        container: Container::Mp4,
        path: Path::new(output),
        audio: None,
    };
    render(input, &info, thumbs.len(), &plan, &out, &|| false).expect("render");
    let t3 = Instant::now();
    println!(
        "frames={} jumps={} seam={} analyse={:.3}s plan={:.3}s render={:.3}s total={:.3}s",
        plan.frames(),
        plan.jumps,
        seam_score(&thumbs, &plan),
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t3 - t2).as_secs_f64(),
        (t3 - t0).as_secs_f64()
    );
}

/// The largest mean absolute difference between consecutive frames (grey,
/// 64×64), in 8-bit levels.
fn largest_step(path: &Path) -> f64 {
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-vf", "scale=64:64,format=gray", "-f", "rawvideo", "-"])
        .output()
        .expect("ffmpeg");
    let frames: Vec<&[u8]> = out.stdout.chunks_exact(64 * 64).collect();
    frames
        .windows(2)
        .map(|w| {
            w[0].iter()
                .zip(w[1])
                .map(|(&a, &b)| a.abs_diff(b) as f64)
                .sum::<f64>()
                / 4096.0
        })
        .fold(0.0, f64::max)
}
