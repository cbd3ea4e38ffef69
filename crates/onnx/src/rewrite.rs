//! Graph rewrites applied to ONNX models as they load, each computing the
//! same numbers (to within a float rounding) faster than onnxruntime's own
//! operators do:
//!
//! - The Snake activation of neural vocoders, `x + 1/α · sin²(αx)` with
//!   per-channel α (five nodes: Mul, Sin, Pow, Mul, Add), becomes one `Snake`
//!   node of our own operator domain ([`crate::ops`]), and every other
//!   `Sin` our `Sin`. onnxruntime runs `Sin` on one thread, and the Snake's
//!   five passes over the vocoder's largest tensors took 13 % of Kokoro's
//!   synthesis; ours are one pass on every intra-op thread.
//! - A 1-D `ConvTranspose` whose stride divides its kernel becomes a plain
//!   `Conv` over its phases and our `Interleave` (see
//!   [`replace_conv_transpose`]): 2–3 % of Piper's synthesis.
//! - A 1-D `Conv` of a `LeakyRelu`'s output, with the residual `Add` after
//!   it where there is one (HiFi-GAN's residual blocks), becomes our
//!   `LeakyConv` ([`fuse_leaky_conv`]); the `LeakyRelu` goes when every
//!   node that read it now applies it itself. Piper's 18 residual
//!   convolutions took about half its synthesis.
//!
//! The model file is left as it is; the rewrite is made on the bytes before
//! the session is built. ONNX files are protocol buffers; this reads and
//! writes only the fields it needs (nodes and initializers of the main
//! graph, opset imports) and copies every other byte as it is.

use std::collections::HashMap;

use crate::protobuf::{fields, ints, Field, Pb};
use crate::writer::Attr;

/// A node with one output, of our operator domain or (`plain`) of ONNX's.
fn new_node(
    op: &str,
    plain: bool,
    name: &str,
    inputs: &[&str],
    output: &str,
    attrs: &[Attr],
) -> Pb {
    let mut n = Pb::default();
    for i in inputs {
        n.str(1, i);
    }
    n.str(2, output);
    n.str(3, name);
    n.str(4, op);
    for a in attrs {
        n.msg(5, &a.encode());
    }
    if !plain {
        n.str(7, crate::ops::DOMAIN);
    }
    n
}

/// A node of our operator domain, with one output and no attributes.
fn custom_node(op: &str, name: &str, inputs: &[&str], output: &str) -> Pb {
    new_node(op, false, name, inputs, output, &[])
}

/// A float initializer.
fn float_tensor(name: &str, dims: &[i64], data: &[f32]) -> Pb {
    let mut t = Pb::default();
    for &d in dims {
        t.int(1, d);
    }
    t.int(2, 1);
    t.str(8, name);
    t.bytes(
        9,
        &data
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    t
}

/// A float tensor's values (raw or in `float_data`).
fn floats(tensor: &[u8]) -> Result<Vec<f32>, String> {
    let fs = fields(tensor)?;
    if fs.iter().find(|f| f.number == 2).map_or(0, |f| f.value) != 1 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for f in &fs {
        match (f.number, f.wire) {
            (9, 2) | (4, 2) => out.extend(
                f.payload
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            ),
            (4, 5) => out.push(f32::from_le_bytes(
                f.payload.try_into().map_err(|_| "bad float")?,
            )),
            _ => {}
        }
    }
    Ok(out)
}

/// Nodes and initializers that take a node's place.
type Replacement = (Vec<Pb>, Vec<Pb>);

/// What a pattern needs to know of a node of the main graph.
struct Node {
    /// Its index among the graph's fields.
    at: usize,
    op: String,
    domain: String,
    name: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    /// Integer-list attributes (ints, or a single int), by name; any other
    /// attribute is named with no values.
    attrs: HashMap<String, Vec<i64>>,
    /// Single-float attributes, by name.
    floats: HashMap<String, f32>,
}

impl Node {
    /// A one-value integer attribute, `default` when absent; `None` when it
    /// holds several values (or is not an integer).
    fn single(&self, name: &str, default: i64) -> Option<i64> {
        match self.attrs.get(name).map(Vec::as_slice) {
            None => Some(default),
            Some(&[v]) => Some(v),
            _ => None,
        }
    }
}

/// Who reads a value that is one of the graph's outputs.
const GRAPH_OUTPUT: usize = usize::MAX;

/// The main graph's nodes and initializers, and who reads and writes each
/// value.
struct Graph<'a> {
    nodes: Vec<Node>,
    inits: HashMap<String, &'a [u8]>,
    /// Value → indices (into `nodes`) of the nodes that read it, and
    /// [`GRAPH_OUTPUT`] for a graph output.
    readers: HashMap<String, Vec<usize>>,
    /// Value → index (into `nodes`) of the node that writes it.
    writer: HashMap<String, usize>,
}

