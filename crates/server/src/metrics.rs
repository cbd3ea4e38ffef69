//! Prometheus metrics: request counts and latency by route, plus job counts
//! by kind and status read from the database at scrape time (so every API
//! and worker process of a deployment reports the same queue).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

use mediagen_store::QueueDepth;

const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
}

impl Metrics {
    pub fn record(&self, method: &str, route: &str, status: u16, seconds: f64) {
        {
            let mut r = self.requests.lock().unwrap_or_else(|e| e.into_inner());
            *r.entry((method.to_owned(), route.to_owned(), status))
                .or_default() += 1;
        }
        let mut l = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let h = l.entry(route.to_owned()).or_default();
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                h.counts[i] += 1;
            }
        }
        h.sum += seconds;
        h.count += 1;
    }

    /// The text exposition format.
    pub fn render(&self, jobs: &[QueueDepth]) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP mediagen_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE mediagen_http_requests_total counter\n");
        for ((m, r, s), n) in self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "mediagen_http_requests_total{{method=\"{m}\",route=\"{r}\",status=\"{s}\"}} {n}"
            );
        }
        out.push_str("# HELP mediagen_http_request_duration_seconds Request latency by route.\n");
        out.push_str("# TYPE mediagen_http_request_duration_seconds histogram\n");
        for (r, h) in self
            .latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "mediagen_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"{b}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "mediagen_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "mediagen_http_request_duration_seconds_sum{{route=\"{r}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "mediagen_http_request_duration_seconds_count{{route=\"{r}\"}} {}",
                h.count
            );
        }
        out.push_str("# HELP mediagen_jobs Jobs by kind and status.\n# TYPE mediagen_jobs gauge\n");
        let mut depth = 0;
        for q in jobs {
            let _ = writeln!(
                out,
                "mediagen_jobs{{kind=\"{}\",status=\"{}\"}} {}",
                q.kind, q.status, q.count
            );
            if q.status == "queued" {
                depth += q.count;
            }
        }
        out.push_str("# HELP mediagen_queue_depth Jobs waiting for a worker.\n# TYPE mediagen_queue_depth gauge\n");
        let _ = writeln!(out, "mediagen_queue_depth {depth}");
        out
    }
}
