//! Expands a clip: `expand <input> <seconds> <mode> <output.mp4>`; prints
//! the plan's jumps and seam score and the time each stage took.

use std::path::Path;
use std::time::Instant;

use mediagen_media::expand::{
    plan_seamless, plan_simple, render, seam_score, thumbnails, Mode, Output,
};
use mediagen_media::video::{inspect, Container};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--score") {
        // `expand --score <source> <video>...`: measured on decoded frames,
        // each video's largest frame-to-frame step against the source's, and
        // its largest jolt (second difference) in units of the source's mean
        // step (the seam score's measure, over every frame).
        let source = grey(Path::new(&args[2]));
        let steps: Vec<f64> = source.windows(2).map(|w| rms(&w[0], &w[1], None)).collect();
        let (largest, mean) = (
            steps.iter().copied().fold(0.0, f64::max),
            steps.iter().sum::<f64>() / steps.len() as f64,
        );
        for p in &args[3..] {
            let v = grey(Path::new(p));
            let step = v
                .windows(2)
                .map(|w| rms(&w[0], &w[1], None))
                .fold(0.0, f64::max);
            let jolt = v
                .windows(3)
                .map(|w| rms(&w[0], &w[1], Some(&w[2])))
                .fold(0.0, f64::max);
            println!(
                "{p}: frames={} step_ratio={:.2} jolt={:.2}",
                v.len(),
                step / largest,
                jolt / mean
            );
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
    let scratch = std::env::temp_dir().join(format!("expand-{}.yuv", std::process::id()));
    let cache = (std::env::var_os("NO_CACHE").is_none()).then_some(scratch.as_path());
    let thumbs = thumbnails(input, &info, cache).expect("thumbnails");
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
    render(input, &info, thumbs.len(), &plan, cache, &out, &|| false).expect("render");
    let _ = std::fs::remove_file(&scratch);
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

/// Every frame as 48×48 grey.
fn grey(path: &Path) -> Vec<Vec<u8>> {
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args([
            "-vf",
            "scale=48:48:flags=area,format=gray",
            "-f",
            "rawvideo",
            "-",
        ])
        .output()
        .expect("ffmpeg");
    out.stdout
        .chunks_exact(48 * 48)
        .map(<[u8]>::to_vec)
        .collect()
}

/// RMS of `b - a` (a step), or of `c - 2b + a` (a jolt) with `c`.
fn rms(a: &[u8], b: &[u8], c: Option<&Vec<u8>>) -> f64 {
    let sum: f64 = (0..a.len())
        .map(|i| {
            let (a, b) = (a[i] as f64, b[i] as f64);
            let d = match c {
                None => b - a,
                Some(c) => c[i] as f64 - 2.0 * b + a,
            };
            d * d
        })
        .sum();
    (sum / a.len() as f64).sqrt()
}