impl<'a> Graph<'a> {
    fn parse(parts: &[Field<'a>]) -> Result<Self, String> {
        let mut g = Graph {
            nodes: Vec::new(),
            inits: HashMap::new(),
            readers: HashMap::new(),
            writer: HashMap::new(),
        };
        let name_of = |f: &Field<'_>, number: u64| -> Result<String, String> {
            Ok(fields(f.payload)?
                .iter()
                .find(|t| t.number == number)
                .map(Field::text)
                .unwrap_or_default())
        };
        for (at, f) in parts.iter().enumerate() {
            match (f.number, f.wire) {
                (1, 2) => {
                    let fs = fields(f.payload)?;
                    let all = |n: u64| {
                        fs.iter()
                            .filter(|g| g.number == n)
                            .map(Field::text)
                            .collect()
                    };
                    let one = |n: u64| {
                        fs.iter()
                            .find(|g| g.number == n)
                            .map(Field::text)
                            .unwrap_or_default()
                    };
                    let mut attrs = HashMap::new();
                    let mut floats = HashMap::new();
                    for a in fs.iter().filter(|g| g.number == 5) {
                        let af = fields(a.payload)?;
                        let name = af
                            .iter()
                            .find(|g| g.number == 1)
                            .map(Field::text)
                            .unwrap_or_default();
                        let mut values = ints(&af, 8)?;
                        values.extend(
                            af.iter()
                                .filter(|g| g.number == 3 && g.wire == 0)
                                .map(|g| g.value as i64),
                        );
                        // `auto_pad` NOTSET is the default: as if not given.
                        let default_pad = name == "auto_pad"
                            && af.iter().any(|g| g.number == 4 && g.payload == b"NOTSET");
                        if default_pad {
                            continue;
                        }
                        if let Some(f) = af.iter().find(|g| g.number == 2 && g.wire == 5) {
                            let bytes = f.payload.try_into().map_err(|_| "bad float")?;
                            floats.insert(name.clone(), f32::from_le_bytes(bytes));
                        }
                        let other = af.iter().any(|g| matches!(g.number, 2 | 4 | 5 | 6 | 7 | 9));
                        attrs.insert(name, if other { Vec::new() } else { values });
                    }
                    let node = Node {
                        at,
                        op: one(4),
                        domain: one(7),
                        name: one(3),
                        inputs: all(1),
                        outputs: all(2),
                        attrs,
                        floats,
                    };
                    let index = g.nodes.len();
                    for i in node.inputs.iter().filter(|i| !i.is_empty()) {
                        g.readers.entry(i.clone()).or_default().push(index);
                    }
                    for o in &node.outputs {
                        g.writer.insert(o.clone(), index);
                    }
                    g.nodes.push(node);
                }
                (5, 2) => {
                    g.inits.insert(name_of(f, 8)?, f.payload);
                }
                (12, 2) => {
                    g.readers
                        .entry(name_of(f, 1)?)
                        .or_default()
                        .push(GRAPH_OUTPUT);
                }
                _ => {}
            }
        }
        Ok(g)
    }

    /// The one node that reads `value`, when exactly one node (and not the
    /// graph's output) does.
    fn only_reader(&self, value: &str) -> Option<&Node> {
        match self.readers.get(value).map(Vec::as_slice) {
            Some(&[i]) if i != GRAPH_OUTPUT => Some(&self.nodes[i]),
            _ => None,
        }
    }

    /// A per-channel constant of shape `[1, C, 1]`: its `C`.
    fn channel_constant(&self, name: &str) -> Result<Option<i64>, String> {
        let Some(t) = self.inits.get(name) else {
            return Ok(None);
        };
        Ok(match ints(&fields(t)?, 1)?.as_slice() {
            &[1, c, 1] => Some(c),
            _ => None,
        })
    }

