//! A 1-D `Conv` of a `LeakyRelu`'s output, with the residual `Add` after it,
//! as our `LeakyConv`.

use super::graph::{binary, float_tensor, floats, new_node, Graph, Node};
use crate::protobuf::{fields, ints, Pb};
use crate::writer::Attr;

/// A fused vocoder convolution: what it replaces and by what.
pub(super) struct LeakyConvFusion {
    /// The `LeakyRelu` whose output the convolution read.
    pub(super) leaky: usize,
    /// The residual `Add` fused in, if any.
    pub(super) add: Option<usize>,
    pub(super) node: Pb,
    pub(super) tensors: Vec<Pb>,
}

/// A 1-D convolution of a leaky ReLU's output, with the residual `x +`
/// after it where the graph has one (HiFi-GAN's residual blocks), as our
/// `LeakyConv` ([`mediagen_kernels::conv1d`]): one pass where onnxruntime makes three
/// (the activation, an im2col copy and matrix product, the sum), and a
/// direct convolution in registers. `None` when `conv` is another kind or
/// a shape [`Conv1d`](mediagen_kernels::conv1d::Conv1d) does not compute.
pub(super) fn fuse_leaky_conv(
    g: &Graph<'_>,
    conv: &Node,
) -> Result<Option<LeakyConvFusion>, String> {
    let known = conv.attrs.keys().all(|k| {
        matches!(
            k.as_str(),
            "strides" | "pads" | "kernel_shape" | "dilations" | "group"
        )
    });
    let one = |name: &str, default: i64| conv.single(name, default);
    let (Some(1), Some(1), Some(dilation)) =
        (one("strides", 1), one("group", 1), one("dilations", 1))
    else {
        return Ok(None);
    };
    let pads = match conv.attrs.get("pads").map(Vec::as_slice) {
        None => [0, 0],
        Some(&[a, b]) => [a, b],
        _ => return Ok(None),
    };
    if !known || conv.outputs.len() != 1 || !(2..=3).contains(&conv.inputs.len()) {
        return Ok(None);
    }
    let Some(leaky) = g.writer.get(&conv.inputs[0]).map(|&i| &g.nodes[i]) else {
        return Ok(None);
    };
    if leaky.op != "LeakyRelu" || !leaky.domain.is_empty() || leaky.inputs.len() != 1 {
        return Ok(None);
    }
    let slope = leaky.floats.get("alpha").copied().unwrap_or(0.01);
    let x = &leaky.inputs[0];
    let Some(w) = g.inits.get(&conv.inputs[1]) else {
        return Ok(None);
    };
    let dims = ints(&fields(w)?, 1)?;
    let Ok(dims) = <[i64; 3]>::try_from(dims.as_slice()) else {
        return Ok(None);
    };
    if one("kernel_shape", dims[2]) != Some(dims[2])
        || dims.iter().chain(&pads).chain([&dilation]).any(|&v| v < 0)
    {
        return Ok(None);
    }
    let bias_input = conv.inputs.get(2).filter(|b| !b.is_empty());
    let bias = match bias_input {
        Some(b) => match g.inits.get(b) {
            Some(t) => Some(floats(t)?),
            None => return Ok(None),
        },
        None => None,
    };
    let weights = floats(w)?;
    let dims_u = dims.map(|d| d as usize);
    let pads_u = pads.map(|p| p as usize);
    let supported = |residual| {
        mediagen_kernels::conv1d::Conv1d::new(
            &weights,
            bias.as_deref(),
            dims_u,
            dilation as usize,
            pads_u,
            slope,
            residual,
        )
        .is_some()
    };
    // The residual: the convolution's one reader adds the block's input.
    let add = g
        .only_reader(&conv.outputs[0])
        .filter(|a| binary(a, "Add") && a.inputs.contains(x) && a.inputs.contains(&conv.outputs[0]))
        .filter(|_| supported(true));
    if add.is_none() && !supported(false) {
        return Ok(None);
    }
    let mut tensors = Vec::new();
    let bias_name = match bias_input {
        Some(b) => b.clone(),
        None => {
            let name = format!("{}_zero_bias", conv.name);
            tensors.push(float_tensor(&name, &[dims[0]], &vec![0.0; dims_u[0]]));
            name
        }
    };
    let output = add.map_or(&conv.outputs[0], |a| &a.outputs[0]);
    let node = new_node(
        "LeakyConv",
        false,
        &format!("{}_leaky", conv.name),
        &[x, &conv.inputs[1], &bias_name],
        output,
        &[
            Attr::Int("dilation", dilation),
            Attr::Int("pad_left", pads[0]),
            Attr::Int("pad_right", pads[1]),
            Attr::Int("residual", i64::from(add.is_some())),
            Attr::Float("slope", slope),
        ],
    );
    Ok(Some(LeakyConvFusion {
        leaky: leaky.at,
        add: add.map(|a| a.at),
        node,
        tensors,
    }))
}
