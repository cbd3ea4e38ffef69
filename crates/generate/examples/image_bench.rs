//! Renders a prompt with the embedded image engine and times it:
//! `cargo run --release --example image_bench -- MODELS "prompt" SIZE OUT.png`.

use std::path::Path;
use std::time::Instant;

use mediagen_generate::image::icons::Icons;
use mediagen_generate::image::{render, scene, ImageFormat};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let models = args.get(1).map_or("models", String::as_str);
    let prompt = args.get(2).map_or(
        "a cat wearing a red hat on a beach at sunset",
        String::as_str,
    );
    let size: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let icons =
        Icons::discover(Path::new(models)).expect("emoji icons installed (scripts/models.sh)");
    let t = Instant::now();
    let scene = scene::parse(prompt, &icons, None);
    let picture = render(&scene, size, size, 1).expect("render");
    let png = picture.encode(ImageFormat::Png).expect("png");
    let took = t.elapsed().as_secs_f64();
    println!(
        "{prompt:?} {size}x{size}: {took:.3} s (parse, render, PNG), {} bytes",
        png.len()
    );
    for p in &picture.placed {
        println!("  {} {} {:?} {:?}", p.object, p.icon, p.bbox, p.color);
    }
    for r in &picture.relations {
        println!("  {r:?}");
    }
    println!("  ignored: {:?}", scene.ignored);
    if let Some(out) = args.get(4) {
        std::fs::write(out, png).expect("write");
    }
}
