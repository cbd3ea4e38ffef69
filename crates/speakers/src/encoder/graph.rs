//! The GE2E network as an ONNX graph, built from the state dict's weights:
//! three LSTM layers of 256 over 40 mel channels, the last layer's final
//! hidden state through a linear layer of 256 and a ReLU, L2-normalised.
//! ONNX Runtime runs a batch of partial utterances through it at once.

use std::collections::HashMap;

use mediagen_onnx::writer::{Attr, Dim, Elem, Graph};

use super::torch::Tensor;

/// Mel channels in.
pub const MELS: usize = 40;
/// LSTM width and embedding size.
pub const WIDTH: usize = 256;
const LAYERS: usize = 3;
const MODEL: &str = "speaker encoder";

/// The tensor `name` of a state dict, of the `shape` the network needs
/// (`model` names the network in the refusal).
pub(crate) fn get<'a>(
    weights: &'a HashMap<String, Tensor>,
    model: &str,
    name: &str,
    shape: &[usize],
) -> Result<&'a Tensor, String> {
    let t = weights
        .get(name)
        .ok_or_else(|| format!("the {model} has no {name}"))?;
    if t.shape != shape {
        return Err(format!("{name} is {:?}, not {shape:?}", t.shape));
    }
    Ok(t)
}

/// PyTorch stacks an LSTM's gates as input, forget, cell, output; ONNX as
/// input, output, forget, cell.
pub(crate) fn onnx_gates(rows: &[f32], width: usize) -> Vec<f32> {
    let gate = |k: usize| &rows[k * width..(k + 1) * width];
    [gate(0), gate(3), gate(1), gate(2)].concat()
}

/// The model: input `mels` `[batch, frames, 40]`, output `embeddings`
/// `[batch, 256]`.
pub fn build(weights: &HashMap<String, Tensor>) -> Result<Vec<u8>, String> {
    let mut g = Graph::new("ge2e", 0);
    let mels = g.input(
        "mels",
        Elem::F32,
        &[
            Dim::Named("batch"),
            Dim::Named("frames"),
            Dim::Fixed(MELS as i64),
        ],
    );
    let perm = Attr::Ints("perm", vec![1, 0, 2]);
    let mut x = g.op("Transpose", &[&mels], &[perm]);
    let gates = 4 * WIDTH;
    let mut last_h = String::new();
    for l in 0..LAYERS {
        let input = if l == 0 { MELS } else { WIDTH };
        let w_ih = get(
            weights,
            MODEL,
            &format!("lstm.weight_ih_l{l}"),
            &[gates, input],
        )?;
        let w_hh = get(
            weights,
            MODEL,
            &format!("lstm.weight_hh_l{l}"),
            &[gates, WIDTH],
        )?;
        let b_ih = get(weights, MODEL, &format!("lstm.bias_ih_l{l}"), &[gates])?;
        let b_hh = get(weights, MODEL, &format!("lstm.bias_hh_l{l}"), &[gates])?;
        let w = g.floats(
            &[1, gates as i64, input as i64],
            &onnx_gates(&w_ih.data, WIDTH * input),
        );
        let r = g.floats(
            &[1, gates as i64, WIDTH as i64],
            &onnx_gates(&w_hh.data, WIDTH * WIDTH),
        );
        let b = [onnx_gates(&b_ih.data, WIDTH), onnx_gates(&b_hh.data, WIDTH)].concat();
        let b = g.floats(&[1, 2 * gates as i64], &b);
        let (y, h) = (format!("lstm{l}_y"), format!("lstm{l}_h"));
        g.op_outputs(
            "LSTM",
            &[&x, &w, &r, &b],
            &[&y, &h],
            &[Attr::Int("hidden_size", WIDTH as i64)],
        );
        if l + 1 < LAYERS {
            // Y is [frames, directions, batch, width].
            let axis = g.ints(&[1], &[1]);
            x = g.op("Squeeze", &[&y, &axis], &[]);
        }
        last_h = h;
    }
    // The last layer's final hidden state, [1, batch, width].
    let axis = g.ints(&[1], &[0]);
    let h = g.op("Squeeze", &[&last_h, &axis], &[]);
    let lw = get(weights, MODEL, "linear.weight", &[WIDTH, WIDTH])?;
    let lb = get(weights, MODEL, "linear.bias", &[WIDTH])?;
    let lw = g.floats(&[WIDTH as i64, WIDTH as i64], &lw.data);
    let lb = g.floats(&[WIDTH as i64], &lb.data);
    let y = g.op("Gemm", &[&h, &lw, &lb], &[Attr::Int("transB", 1)]);
    let y = g.op("Relu", &[&y], &[]);
    let out = "embeddings";
    g.op_into(
        "LpNormalization",
        &[&y],
        out,
        &[Attr::Int("axis", 1), Attr::Int("p", 2)],
    );
    g.output(
        out,
        Elem::F32,
        &[Dim::Named("batch"), Dim::Fixed(WIDTH as i64)],
    );
    Ok(g.model())
}
