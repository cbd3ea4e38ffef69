//! Graph rewrites applied to ONNX models as they load, each computing the
//! same numbers (to within a float rounding) faster than onnxruntime's own
//! operators do:
//!
//! - The Snake activation of neural vocoders, `x + 1/α · sin²(αx)` with
//!   per-channel α (five nodes: Mul, Sin, Pow, Mul, Add), becomes one `Snake`
//!   node of our own operator domain ([`crate::ops`], `snake.rs`), and every other
//!   `Sin` our `Sin`. onnxruntime runs `Sin` on one thread, and the Snake's
//!   five passes over the vocoder's largest tensors took 13 % of Kokoro's
//!   synthesis; ours are one pass on every intra-op thread.
//! - A 1-D `ConvTranspose` whose stride divides its kernel becomes a plain
//!   `Conv` over its phases and our `Interleave` (see
//!   `conv_transpose.rs`): 2–3 % of Piper's synthesis.
//! - `RandomNormalLike` (VITS's sampling noise in Piper voices) becomes our
//!   `SeededNormal` (`noise.rs`): the same noise on every run, so the same
//!   text gives the same speech; onnxruntime's generator runs on from call
//!   to call, and recognisers heard the difference.
//! - A 1-D `Conv` of a `LeakyRelu`'s output, with the residual `Add` after
//!   it where there is one (HiFi-GAN's residual blocks), becomes our
//!   `LeakyConv` (`leaky_conv.rs`); the `LeakyRelu` goes when every
//!   node that read it now applies it itself. Piper's 18 residual
//!   convolutions took about half its synthesis.
//!
//! The model file is left as it is; the rewrite is made on the bytes before
//! the session is built. ONNX files are protocol buffers; this reads and
//! writes only the fields it needs (nodes and initializers of the main
//! graph, opset imports) and copies every other byte as it is.

use std::collections::HashMap;

use crate::protobuf::{fields, Pb};
use conv_transpose::replace_conv_transpose;
use graph::{custom_node, Graph};
use leaky_conv::fuse_leaky_conv;
use noise::seeded_normal;
use snake::match_snake;

mod conv_transpose;
mod graph;
mod leaky_conv;
mod noise;
mod snake;

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
            "RandomNormalLike" => {
                if let Some(node) = seeded_normal(n) {
                    plan.insert(n.at, vec![node]);
                }
            }
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
    fn sampling_noise_becomes_seeded() {
        let mut w = Writer::new("noise", 1);
        let dims = [Dim::Fixed(1), Dim::Fixed(4), Dim::Named("t")];
        let x = w.input("x", Elem::F32, &dims);
        let noise = w.op("RandomNormalLike", &[&x], &[Attr::Float("scale", 0.5)]);
        let y = w.op("Add", &[&x, &noise], &[]);
        w.output(&y, Elem::F32, &dims);
        let out = rewrite(&w.model()).unwrap().expect("rewritten");
        assert_eq!(
            ops(&out),
            [
                ("SeededNormal".to_owned(), crate::ops::DOMAIN.to_owned()),
                ("Add".to_owned(), String::new())
            ]
        );
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
