//! A 1-D `ConvTranspose` whose stride divides its kernel as a plain `Conv`
//! over its phases and our `Interleave`.

use super::graph::{float_tensor, floats, new_node, Graph, Node, Replacement};
use crate::protobuf::{fields, ints};
use crate::writer::Attr;

/// A 1-D transposed convolution with a stride that divides its kernel, as
/// the same number of plain convolutions (one per output phase, kernel
/// `K / stride`, stacked as one `Conv` of `C_out · stride` channels) and our
/// `Interleave`, which puts the phases in time order and trims the padding.
/// onnxruntime computes a transposed convolution as a matrix product and a
/// single-threaded scatter-add (col2im) of `K / stride` times the output; the
/// plain convolution is the same matrix product without it. The nodes and
/// initializers that replace `node`, or `None` when it is another kind.
pub(super) fn replace_conv_transpose(
    g: &Graph<'_>,
    node: &Node,
) -> Result<Option<Replacement>, String> {
    let one = |name: &str, default: i64| node.single(name, default);
    let plain = node.attrs.keys().all(|k| {
        matches!(
            k.as_str(),
            "strides" | "pads" | "kernel_shape" | "dilations" | "group" | "output_padding"
        )
    });
    let (Some(stride), Some(1), Some(1), Some(0)) = (
        one("strides", 1),
        one("dilations", 1),
        one("group", 1),
        one("output_padding", 0),
    ) else {
        return Ok(None);
    };
    let (pad_start, pad_end) = match node.attrs.get("pads").map(Vec::as_slice) {
        None => (0, 0),
        Some(&[a, b]) => (a, b),
        _ => return Ok(None),
    };
    if !plain || node.outputs.len() != 1 || !(2..=3).contains(&node.inputs.len()) {
        return Ok(None);
    }
    let Some(w) = g.inits.get(&node.inputs[1]) else {
        return Ok(None);
    };
    let &[c_in, c_out, k] = ints(&fields(w)?, 1)?.as_slice() else {
        return Ok(None);
    };
    let weights = floats(w)?;
    if stride < 1
        || k % stride != 0
        || weights.len() as i64 != c_in * c_out * k
        || one("kernel_shape", k) != Some(k)
    {
        return Ok(None);
    }
    let bias = match node.inputs.get(2).filter(|b| !b.is_empty()) {
        Some(b) => match g.inits.get(b).map(|t| floats(t)).transpose()? {
            Some(v) if v.len() as i64 == c_out => v,
            _ => return Ok(None),
        },
        None => vec![0.0; c_out as usize],
    };
    // Output phase r of channel o at input step m:
    //   Σ_i Σ_j x[i, m − j] · W[i, o, r + j·stride], j < taps;
    // as a convolution over x padded by taps − 1 on the left, tap t reads
    // x[m + t − (taps − 1)], so j = taps − 1 − t.
    let (s, taps) = (stride as usize, (k / stride) as usize);
    let (c_in_u, c_out_u, k_u) = (c_in as usize, c_out as usize, k as usize);
    let mut basis = vec![0.0f32; c_out_u * s * c_in_u * taps];
    for o in 0..c_out_u {
        for r in 0..s {
            for i in 0..c_in_u {
                for t in 0..taps {
                    let j = taps - 1 - t;
                    basis[((o * s + r) * c_in_u + i) * taps + t] =
                        weights[(i * c_out_u + o) * k_u + r + j * s];
                }
            }
        }
    }
    let phase_bias: Vec<f32> = bias
        .iter()
        .flat_map(|&b| std::iter::repeat_n(b, s))
        .collect();
    let p = |x: &str| format!("{}_phases/{x}", node.name);
    let taps = taps as i64;
    let conv = new_node(
        "Conv",
        true,
        &p("conv"),
        &[&node.inputs[0], &p("w"), &p("b")],
        &p("y"),
        &[
            Attr::Ints("kernel_shape", vec![taps]),
            Attr::Ints("pads", vec![taps - 1, taps - 1]),
        ],
    );
    let interleave = new_node(
        "Interleave",
        false,
        &p("interleave"),
        &[&p("y")],
        &node.outputs[0],
        &[
            Attr::Int("stride", stride),
            Attr::Int("trim_start", pad_start),
            Attr::Int("trim_end", pad_end),
        ],
    );
    let tensors = vec![
        float_tensor(&p("w"), &[c_out * stride, c_in, taps], &basis),
        float_tensor(&p("b"), &[c_out * stride], &phase_bias),
    ];
    Ok(Some((vec![conv, interleave], tensors)))
}
