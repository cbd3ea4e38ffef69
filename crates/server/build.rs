//! Builds the API reference's renderer into the binary when setup has
//! installed it (`swagger-ui-dist` from npm, pinned by
//! `assets/apidocs/package-lock.json`; `scripts/setup.sh` runs `npm ci`
//! there, so `make run` and `make test` always have it). Without it, `/docs`
//! serves the plain offline list of operations instead.

use std::path::Path;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(swagger_ui)");
    println!("cargo:rerun-if-changed=assets/apidocs");
    let dist = Path::new("assets/apidocs/node_modules/swagger-ui-dist");
    if ["swagger-ui-bundle.js", "swagger-ui.css"]
        .iter()
        .all(|f| dist.join(f).is_file())
    {
        println!("cargo:rustc-cfg=swagger_ui");
    }
}
