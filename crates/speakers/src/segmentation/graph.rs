//! pyannote's segmentation-3.0 (PyanNet) as an ONNX graph, built from the
//! checkpoint's weights: SincNet (a learned band-pass filter bank of 80
//! filters over 16 kHz samples, stride 10, then three blocks of max
//! pooling, instance norm and leaky ReLU, the last two after a 5-tap
//! convolution), four bidirectional LSTM layers of 128, two linear layers
//! with leaky ReLU, and a 7-class log-softmax per frame (the powerset of
//! at most two of three local speakers). ONNX Runtime runs a batch of
//! 10-s windows through it at once.

use std::collections::HashMap;

use mediagen_onnx::writer::{Attr, Dim, Elem, Graph};

use crate::encoder::graph::onnx_gates;
use crate::encoder::torch::Tensor;

/// Powerset classes out: none, speakers 1–3, pairs (1,2), (1,3), (2,3).
pub const CLASSES: usize = 7;
const HIDDEN: usize = 128;
const LAYERS: usize = 4;
const FILTERS: usize = 80;
const KERNEL: usize = 251;
const STRIDE: i64 = 10;
const RATE: f32 = 16_000.0;
/// The filter bank's floors (asteroid's `ParamSincFB` as pyannote sets it).
const MIN_LOW_HZ: f32 = 50.0;
const MIN_BAND_HZ: f32 = 50.0;

fn get<'a>(
    w: &'a HashMap<String, Tensor>,
    name: &str,
    shape: &[usize],
) -> Result<&'a Tensor, String> {
    crate::encoder::graph::get(w, "segmentation model", name, shape)
}

/// The 80 band-pass filters `[80, 1, 251]`: for each of 40 bands (low
/// edge and width learned, floored), an even (cosine) and an odd (sine)
/// windowed sinc, each scaled by its band's width.
pub fn sinc_filters(w: &HashMap<String, Tensor>) -> Result<Vec<f32>, String> {
    let bands = FILTERS / 2;
    let half = KERNEL / 2;
    let low_hz = get(w, "sincnet.conv1d.0.filterbank.low_hz_", &[bands, 1])?;
    let band_hz = get(w, "sincnet.conv1d.0.filterbank.band_hz_", &[bands, 1])?;
    let n = get(w, "sincnet.conv1d.0.filterbank.n_", &[1, half])?;
    let window = get(w, "sincnet.conv1d.0.filterbank.window_", &[half])?;
    let mut even = Vec::with_capacity(bands * KERNEL);
    let mut odd = Vec::with_capacity(bands * KERNEL);
    for b in 0..bands {
        let low = MIN_LOW_HZ + low_hz.data[b].abs();
        let high = (low + MIN_BAND_HZ + band_hz.data[b].abs()).clamp(MIN_LOW_HZ, RATE / 2.0);
        let band = high - low;
        let side = |f: &dyn Fn(f32, f32) -> f32| -> Vec<f32> {
            (0..half)
                .map(|k| f(low * n.data[k], high * n.data[k]) / (n.data[k] / 2.0) * window.data[k])
                .collect()
        };
        let cos_left = side(&|lo, hi| hi.sin() - lo.sin());
        let sin_left = side(&|lo, hi| lo.cos() - hi.cos());
        let scale = 1.0 / (2.0 * band);
        even.extend(cos_left.iter().map(|v| v * scale));
        even.push(2.0 * band * scale);
        even.extend(cos_left.iter().rev().map(|v| v * scale));
        odd.extend(sin_left.iter().map(|v| v * scale));
        odd.push(0.0);
        odd.extend(sin_left.iter().rev().map(|v| -v * scale));
    }
    even.extend(odd);
    Ok(even)
}

fn instance_norm(
    g: &mut Graph,
    w: &HashMap<String, Tensor>,
    x: &str,
    name: &str,
    c: usize,
) -> Result<String, String> {
    let scale = get(w, &format!("{name}.weight"), &[c])?;
    let bias = get(w, &format!("{name}.bias"), &[c])?;
    let scale = g.floats(&[c as i64], &scale.data);
    let bias = g.floats(&[c as i64], &bias.data);
    Ok(g.op(
        "InstanceNormalization",
        &[x, &scale, &bias],
        &[Attr::Float("epsilon", 1e-5)],
    ))
}

/// Max pooling by 3, instance norm, leaky ReLU: the end of each SincNet
/// block.
fn block_end(
    g: &mut Graph,
    w: &HashMap<String, Tensor>,
    x: &str,
    norm: &str,
    c: usize,
) -> Result<String, String> {
    let pooled = g.op(
        "MaxPool",
        &[x],
        &[
            Attr::Ints("kernel_shape", vec![3]),
            Attr::Ints("strides", vec![3]),
        ],
    );
    let normed = instance_norm(g, w, &pooled, norm, c)?;
    Ok(g.op("LeakyRelu", &[&normed], &[Attr::Float("alpha", 0.01)]))
}