    fn is_scalar(&self, name: &str, value: f32) -> Result<bool, String> {
        Ok(match self.inits.get(name) {
            Some(t) => floats(t)? == [value],
            None => false,
        })
    }
}

/// A plain ONNX node `op` with two inputs and one output.
fn binary(node: &Node, op: &str) -> bool {
    node.op == op && node.domain.is_empty() && node.inputs.len() == 2 && node.outputs.len() == 1
}

/// The Snake activation around the `Sin` node `sin`: the field indices of
/// its five nodes (the final `Add` last) and the fused node, or `None` when
/// the nodes around this `Sin` are something else.
fn match_snake(g: &Graph<'_>, sin: &Node) -> Result<Option<(Vec<usize>, Pb)>, String> {
    let Some(&scale) = g.writer.get(&sin.inputs[0]) else {
        return Ok(None);
    };
    let scale = &g.nodes[scale];
    if !binary(scale, "Mul") || g.only_reader(&scale.outputs[0]).map(|n| n.at) != Some(sin.at) {
        return Ok(None);
    }
    // Mul(α, x), in either order.
    let (alpha, x, channels) = match (
        g.channel_constant(&scale.inputs[0])?,
        g.channel_constant(&scale.inputs[1])?,
    ) {
        (Some(c), None) => (&scale.inputs[0], &scale.inputs[1], c),
        (None, Some(c)) => (&scale.inputs[1], &scale.inputs[0], c),
        _ => return Ok(None),
    };
    let Some(pow) = g.only_reader(&sin.outputs[0]) else {
        return Ok(None);
    };
    if !binary(pow, "Pow")
        || pow.inputs[0] != sin.outputs[0]
        || !g.is_scalar(&pow.inputs[1], 2.0)?
    {
        return Ok(None);
    }
    let Some(times) = g.only_reader(&pow.outputs[0]) else {
        return Ok(None);
    };
    let Some(inv) = times.inputs.iter().find(|i| **i != pow.outputs[0]) else {
        return Ok(None);
    };
    if !binary(times, "Mul") || g.channel_constant(inv)? != Some(channels) {
        return Ok(None);
    }
    let Some(add) = g.only_reader(&times.outputs[0]) else {
        return Ok(None);
    };
    if !binary(add, "Add") || !add.inputs.contains(x) {
        return Ok(None);
    }
    let fused = custom_node(
        "Snake",
        &format!("{}_snake", add.name),
        &[x, alpha, inv],
        &add.outputs[0],
    );
    Ok(Some((
        vec![scale.at, sin.at, pow.at, times.at, add.at],
        fused,
    )))
}

