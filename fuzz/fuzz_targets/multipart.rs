//! Multipart bodies as clients send them, through the server's own form
//! reader: any body is read or refused with an API error, and what is read
//! keeps within the limits.
#![no_main]

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Request};
use libfuzzer_sys::fuzz_target;
use mediagen_http::{safe_filename, FormLimits, MultipartForm};

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    runtime.block_on(async {
        let req = Request::builder()
            .method("POST")
            .header("content-type", "multipart/form-data; boundary=BOUNDARY")
            .body(Body::from(data.to_vec()))
            .unwrap();
        let Ok(multipart) = Multipart::from_request(req, &()).await else {
            return;
        };
        let limits = FormLimits {
            body: 4096,
            idle: Duration::from_secs(5),
            total: Duration::from_secs(5),
        };
        if let Ok(form) = MultipartForm::read(multipart, &limits, tmp.path()).await {
            assert!(form.fields.len() + form.files.len() <= 64);
            let text: usize = form.fields.values().map(String::len).sum();
            assert!(text <= 256 * 1024);
            for uploads in form.files.values() {
                for u in uploads {
                    assert!(u.size <= 4096);
                    assert!(!u.filename.contains('/') && !u.filename.is_empty());
                    let _ = u.is_text();
                }
            }
        }
    });
    let name = safe_filename(&String::from_utf8_lossy(data));
    assert!(!name.is_empty() && !name.contains('/') && !name.contains('\\'));
    assert!(!name.starts_with('.') && !name.chars().any(char::is_control));
});
