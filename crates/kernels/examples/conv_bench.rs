//! Speed of the direct convolution on a vocoder's shapes, one thread:
//! GFLOP/s per shape at the fastest of its runs (this VM's neighbours
//! make the mean wander). Usage: conv_bench [SECONDS_PER_SHAPE]
use std::time::Instant;

use mediagen_kernels::conv1d::Conv1d;

fn main() {
    let budget: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    // (c_out, c_in, kernel, dilation, slope, residual, len): Piper's
    // residual blocks at each rate, and its flow's input layers.
    for (c_out, c_in, kernel, dilation, slope, residual, len) in [
        (32, 32, 7, 12, 0.1, true, 75_520),
        (32, 32, 3, 1, 0.1, true, 75_520),
        (64, 64, 5, 6, 0.1, true, 18_880),
        (128, 128, 3, 2, 0.1, true, 2_360),
        (384, 192, 5, 1, 1.0, false, 295),
    ] {
        let pad = dilation * (kernel - 1) / 2;
        let w: Vec<f32> = (0..c_out * c_in * kernel)
            .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let b = vec![0.1; c_out];
        let x: Vec<f32> = (0..c_in * len)
            .map(|i| ((i * 104_729) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let conv = Conv1d::new(
            &w,
            Some(&b),
            [c_out, c_in, kernel],
            dilation,
            [pad, pad],
            slope,
            residual,
        )
        .expect("a shape it computes");
        let out_len = conv.out_len(len).expect("output");
        let mut y = vec![0.0f32; c_out * out_len];
        let chunk = conv.chunk();
        let start = Instant::now();
        let mut best = f64::MAX;
        while start.elapsed().as_secs_f64() < budget {
            let run = Instant::now();
            let mut tasks: Vec<Vec<&mut [f32]>> =
                (0..out_len.div_ceil(chunk)).map(|_| Vec::new()).collect();
            for row in y.chunks_mut(out_len) {
                for (piece, task) in row.chunks_mut(chunk).zip(&mut tasks) {
                    task.push(piece);
                }
            }
            for (i, rows) in tasks.iter_mut().enumerate() {
                conv.run_chunk(&x, len, i * chunk, rows);
            }
            best = best.min(run.elapsed().as_secs_f64());
        }
        let secs = best;
        let flops = 2.0 * (c_out * c_in * kernel * out_len) as f64;
        println!(
            "{c_out}x{c_in} k{kernel} d{dilation} len {len}: {:.2} ms, {:.1} GFLOP/s",
            secs * 1e3,
            flops / secs / 1e9
        );
    }
}