/// A 1-D transposed convolution with a stride that divides its kernel, as
/// the same number of plain convolutions (one per output phase, kernel
/// `K / stride`, stacked as one `Conv` of `C_out · stride` channels) and our
/// `Interleave`, which puts the phases in time order and trims the padding.
/// onnxruntime computes a transposed convolution as a matrix product and a
/// single-threaded scatter-add (col2im) of `K / stride` times the output; the
/// plain convolution is the same matrix product without it. The nodes and
/// initializers that replace `node`, or `None` when it is another kind.
fn replace_conv_transpose(g: &Graph<'_>, node: &Node) -> Result<Option<Replacement>, String> {
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

/// A fused vocoder convolution: what it replaces and by what.
struct LeakyConvFusion {
    /// The `LeakyRelu` whose output the convolution read.
    leaky: usize,
    /// The residual `Add` fused in, if any.
    add: Option<usize>,
    node: Pb,
    tensors: Vec<Pb>,
}

/// A 1-D convolution of a leaky ReLU's output, with the residual `x +`
/// after it where the graph has one (HiFi-GAN's residual blocks), as our
/// `LeakyConv` ([`mediagen_kernels::conv1d`]): one pass where onnxruntime makes three
/// (the activation, an im2col copy and matrix product, the sum), and a
/// direct convolution in registers. `None` when `conv` is another kind or
/// a shape [`Conv1d`](mediagen_kernels::conv1d::Conv1d) does not compute.
fn fuse_leaky_conv(g: &Graph<'_>, conv: &Node) -> Result<Option<LeakyConvFusion>, String> {
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

/// The model with the rewrites above applied, or `None` when it has
/// nothing they handle.
pub fn rewrite(model: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let top = fields(model)?;
    let Some(graph) = top.iter().find(|f| f.number == 7 && f.wire == 2) else {
        return Ok(None);
    };
    let parts = fields(graph.payload)?;
    let g = Graph::parse(&parts)?;
    // Field index → the nodes that take its place (none: removed).
    let mut plan: HashMap<usize, Vec<Pb>> = HashMap::new();
    let mut added = Vec::new();
    // LeakyRelu field index → convolutions that now read its input.
    let mut fused_readers: HashMap<usize, usize> = HashMap::new();
    for n in &g.nodes {
        if !n.domain.is_empty() || plan.contains_key(&n.at) {
            continue;
        }
        match n.op.as_str() {
            "Sin" if n.inputs.len() == 1 && n.outputs.len() == 1 => match match_snake(&g, n)? {
                Some((mut gone, fused)) => {
                    let last = gone.pop().expect("five nodes");
                    plan.insert(last, vec![fused]);
                    for at in gone {
                        plan.insert(at, Vec::new());
                    }
                }
                None => {
                    let own = custom_node("Sin", &n.name, &[&n.inputs[0]], &n.outputs[0]);
                    plan.insert(n.at, vec![own]);
                }
            },
            "ConvTranspose" => {
                if let Some((nodes, tensors)) = replace_conv_transpose(&g, n)? {
                    plan.insert(n.at, nodes);
                    added.extend(tensors);
                }
            }
            "Conv" => {
                let Some(f) = fuse_leaky_conv(&g, n)? else {
                    continue;
                };
                if f.add.is_some_and(|a| plan.contains_key(&a)) {
                    continue;
                }
                plan.insert(n.at, vec![f.node]);
                if let Some(a) = f.add {
                    plan.insert(a, Vec::new());
                }
                *fused_readers.entry(f.leaky).or_insert(0) += 1;
                added.extend(f.tensors);
            }
            _ => {}
        }
    }
    // A leaky ReLU all of whose readers now apply it themselves goes.
    for (&at, &fused) in &fused_readers {
        let leaky = g.nodes.iter().find(|n| n.at == at).expect("a node");
        if g.readers.get(&leaky.outputs[0]).map_or(0, Vec::len) == fused {
            plan.insert(at, Vec::new());
        }
    }
    if plan.is_empty() {
        return Ok(None);
    }
    let mut body = Pb(Vec::with_capacity(graph.payload.len()));
    for (at, f) in parts.iter().enumerate() {
        match plan.get(&at) {
            Some(nodes) => nodes.iter().for_each(|n| body.msg(1, n)),
            None => body.0.extend_from_slice(f.raw),
        }
    }
    for t in &added {
        body.msg(5, t);
    }
    let mut out = Pb(Vec::with_capacity(model.len()));
    for f in &top {
        if std::ptr::eq(f, graph) {
            out.msg(7, &body);
        } else {
            out.0.extend_from_slice(f.raw);
        }
    }
    let mut opset = Pb::default();
    opset.str(1, crate::ops::DOMAIN);
    opset.int(2, 1);
    out.msg(8, &opset);
    Ok(Some(out.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::{Attr, Dim, Elem, Graph as Writer};

    fn op_names(model: &[u8]) -> Vec<String> {
        ops(model).into_iter().map(|(op, _)| op).collect()
    }

    fn ops(model: &[u8]) -> Vec<(String, String)> {
        let top = fields(model).unwrap();
        let graph = top.iter().find(|f| f.number == 7).unwrap();
        let parts = fields(graph.payload).unwrap();
        Graph::parse(&parts)
            .unwrap()
            .nodes
            .into_iter()
            .map(|n| (n.op, n.domain))
            .collect()
    }

    /// A Snake activation of `x` (`channels` channels), as a PyTorch export
    /// writes it: its output and the value of `sin²`.
    fn snake(w: &mut Writer, x: &str, channels: i64) -> (String, String) {
        let alpha = w.weight(&[1, channels, 1], 1.0);
        let inv = w.weight(&[1, channels, 1], 1.0);
        let two = w.floats(&[], &[2.0]);
        let scaled = w.op("Mul", &[&alpha, x], &[]);
        let sin = w.op("Sin", &[&scaled], &[]);
        let squared = w.op("Pow", &[&sin, &two], &[]);
        let times = w.op("Mul", &[&inv, &squared], &[]);
        (w.op("Add", &[x, &times], &[]), squared)
    }

    /// A Snake activation and a plain sine.
    pub(crate) fn snake_model(channels: i64) -> Vec<u8> {
        let mut w = Writer::new("snake", 1);
        let dims = [Dim::Fixed(1), Dim::Fixed(channels), Dim::Named("t")];
        let x = w.input("x", Elem::F32, &dims);
        let (y, _) = snake(&mut w, &x, channels);
        let z = w.op("Sin", &[&y], &[]);
        w.output(&z, Elem::F32, &dims);
        w.model()
    }

    #[test]
    fn a_snake_becomes_one_node_and_a_sine_ours() {
        let model = snake_model(4);
        let out = rewrite(&model).unwrap().expect("rewritten");
        let ours = crate::ops::DOMAIN.to_owned();
        assert_eq!(
            ops(&out),
            [
                ("Snake".to_owned(), ours.clone()),
                ("Sin".to_owned(), ours.clone())
            ]
        );
        // The domain is imported; the rest of the model is kept.
        let top = fields(&out).unwrap();
        assert!(top
            .iter()
            .filter(|f| f.number == 8)
            .any(|f| fields(f.payload)
                .unwrap()
                .iter()
                .any(|g| g.number == 1 && g.text() == ours)));
        assert_eq!(top.iter().filter(|f| f.number == 8).count(), 2);
        // Nothing left to rewrite.
        assert!(rewrite(&out).unwrap().is_none());
    }

    #[test]
    fn a_sine_whose_square_is_read_elsewhere_is_not_fused() {
        let mut w = Writer::new("not-snake", 1);
        let dims = [Dim::Fixed(1), Dim::Fixed(2), Dim::Fixed(3)];
        let x = w.input("x", Elem::F32, &dims);
        let (y, squared) = snake(&mut w, &x, 2);
        w.output(&y, Elem::F32, &[]);
        w.output(&squared, Elem::F32, &[]);
        let out = rewrite(&w.model())
            .unwrap()
            .expect("the sine is still ours");
        let ops = op_names(&out);
        assert_eq!(ops, ["Mul", "Sin", "Pow", "Mul", "Add"]);
    }

    /// Two transposed convolutions as vocoders upsample: stride 4 with
    /// kernel 8 (padding 2 a side) and stride 3 with kernel 6 and uneven
    /// padding, the first with a bias.
    fn upsampling_model(channels: i64) -> Vec<u8> {
        let mut w = Writer::new("ups", 2);
        let x = w.input(
            "x",
            Elem::F32,
            &[Dim::Fixed(1), Dim::Fixed(channels), Dim::Named("t")],
        );
        let w1 = w.weight(&[channels, 5, 8], 0.3);
        let b1 = w.weight(&[5], 0.3);
        let up = w.op(
            "ConvTranspose",
            &[&x, &w1, &b1],
            &[
                Attr::Str("auto_pad", "NOTSET"),
                Attr::Ints("strides", vec![4]),
                Attr::Ints("pads", vec![2, 2]),
                Attr::Ints("kernel_shape", vec![8]),
            ],
        );
        let w2 = w.weight(&[5, 3, 6], 0.3);
        let y = w.op(
            "ConvTranspose",
            &[&up, &w2],
            &[
                Attr::Ints("strides", vec![3]),
                Attr::Ints("pads", vec![1, 2]),
            ],
        );
        w.output(
            &y,
            Elem::F32,
            &[Dim::Fixed(1), Dim::Fixed(3), Dim::Named("u")],
        );
        w.model()
    }

    #[test]
    fn a_transposed_convolution_becomes_phases_and_an_interleave() {
        let out = rewrite(&upsampling_model(4)).unwrap().expect("rewritten");
        let ops = op_names(&out);
        assert_eq!(ops, ["Conv", "Interleave", "Conv", "Interleave"]);
    }

    /// A HiFi-GAN stage: one leaky ReLU read by three residual
    /// convolutions (kernels 3, 5, 7, dilated), their mean, and a second
    /// leaky ReLU before a convolution without bias or residual.
    fn resblock_model(channels: i64) -> Vec<u8> {
        let mut w = Writer::new("resblock", 3);
        let dims = [Dim::Fixed(1), Dim::Fixed(channels), Dim::Named("t")];
        let x = w.input("x", Elem::F32, &dims);
        let act = w.op("LeakyRelu", &[&x], &[Attr::Float("alpha", 0.1)]);
        let mut sum: Option<String> = None;
        for (k, d) in [(3, 1), (5, 2), (7, 3)] {
            let weights = w.weight(&[channels, channels, k], 0.2);
            let bias = w.weight(&[channels], 0.2);
            let pad = d * (k - 1) / 2;
            let conv = w.op(
                "Conv",
                &[&act, &weights, &bias],
                &[
                    Attr::Ints("dilations", vec![d]),
                    Attr::Ints("kernel_shape", vec![k]),
                    Attr::Ints("pads", vec![pad, pad]),
                ],
            );
            let block = w.op("Add", &[&conv, &x], &[]);
            sum = Some(match sum {
                None => block,
                Some(s) => w.op("Add", &[&s, &block], &[]),
            });
        }
        let third = w.floats(&[], &[1.0 / 3.0]);
        let mean = w.op("Mul", &[&sum.expect("three blocks"), &third], &[]);
        let act = w.op("LeakyRelu", &[&mean], &[Attr::Float("alpha", 0.01)]);
        let weights = w.weight(&[2, channels, 7], 0.2);
        let y = w.op("Conv", &[&act, &weights], &[Attr::Ints("pads", vec![3, 3])]);
        w.output(
            &y,
            Elem::F32,
            &[Dim::Fixed(1), Dim::Fixed(2), Dim::Named("t")],
        );
        w.model()
    }

    #[test]
    fn leaky_relus_and_residuals_go_into_the_convolutions() {
        let out = rewrite(&resblock_model(4)).unwrap().expect("rewritten");
        let ops = op_names(&out);
        assert_eq!(
            ops,
            [
                "LeakyConv",
                "LeakyConv",
                "Add",
                "LeakyConv",
                "Add",
                "Mul",
                "LeakyConv"
            ]
        );
        assert!(rewrite(&out).unwrap().is_none());
    }

    #[test]
    fn a_leaky_relu_read_elsewhere_stays() {
        let mut w = Writer::new("shared", 4);
        let dims = [Dim::Fixed(1), Dim::Fixed(4), Dim::Named("t")];
        let x = w.input("x", Elem::F32, &dims);
        let act = w.op("LeakyRelu", &[&x], &[Attr::Float("alpha", 0.1)]);
        let weights = w.weight(&[4, 4, 3], 0.2);
        let conv = w.op("Conv", &[&act, &weights], &[Attr::Ints("pads", vec![1, 1])]);
        let y = w.op("Add", &[&conv, &act], &[]);
        w.output(&y, Elem::F32, &dims);
        let out = rewrite(&w.model()).unwrap().expect("rewritten");
        let ops = op_names(&out);
        // The Add reads the activation, not the block's input: no residual.
        assert_eq!(ops, ["LeakyRelu", "LeakyConv", "Add"]);
    }

    /// onnxruntime runs each rewritten graph with our operators and gets
    /// what it gets from the original.
    #[test]
    fn onnxruntime_computes_the_same_with_our_operators() {
        let models = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let env =
            crate::session::environment(&models).expect("onnxruntime (run scripts/models.sh)");
        let dir = tempfile::tempdir().unwrap();
        let channels = 8;
        for (name, model, t) in [
            ("snake", snake_model(channels), 5000),
            ("ups", upsampling_model(channels), 700),
            ("resblock", resblock_model(channels), 3000),
        ] {
            let path = dir.path().join(format!("{name}.onnx"));
            std::fs::write(&path, model).unwrap();
            let x: Vec<f32> = (0..channels as usize * t)
                .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 0.013)
                .collect();
            let run = |session: &mut ort::session::Session| -> (Vec<i64>, Vec<f32>) {
                let input =
                    ort::value::Tensor::from_array((vec![1i64, channels, t as i64], x.clone()))
                        .unwrap();
                let out = session.run(ort::inputs!["x" => input]).unwrap();
                let (shape, v) = out[0].try_extract_tensor::<f32>().unwrap();
                (shape.to_vec(), v.to_vec())
            };
            let (want_shape, want) = run(&mut crate::session::session(env, &path, 2).unwrap());
            let (shape, got) = run(&mut crate::session::session_rewritten(env, &path, 2).unwrap());
            assert_eq!(want_shape, shape, "{name}");
            let worst = want
                .iter()
                .zip(&got)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            assert!(
                worst <= 2e-6 * scale.max(1.0),
                "{name}: largest difference {worst} (values up to {scale})"
            );
        }
    }
}