fn linear(
    g: &mut Graph,
    w: &HashMap<String, Tensor>,
    x: &str,
    name: &str,
    out: usize,
    inp: usize,
) -> Result<String, String> {
    let weight = get(w, &format!("{name}.weight"), &[out, inp])?;
    let bias = get(w, &format!("{name}.bias"), &[out])?;
    // x · Wᵀ: the weight stored transposed, [in, out].
    let mut t = vec![0f32; inp * out];
    for o in 0..out {
        for i in 0..inp {
            t[i * out + o] = weight.data[o * inp + i];
        }
    }
    let wt = g.floats(&[inp as i64, out as i64], &t);
    let b = g.floats(&[out as i64], &bias.data);
    let y = g.op("MatMul", &[x, &wt], &[]);
    Ok(g.op("Add", &[&y, &b], &[]))
}

/// The model: input `samples` `[batch, 1, samples]` (16 kHz), output
/// `scores` `[batch, frames, 7]` (log-probabilities).
pub fn build(w: &HashMap<String, Tensor>) -> Result<Vec<u8>, String> {
    let mut g = Graph::new("pyannote-segmentation-3.0", 0);
    let samples = g.input(
        "samples",
        Elem::F32,
        &[Dim::Named("batch"), Dim::Fixed(1), Dim::Named("samples")],
    );
    let x = instance_norm(&mut g, w, &samples, "sincnet.wav_norm1d", 1)?;
    let filters = g.floats(&[FILTERS as i64, 1, KERNEL as i64], &sinc_filters(w)?);
    let x = g.op(
        "Conv",
        &[&x, &filters],
        &[Attr::Ints("strides", vec![STRIDE])],
    );
    let x = g.op("Abs", &[&x], &[]);
    let mut x = block_end(&mut g, w, &x, "sincnet.norm1d.0", FILTERS)?;
    for (k, c_in) in [(1, FILTERS), (2, 60)] {
        let weight = get(w, &format!("sincnet.conv1d.{k}.weight"), &[60, c_in, 5])?;
        let bias = get(w, &format!("sincnet.conv1d.{k}.bias"), &[60])?;
        let weight = g.floats(&[60, c_in as i64, 5], &weight.data);
        let bias = g.floats(&[60], &bias.data);
        let y = g.op("Conv", &[&x, &weight, &bias], &[]);
        x = block_end(&mut g, w, &y, &format!("sincnet.norm1d.{k}"), 60)?;
    }
    // [batch, 60, frames] → [frames, batch, 60], as ONNX's LSTM reads.
    let mut x = g.op("Transpose", &[&x], &[Attr::Ints("perm", vec![2, 0, 1])]);
    let gates = 4 * HIDDEN;
    for l in 0..LAYERS {
        let input = if l == 0 { 60 } else { 2 * HIDDEN };
        let mut ws = Vec::new();
        let mut rs = Vec::new();
        let mut bs = Vec::new();
        for dir in ["", "_reverse"] {
            let w_ih = get(w, &format!("lstm.weight_ih_l{l}{dir}"), &[gates, input])?;
            let w_hh = get(w, &format!("lstm.weight_hh_l{l}{dir}"), &[gates, HIDDEN])?;
            let b_ih = get(w, &format!("lstm.bias_ih_l{l}{dir}"), &[gates])?;
            let b_hh = get(w, &format!("lstm.bias_hh_l{l}{dir}"), &[gates])?;
            ws.extend(onnx_gates(&w_ih.data, HIDDEN * input));
            rs.extend(onnx_gates(&w_hh.data, HIDDEN * HIDDEN));
            bs.extend(onnx_gates(&b_ih.data, HIDDEN));
            bs.extend(onnx_gates(&b_hh.data, HIDDEN));
        }
        let wv = g.floats(&[2, gates as i64, input as i64], &ws);
        let rv = g.floats(&[2, gates as i64, HIDDEN as i64], &rs);
        let bv = g.floats(&[2, 2 * gates as i64], &bs);
        let y = format!("lstm{l}_y");
        g.op_outputs(
            "LSTM",
            &[&x, &wv, &rv, &bv],
            &[&y],
            &[
                Attr::Int("hidden_size", HIDDEN as i64),
                Attr::Str("direction", "bidirectional"),
            ],
        );
        // Y is [frames, 2, batch, 128]: the two directions side by side.
        let y = g.op("Transpose", &[&y], &[Attr::Ints("perm", vec![0, 2, 1, 3])]);
        let shape = g.ints(&[3], &[0, 0, 2 * HIDDEN as i64]);
        x = g.op("Reshape", &[&y, &shape], &[]);
    }
    // [frames, batch, 256] → [batch, frames, 256].
    let x = g.op("Transpose", &[&x], &[Attr::Ints("perm", vec![1, 0, 2])]);
    let x = linear(&mut g, w, &x, "linear.0", HIDDEN, 2 * HIDDEN)?;
    let x = g.op("LeakyRelu", &[&x], &[Attr::Float("alpha", 0.01)]);
    let x = linear(&mut g, w, &x, "linear.1", HIDDEN, HIDDEN)?;
    let x = g.op("LeakyRelu", &[&x], &[Attr::Float("alpha", 0.01)]);
    let x = linear(&mut g, w, &x, "classifier", CLASSES, HIDDEN)?;
    let out = "scores";
    g.op_into("LogSoftmax", &[&x], out, &[Attr::Int("axis", -1)]);
    g.output(
        out,
        Elem::F32,
        &[
            Dim::Named("batch"),
            Dim::Named("frames"),
            Dim::Fixed(CLASSES as i64),
        ],
    );
    Ok(g.model())
}
