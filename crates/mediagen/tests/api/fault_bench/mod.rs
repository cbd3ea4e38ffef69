//! The fault bench (`scripts/faults.sh`, run by `make test-long`): the
//! scale-out layout (two `mediagen serve` processes without workers, three
//! `mediagen worker` processes by kind, a PostgreSQL of the test's own, an
//! S3 bucket behind a proxy that can fail) takes a mixed workload of 300
//! jobs (speech queued, waited for and streamed; transcriptions of uploads
//! and stored files; trims; images; sounds; every job telling a local
//! webhook receiver when it ends) while faults are injected one at a time
//! and then together: PostgreSQL restarted twice, the S3 endpoint
//! unreachable for 60 s and then answering 503 to a third of requests, the
//! workers' scratch disk full for 30 s, API processes SIGKILLed during an
//! upload and during a streamed response, ten clients reading streams at
//! 1 KB/s. Then it checks that nothing was lost and prints a table.

mod receiver;
mod s3_proxy;
mod scratch_disk;
mod workload;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, ErrorCode, JobId};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::faults::{free_port, OwnPostgres};
use crate::helpers::{assert_ledger_adds_up, Backend, TestApp};
use crate::scale_out::{video, Deployment};
use crate::storage::{bucket, endpoint, local_files, on_bucket};
use receiver::Receiver;
use s3_proxy::{S3Mode, S3Proxy};
use scratch_disk::ScratchDisk;
use workload::{nth, Ask, Client, Inputs, Submitted, Tally};

const JOBS: usize = 300;
/// One job every 0.9 s: the workload lasts 270 s, through every fault.
const SPACING: Duration = Duration::from_millis(900);
const WORKER_KINDS: [&str; 3] = ["tts", "stt", "video.trim,image,sound"];
/// What a slow client asks for: about 10 s of speech as 16 kHz PCM
/// (320 KB), more than the sockets between it and the server hold.
const LONG_TEXT: &str = "A slow client reads this answer at a thousand bytes a second, \
    while the database restarts underneath the stream and the pieces wait for it.";

/// A fault injected: when (seconds from the start), for how long, and
/// when it ended (ms since the epoch, as the database's job times).
struct Fault {
    name: String,
    began: f64,
    lasted: f64,
    ended_ms: i64,
}

impl Fault {
    /// A fault that began at `began` (the bench began at `start`) and ends
    /// now.
    fn ends_now(name: impl Into<String>, start: Instant, began: Instant) -> Self {
        Self {
            name: name.into(),
            began: began.duration_since(start).as_secs_f64(),
            lasted: began.elapsed().as_secs_f64(),
            ended_ms: now_ms(),
        }
    }
}

/// The processes of the deployment, each with its own data directory.
struct Processes {
    deployment: Deployment,
    apis: Vec<(Child, u16, tempfile::TempDir)>,
    workers: Vec<Child>,
}

impl Processes {
    async fn restart_api(&mut self, i: usize) {
        let (child, port, dir) = &mut self.apis[i];
        let _ = child.start_kill();
        let _ = child.wait().await;
        *child = self.deployment.api_on(dir.path(), *port).await.0;
    }

    fn api_url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.apis[i].1)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: run by `make test-long` through scripts/faults.sh"]
