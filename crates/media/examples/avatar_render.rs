//! Renders the built-in avatars into a folder and times it:
//! `cargo run --release --example avatar_render -- OUT_DIR`.

use std::time::Instant;

use mediagen_media::avatar::{ensure_rendered, CATALOG};

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/avatars".into());
    let t = Instant::now();
    for look in CATALOG {
        ensure_rendered(std::path::Path::new(&out), look).expect("render");
    }
    println!(
        "{} avatars in {:.2} s",
        CATALOG.len(),
        t.elapsed().as_secs_f64()
    );
}
