//! OpenAI's official Python package against `POST /v1/images/generations`:
//! images as bytes (`b64_json`) and as signed URLs, in the sizes asked
//! for, with OpenAI's rules per model (docs/compatibility.md).

use serde_json::Value;

use crate::helpers::{Backend, TestApp};
use crate::sdk::{assert_errors, run_python};

/// Arguments: the server and a write key. Reports each image's format and
/// size, read from its header.
const SCRIPT: &str = r#"
import base64, json, struct, sys, urllib.request
import openai

base, key = sys.argv[1:3]
client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)

def shape(data):
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        w, h = struct.unpack(">II", data[16:24])
        return {"format": "png", "width": w, "height": h}
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return {"format": "webp"}
    return {"format": data[:3].hex()}

report = {}
r = client.images.with_raw_response.generate(
    model="dall-e-2", prompt="two red apples on a table", n=2, size="256x256",
    response_format="b64_json", quality="standard")
images = r.parse()
report["b64"] = [shape(base64.b64decode(d.b64_json)) for d in images.data]
report["b64_job"] = r.headers.get("x-job-id")
report["ignored"] = r.headers.get("x-mediagen-ignored")
report["created"] = images.created

images = client.images.generate(model="dall-e-3", prompt="a cat under a tree", size="1024x1792")
report["url"] = [shape(urllib.request.urlopen(d.url).read()) for d in images.data]

images = client.images.generate(model="gpt-image-1", prompt="a blue car", size="auto",
                                output_format="webp")
report["gpt_image"] = [shape(base64.b64decode(d.b64_json)) for d in images.data]

def draw(**kw):
    args = {"model": "dall-e-2", "prompt": "a dog", "size": "256x256"}
    args.update(kw)
    return lambda: client.images.generate(**args)

report["errors"] = {
    "size": fails(draw(size="1792x1024")),
    "n": fails(draw(model="dall-e-3", size="1024x1024", n=2)),
    "many": fails(draw(n=5)),
    "format": fails(draw(response_format="png")),
    "gpt_format": fails(draw(model="gpt-image-1", size="auto", response_format="url")),
    "prompt": fails(draw(prompt="zzzz qqqq")),
}
print(json.dumps(report))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openais_python_package_generates_images() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.sync_wait_seconds = 1.0).await;
    let (_, key) = app.account(10_000, "write").await;
    let dir = tempfile::tempdir().unwrap();
    let report = run_python(SCRIPT, dir.path(), vec![app.addr.clone(), key.clone()]).await;

    let png = |w: u32, h: u32| serde_json::json!({"format": "png", "width": w, "height": h});
    assert_eq!(
        report["b64"],
        Value::Array(vec![png(256, 256); 2]),
        "{report}"
    );
    assert_eq!(
        report["url"],
        Value::Array(vec![png(1024, 1792)]),
        "{report}"
    );
    assert_eq!(report["gpt_image"][0]["format"], "webp", "{report}");
    assert_eq!(report["ignored"], "quality", "{report}");

    // An image job of the account, priced as ours (per image per started
    // megapixel), made when the request was.
    let id = report["b64_job"].as_str().unwrap();
    let job: Value = app
        .get(&format!("/v1/jobs/{id}"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&job["kind"], &job["status"]),
        (&"image".into(), &"completed".into())
    );
    assert_eq!(
        job["result"]["images"].as_array().unwrap().len(),
        2,
        "{job}"
    );
    let created = report["created"].as_i64().unwrap();
    let now = mediagen_core::time::now_ms() / 1000;
    assert!((now - created).abs() < 600, "{created}");

    assert_errors(
        &report["errors"],
        &[
            (
                "size",
                "UnprocessableEntityError",
                422,
                "invalid_request_error",
                "size",
            ),
            (
                "n",
                "UnprocessableEntityError",
                422,
                "invalid_request_error",
                "n",
            ),
            ("many", "BadRequestError", 400, "invalid_request_error", "n"),
            (
                "format",
                "BadRequestError",
                400,
                "invalid_request_error",
                "response_format",
            ),
            (
                "gpt_format",
                "UnprocessableEntityError",
                422,
                "invalid_request_error",
                "response_format",
            ),
            (
                "prompt",
                "UnprocessableEntityError",
                422,
                "invalid_request_error",
                "",
            ),
        ],
    );
}