async fn nothing_is_lost_through_faults() {
    let pg = OwnPostgres::start_new();
    let s3 = S3Proxy::start(&endpoint()).await;
    let bucket = bucket(&endpoint()).await;
    let receiver = Receiver::start().await;
    let scratch = ScratchDisk::new();
    let (b, e, db) = (bucket.clone(), s3.url.clone(), pg.url());
    let app = TestApp::spawn_with(Backend::Sqlite, move |c| {
        c.database_url = db;
        c.workers = 0;
        on_bucket(c, &b, &e);
        // This process dispatches webhooks too.
        c.webhook_allow_private = true;
        c.max_concurrent_jobs = 10_000;
        c.rate_limit_per_minute = 1_000_000;
        c.rate_limit_per_hour = 10_000_000;
    })
    .await;

    // The deployment's settings are the defaults (30 s leases, three
    // attempts, 5 s backoff, 30 s of S3 retries) but for limits that would
    // refuse the bench's own load.
    let deployment = Deployment {
        database_url: pg.url(),
        bucket,
        endpoint: s3.url.clone(),
        settings: vec![
            ("MEDIAGEN_LEASE_SECONDS", "30".into()),
            ("MEDIAGEN_HEARTBEAT_SECONDS", "5".into()),
            ("MEDIAGEN_MAX_ATTEMPTS", "3".into()),
            ("MEDIAGEN_WEBHOOK_ALLOW_PRIVATE", "true".into()),
            ("MEDIAGEN_PREVIEWS_AT_START", "false".into()),
            ("MEDIAGEN_MAX_CONCURRENT_JOBS", "10000".into()),
            ("MEDIAGEN_RATE_LIMIT_PER_HOUR", "10000000".into()),
            (
                "MEDIAGEN_LOG",
                std::env::var("MEDIAGEN_FAULTS_LOG").unwrap_or_else(|_| "error".into()),
            ),
        ],
    };
    let mut apis = Vec::new();
    for _ in 0..2 {
        let (dir, port) = (tempfile::tempdir().unwrap(), free_port());
        let (child, _) = deployment.api_on(dir.path(), port).await;
        apis.push((child, port, dir));
    }
    let workers = WORKER_KINDS
        .iter()
        .enumerate()
        .map(|(i, kinds)| {
            let dir = scratch.path().join(format!("worker-{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            deployment.worker(&dir, kinds)
        })
        .collect();
    let mut procs = Processes {
        deployment,
        apis,
        workers,
    };
    wait_for_workers(&app).await;

    let (account, key) = app.account(1_000_000_000, "write").await;
    let inputs = Arc::new(inputs(&app, &key).await);
    let client = Client {
        http: reqwest::Client::new(),
        apis: vec![procs.api_url(0), procs.api_url(1)],
        key: key.clone(),
        tally: Arc::new(Mutex::new(Tally::default())),
    };
    let hook = receiver.url.clone();

    // The workload, and ten slow readers of streams.
    let start = Instant::now();
    let at = |s: f64| tokio::time::sleep_until((start + Duration::from_secs_f64(s)).into());
    let mut submissions: Vec<JoinHandle<Option<Submitted>>> = (0..JOBS)
        .map(|n| {
            let (client, inputs, hook) = (client.clone(), inputs.clone(), hook.clone());
            let due = start + SPACING * n as u32;
            tokio::spawn(async move {
                tokio::time::sleep_until(due.into()).await;
                let (label, ask) = nth(n, &inputs, &hook);
                client.submit(n, label, ask).await
            })
        })
        .collect();
    for n in 0..10 {
        let (client, ask) = (client.clone(), slow_stream(&inputs, &hook));
        submissions.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            client.submit(n, "slow stream", ask).await
        }));
    }

    // The faults: one at a time, then together.
    let mut faults = Vec::new();
    let mut killed_streams = Vec::new();

    at(15.0).await;
    let began = restart_database(&pg, 12.0).await;
    faults.push(Fault::ends_now(
        "PostgreSQL restarted (fast shutdown)",
        start,
        began,
    ));

    at(45.0).await;
    s3.set(S3Mode::Down);
    at(105.0).await;
    s3.set(S3Mode::Flaky);
    let began = start + Duration::from_secs(45);
    faults.push(Fault::ends_now(
        "S3 unreachable (connections closed)",
        start,
        began,
    ));
    at(165.0).await;
    s3.set(S3Mode::Pass);
    let began = start + Duration::from_secs(105);
    faults.push(Fault::ends_now(
        "S3 answers 503 to a third of requests",
        start,
        began,
    ));

    at(170.0).await;
    if scratch.mounted {
        let began = fill_scratch(&scratch, 30.0).await;
        faults.push(Fault::ends_now("workers' scratch disk full", start, began));
    }

    at(205.0).await;
    let began = Instant::now();
    let upload = tokio::spawn(endless_upload(procs.apis[0].1, key.clone()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    procs.restart_api(0).await;
    let cut = upload.await.unwrap();
    let name = format!(
        "API process SIGKILLed during an upload ({} MB sent)",
        cut >> 20
    );
    faults.push(Fault::ends_now(name, start, began));

    at(215.0).await;
    let began = Instant::now();
    let started = stream_started(&client, &procs.api_url(1), &inputs, &hook).await;
    procs.restart_api(1).await;
    match started {
        Ok((job, stream)) => killed_streams.push((job, stream.await.unwrap())),
        Err(e) => killed_streams.push((e, Vec::new())),
    }
    let name = "API process SIGKILLed during a streamed response";
    faults.push(Fault::ends_now(name, start, began));

    // Together: S3 503s, a full disk and a database restart overlap.
    at(230.0).await;
    s3.set(S3Mode::Flaky);
    at(240.0).await;
    if scratch.mounted {
        scratch.fill();
    }
    at(250.0).await;
    restart_database(&pg, 18.0).await;
    at(270.0).await;
    scratch.empty();
    at(290.0).await;
    s3.set(S3Mode::Pass);
    let disk = if scratch.mounted {
        "scratch disk full (30 s), "
    } else {
        ""
    };
    let name = format!("together: S3 503s (60 s), {disk}PostgreSQL down 18 s");
    faults.push(Fault::ends_now(
        name,
        start,
        start + Duration::from_secs(230),
    ));

    // Every request answered; every job ended.
    let mut submitted = Vec::new();
    for s in submissions {
        submitted.extend(s.await.unwrap());
    }
    let workload_end = Instant::now();
    let account = AccountId::parse(&account).unwrap();
    // The workload's last jobs may wait a lease (30 s), the longest backoff
    // (60 s) and an attempt's storage retries (30 s).
    let drained = drain(&app, Duration::from_secs(30 + 60 + 30)).await;
    let drain_seconds = workload_end.elapsed().as_secs_f64();

    let mut problems: Vec<String> = Vec::new();
    if !drained {
        problems.push("jobs still open after the workload, the retries and a lease".into());
    }
    let jobs = all_jobs(&app, &key).await;
    let ledger = app.state.db.ledger(&account, 1_000_000).await.unwrap();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut retried = 0;
    let mut completed_at = Vec::new();
    for job in &jobs {
        let id = job["id"].as_str().unwrap();
        let status = job["status"].as_str().unwrap();
        let code = job["error"]["code"].as_str().unwrap_or_default();
        *outcomes
            .entry(if code.is_empty() {
                status.to_owned()
            } else {
                format!("{status} ({code})")
            })
            .or_default() += 1;
        retried += usize::from(job["attempts"].as_i64().unwrap_or(0) > 1);
        let (ended, found) = check_job(&app, job, &ledger).await;
        completed_at.extend(ended);
        let what = format!(
            "{id} ({} {status} {code})",
            job["kind"].as_str().unwrap_or_default()
        );
        problems.extend(found.into_iter().map(|p| format!("{what}: {p}")));
    }
    for s in &submitted {
        problems.extend(check_stream(&app, &key, s).await);
    }
    for (id, taken) in &killed_streams {
        let job = app.get_json(&format!("/v1/jobs/{id}"), &key).await;
        if job["status"] != "completed" || taken.is_empty() {
            problems.push(format!("{id}: the stream cut by the kill: {job}"));
        }
    }
    problems.extend(check_webhooks(&receiver, &jobs).await);
    problems.extend(check_scratch(&procs, &scratch));
    let credits = app.account_view(&key).await["credits"].clone();
    let ledger = app.state.db.ledger(&account, 1_000_000).await.unwrap();
    let tally = std::mem::take(&mut *client.tally.lock().unwrap());
    problems.extend(tally.violations.iter().cloned());

    // The table.
    let mut table = String::from(
        "\n| fault | began (s) | lasted (s) | first job completed after its end (s) |\n|---|---|---|---|\n",
    );
    for f in &faults {
        // The first job completed after the fault's end.
        let r = completed_at
            .iter()
            .filter(|&&t| t >= f.ended_ms)
            .min()
            .map_or("never".into(), |t| {
                format!("{:.1}", (t - f.ended_ms) as f64 / 1000.0)
            });
        table += &format!("| {} | {:.0} | {:.1} | {r} |\n", f.name, f.began, f.lasted);
    }
    if !scratch.mounted {
        table += "| workers' scratch disk full | not injected: mounting a tmpfs needs root | | |\n";
    }
    table += &format!(
        "\n{} jobs ({} answered to the clients; the others were made by requests answered 503 or cut, and sent again): {}\n",
        jobs.len(),
        submitted.len(),
        outcomes
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    table += &format!(
        "jobs run more than once: {retried}; client answers by status: {:?}; 503 (each with Retry-After): {}; \
         connections refused or cut (an API process down): {}; streams cut: {}\n",
        tally.statuses, tally.unavailable, tally.unreachable, tally.streams_cut
    );
    table += &format!(
        "S3 proxy: {} connections refused, {} requests answered 503; webhook deliveries: {}; \
         last job ended {drain_seconds:.0} s after the last request was answered\n",
        s3.refused.load(std::sync::atomic::Ordering::Relaxed),
        s3.failed.load(std::sync::atomic::Ordering::Relaxed),
        receiver.deliveries().len(),
    );
    eprintln!("{table}");
    if let Ok(path) = std::env::var("MEDIAGEN_FAULTS_TABLE") {
        std::fs::write(path, &table).unwrap();
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert_ledger_adds_up(&ledger, &credits);
    for w in &mut procs.workers {
        let _ = w.start_kill();
    }
}

/// Until `/readyz` lists a worker for every kind of the workload.
async fn wait_for_workers(app: &TestApp) {
    let wanted: HashSet<&str> = WORKER_KINDS.iter().flat_map(|k| k.split(',')).collect();
    for _ in 0..600 {
        let ready = app.ready_kinds().await;
        if wanted.iter().all(|k| ready.iter().any(|r| r == k)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the workers did not start");
}

/// The voices and stored files the workload names.
async fn inputs(app: &TestApp, key: &str) -> Inputs {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("speech.wav");
    let ok = std::process::Command::new("espeak-ng")
        .args(["-v", "en-us", "-w"])
        .arg(&wav)
        .arg("The quick brown fox jumps over the lazy dog.")
        .status()
        .unwrap();
    assert!(ok.success());
    let speech = std::fs::read(&wav).unwrap();
    Inputs {
        espeak: app.first_voice(key, "engine=espeak&language=en").await,
        kokoro: app.first_voice(key, "engine=kokoro&language=en").await,
        speech_file: app.upload(key, speech.clone(), "speech.wav").await,
        video: app.upload(key, video(dir.path()), "source.mp4").await,
        speech: Arc::new(speech),
    }
}

fn slow_stream(inputs: &Inputs, hook: &str) -> Ask {
    Ask::Stream {
        body: json!({"text": LONG_TEXT, "voiceId": inputs.espeak, "format": "pcm",
                     "sampleRate": 16000, "webhookUrl": hook}),
        rate: Some((1024.0, Duration::from_secs(45))),
    }
}

/// Stops the database (fast shutdown: sessions end, as in a restart or a
/// fail-over) for `seconds`, then starts it. When it stopped and started.
async fn restart_database(pg: &OwnPostgres, seconds: f64) -> Instant {
    tokio::task::block_in_place(|| pg.stop());
    let began = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    tokio::task::block_in_place(|| pg.start());
    began
}

async fn fill_scratch(scratch: &ScratchDisk, seconds: f64) -> Instant {
    tokio::task::block_in_place(|| scratch.fill());
    let began = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    scratch.empty();
    began
}

/// An upload of a large file sent on a raw connection, 1 MB every 100 ms,
/// until the connection breaks (the API process is killed); the bytes
/// sent.
async fn endless_upload(port: u16, key: String) -> u64 {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let head = format!(
        "POST /v1/files HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {key}\r\n\
         content-type: multipart/form-data; boundary=XyZ\r\ncontent-length: 1073741000\r\n\r\n\
         --XyZ\r\ncontent-disposition: form-data; name=\"file\"; filename=\"big.wav\"\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let block = vec![0u8; 1 << 20];
    let mut sent = 0;
    for _ in 0..600 {
        if s.write_all(&block).await.is_err() {
            break;
        }
        sent += block.len() as u64;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sent
}

/// A streamed response begun on `api` (its first audio read) and read on
/// slowly: the job, and the task that reads the rest (the bytes it took).
async fn stream_started(
    client: &Client,
    api: &str,
    inputs: &Inputs,
    hook: &str,
) -> Result<(String, JoinHandle<Vec<u8>>), String> {
    let Ask::Stream { body, .. } = slow_stream(inputs, hook) else {
        unreachable!()
    };
    // Sent again on a 503 (no worker began it in time) until it streams.
    let asked = Instant::now();
    let mut r = loop {
        let r = client
            .http
            .post(format!("{api}/v1/text-to-speech/stream"))
            .bearer_auth(&client.key)
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        match r.status().as_u16() {
            200 => break r,
            503 if asked.elapsed() < Duration::from_secs(180) => {
                tokio::time::sleep(Duration::from_secs(5)).await
            }
            status => return Err(format!("the stream to be cut answered {status}")),
        }
    };
    let id = r.headers()["x-job-id"].to_str().unwrap().to_owned();
    let first = r.chunk().await.ok().flatten().unwrap_or_default();
    let rest = tokio::spawn(async move {
        let mut got = first.to_vec();
        while let Ok(Some(chunk)) = r.chunk().await {
            got.extend_from_slice(&chunk);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        got
    });
    Ok((id, rest))
}

/// Waits (at most `limit`) until no job is queued or running.
async fn drain(app: &TestApp, limit: Duration) -> bool {
    let since = Instant::now();
    while since.elapsed() < limit {
        let open: i64 = match app.state.db.queue_depth().await {
            Ok(depth) => depth
                .iter()
                .filter(|d| d.status == "queued" || d.status == "processing")
                .map(|d| d.count)
                .sum(),
            Err(_) => 1,
        };
        if open == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    false
}

/// Every job of the account, as `GET /v1/jobs` lists them.
async fn all_jobs(app: &TestApp, key: &str) -> Vec<Value> {
    let mut jobs = Vec::new();
    for page in 1.. {
        let r = app
            .get_json(&format!("/v1/jobs?limit=100&page={page}"), key)
            .await;
        jobs.extend(r["data"].as_array().unwrap().iter().cloned());
        if r["pagination"]["hasMore"] != true {
            break;
        }
    }
    jobs
}

/// A job's end: completed with every output in the bucket and served whole,
/// or failed with a code of the error table and refunded; its credits
/// settled.
async fn check_job(
    app: &TestApp,
    job: &Value,
    ledger: &[mediagen_store::LedgerEntry],
) -> (Option<i64>, Vec<String>) {
    let mut problems = Vec::new();
    let mut completed_at = None;
    let id = job["id"].as_str().unwrap();
    let sum = |entry: &str| -> (i64, usize) {
        let matching: Vec<i64> = ledger
            .iter()
            .filter(|e| e.job_id.as_deref() == Some(id) && e.entry == entry)
            .map(|e| e.amount)
            .collect();
        (matching.iter().sum(), matching.len())
    };
    let ((held, holds), (captured, captures), (refunded, _)) =
        (sum("reserve"), sum("capture"), sum("refund"));
    if held != captured + refunded {
        problems.push(format!(
            "held {held}, captured {captured}, refunded {refunded}"
        ));
    }
    match job["status"].as_str().unwrap() {
        "completed" => {
            if holds > 0 && captures != 1 {
                problems.push(format!("completed with {captures} captures"));
            }
            let stored = app
                .state
                .db
                .job_by_id(&JobId::parse(id).unwrap())
                .await
                .unwrap()
                .unwrap();
            completed_at = Some(stored.updated_at);
            // Every kind but transcription (a text result) stores a file.
            if stored.outputs.is_empty() && job["kind"] != "stt" {
                problems.push("completed without an output".into());
            }
            // Every transcription heard the sentence it was given.
            if job["kind"] == "stt"
                && !job["result"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("fox"))
            {
                problems.push(format!("transcribed as {}", job["result"]["text"]));
            }
            for output in &stored.outputs {
                let object = app.state.blobs.get_bytes(&output.key).await;
                let Ok(object) = object else {
                    problems.push(format!("{} is not in the bucket", output.field));
                    continue;
                };
                let url = job["result"]
                    .pointer(&output.field)
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if object.len() as u64 != output.size || app.download(url).await != object.to_vec()
                {
                    problems.push(format!("{} is not served whole", output.field));
                }
            }
        }
        "failed" | "cancelled" => {
            let code = job["error"]["code"].as_str().unwrap_or_default();
            if job["status"] == "failed" && ErrorCode::parse(code).is_none() {
                problems.push(format!("failed with an undocumented code `{code}`"));
            }
            if captured > 0 && code != "client_disconnected" {
                problems.push(format!("failed ({code}) but charged {captured}"));
            }
        }
        open => problems.push(format!("left {open}")),
    }
    (completed_at, problems)
}

/// A stream read to its end holds the job's whole audio; a slow reader's
/// job was done long before the reader (no worker waited for it).
async fn check_stream(app: &TestApp, key: &str, s: &Submitted) -> Vec<String> {
    let Some(streamed) = s.streamed.as_ref().filter(|_| !s.cut) else {
        return Vec::new();
    };
    let job = app.get_json(&format!("/v1/jobs/{}", s.id), key).await;
    // A job that failed after its audio was relayed (its whole audio could
    // not be stored) is checked as a failure, by `check_job`.
    let Some(url) = job["result"]["audioUrl"].as_str() else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let stored = app.download(url).await;
    if &stored != streamed {
        problems.push(format!(
            "{} ({}): the stream ({} bytes) is not the job's whole audio ({} bytes)",
            s.id,
            s.label,
            streamed.len(),
            stored.len()
        ));
    }
    if s.label == "slow stream" {
        let stored = app
            .state
            .db
            .job_by_id(&JobId::parse(&s.id).unwrap())
            .await
            .unwrap()
            .unwrap();
        // The job (its worker) was done while its reader still read.
        let reader_took = s.read_for.as_secs_f64();
        let done_before = (s.read_end_ms - stored.updated_at) as f64 / 1000.0;
        if reader_took < 40.0 || done_before < 5.0 {
            problems.push(format!(
                "{}: the slow reader read for {reader_took:.0} s; its job ended {done_before:.0} s before it",
                s.id
            ));
        }
    }
    problems
}

/// Every ended job was told to the receiver once: one delivery id with
/// the job's event (more than one delivery only as retries of that id).
/// Waits up to three minutes for deliveries still due.
async fn check_webhooks(receiver: &Receiver, jobs: &[Value]) -> Vec<String> {
    let expected: HashMap<&str, (String, String)> = jobs
        .iter()
        .map(|j| {
            (
                j["id"].as_str().unwrap(),
                (
                    format!("job.{}", j["status"].as_str().unwrap()),
                    format!("{} {}", j["kind"], j["error"]["code"]),
                ),
            )
        })
        .collect();
    let since = Instant::now();
    loop {
        let mut ids: HashMap<String, HashSet<(String, String)>> = HashMap::new();
        for d in receiver.deliveries() {
            ids.entry(d.job.clone())
                .or_default()
                .insert((d.id, d.event));
        }
        let mut problems = Vec::new();
        for (job, (event, what)) in &expected {
            match ids.get(*job).map(|s| s.iter().collect::<Vec<_>>()) {
                Some(sent) if sent.len() == 1 && &sent[0].1 == event => {}
                Some(sent) => problems.push(format!(
                    "{job} ({what}): deliveries {sent:?}, expected one {event}"
                )),
                None => problems.push(format!("{job} ({what}): no {event} delivered")),
            }
        }
        if problems.is_empty() || since.elapsed() > Duration::from_secs(180) {
            return problems;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// No scratch file is left on any process's disk: each data directory
/// holds one scratch directory (its live process's) with only its lock.
fn check_scratch(procs: &Processes, scratch: &ScratchDisk) -> Vec<String> {
    let mut dirs: Vec<std::path::PathBuf> = procs
        .apis
        .iter()
        .map(|(_, _, d)| d.path().to_owned())
        .collect();
    dirs.extend((0..WORKER_KINDS.len()).map(|i| scratch.path().join(format!("worker-{i}"))));
    let mut problems = Vec::new();
    for dir in dirs {
        let tmp = dir.join("tmp");
        let instances = std::fs::read_dir(&tmp).map(|d| d.count()).unwrap_or(0);
        let left: Vec<_> = local_files(&tmp)
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n != ".lock"))
            .collect();
        if instances != 1 || !left.is_empty() {
            problems.push(format!(
                "{}: {instances} scratch directories, files left: {left:?}",
                display(&tmp)
            ));
        }
    }
    problems
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
