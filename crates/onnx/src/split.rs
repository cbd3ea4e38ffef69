//! Cutting a model in two at named values, so that its second half can run
//! on part of what the first computed (Kokoro's vocoder on a span of the
//! frames the rest of the model predicted for a whole sentence).
//!
//! The front computes the cut values (and any other values asked for) from
//! the model's inputs; the back computes the model's outputs from the cut
//! values and the model inputs it also reads. Each keeps the nodes it needs,
//! in the model's order, and the initializers those nodes read; the values'
//! types come from the model's `value_info`. Graphs whose nodes hold
//! subgraphs (`If`, `Loop`) are refused: their outer-scope reads are not
//! followed.

use std::collections::{HashMap, HashSet};

use crate::protobuf::{fields, text_of, Field, Pb};

/// The two halves of a model (serialized ModelProtos).
pub struct Halves {
    pub front: Vec<u8>,
    pub back: Vec<u8>,
}

/// What one node of the main graph reads and writes.
struct Node {
    at: usize,
    inputs: Vec<String>,
    outputs: Vec<String>,
}

/// Cuts `model` at the values `cut`; the front also outputs `also` (values
/// the caller wants from the first half, such as predicted durations).
pub fn split(model: &[u8], cut: &[&str], also: &[&str]) -> Result<Halves, String> {
    let top = fields(model)?;
    let graph = top
        .iter()
        .find(|f| f.number == 7 && f.wire == 2)
        .ok_or("the model has no graph")?;
    let parts = fields(graph.payload)?;
    let name_at = |f: &Field<'_>, number: u64| text_of(f.payload, number);
    let mut nodes = Vec::new();
    let mut writer = HashMap::new();
    let mut inits = HashMap::new();
    let mut infos = HashMap::new();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (at, f) in parts.iter().enumerate() {
        match (f.number, f.wire) {
            (1, 2) => {
                let fs = fields(f.payload)?;
                if fs.iter().any(|g| g.number == 5 && holds_graph(g)) {
                    return Err("a node holds a subgraph; not split".into());
                }
                let texts = |n: u64| fs.iter().filter(move |g| g.number == n).map(Field::text);
                let node = Node {
                    at,
                    inputs: texts(1).filter(|i| !i.is_empty()).collect(),
                    outputs: texts(2).collect(),
                };
                for o in &node.outputs {
                    writer.insert(o.clone(), nodes.len());
                }
                nodes.push(node);
            }
            (5, 2) => {
                inits.insert(name_at(f, 8)?, at);
            }
            (11, 2) => inputs.push((name_at(f, 1)?, at)),
            (12, 2) => outputs.push(at),
            (13, 2) => {
                infos.insert(name_at(f, 1)?, at);
            }
            _ => {}
        }
    }
    let info = |name: &str| -> Result<&[u8], String> {
        infos
            .get(name)
            .map(|&at| parts[at].payload)
            .ok_or_else(|| format!("no type is recorded for `{name}`"))
    };
    for name in cut.iter().chain(also) {
        if !writer.contains_key(*name) {
            return Err(format!("no node computes `{name}`"));
        }
    }
    let wanted: Vec<&str> = cut.iter().chain(also).copied().collect();
    let front_nodes = needed(&nodes, &writer, &wanted, &HashSet::new());
    let stops: HashSet<&str> = cut.iter().copied().collect();
    let model_outputs: Vec<String> = outputs
        .iter()
        .map(|&at| name_at(&parts[at], 1))
        .collect::<Result<_, _>>()?;
    let finals: Vec<&str> = model_outputs.iter().map(String::as_str).collect();
    let back_nodes = needed(&nodes, &writer, &finals, &stops);

    let half = |kept: &[usize], new_inputs: &[&[u8]], new_outputs: &[&[u8]]| {
        let read: HashSet<&str> = kept
            .iter()
            .flat_map(|&i| nodes[i].inputs.iter().map(String::as_str))
            .collect();
        let keep: HashSet<usize> = kept.iter().map(|&i| nodes[i].at).collect();
        let mut body = Pb(Vec::new());
        for (at, f) in parts.iter().enumerate() {
            let copy = match (f.number, f.wire) {
                (1, 2) => keep.contains(&at),
                (5, 2) => inits
                    .iter()
                    .any(|(n, &i)| i == at && read.contains(n.as_str())),
                (11, 2) => inputs
                    .iter()
                    .any(|(n, i)| *i == at && read.contains(n.as_str())),
                // Outputs are the half's own; value types are not needed.
                (12, 2) | (13, 2) => false,
                _ => true,
            };
            if copy {
                body.0.extend_from_slice(f.raw);
            }
        }
        for i in new_inputs {
            body.bytes(11, i);
        }
        for o in new_outputs {
            body.bytes(12, o);
        }
        let mut out = Pb(Vec::with_capacity(model.len() / 2));
        for f in &top {
            if std::ptr::eq(f, graph) {
                out.msg(7, &body);
            } else {
                out.0.extend_from_slice(f.raw);
            }
        }
        out.0
    };
    let front_outputs: Vec<&[u8]> = wanted.iter().map(|n| info(n)).collect::<Result<_, _>>()?;
    let cut_infos: Vec<&[u8]> = cut.iter().map(|n| info(n)).collect::<Result<_, _>>()?;
    let finals_raw: Vec<&[u8]> = outputs.iter().map(|&at| parts[at].payload).collect();
    Ok(Halves {
        front: half(&front_nodes, &[], &front_outputs),
        back: half(&back_nodes, &cut_infos, &finals_raw),
    })
}

/// Whether an attribute holds a graph (`g` or `graphs`).
fn holds_graph(attribute: &Field<'_>) -> bool {
    fields(attribute.payload).is_ok_and(|fs| fs.iter().any(|f| matches!(f.number, 6 | 11)))
}

/// Indices of the nodes that `targets` need, walking back from them and
/// stopping at `stops` (and at graph inputs and initializers), in the
/// graph's order.
fn needed(
    nodes: &[Node],
    writer: &HashMap<String, usize>,
    targets: &[&str],
    stops: &HashSet<&str>,
) -> Vec<usize> {
    let mut seen = HashSet::new();
    let mut todo: Vec<&str> = targets.to_vec();
    while let Some(value) = todo.pop() {
        if stops.contains(value) {
            continue;
        }
        let Some(&i) = writer.get(value) else {
            continue;
        };
        if seen.insert(i) {
            todo.extend(nodes[i].inputs.iter().map(String::as_str));
        }
    }
    let mut out: Vec<usize> = seen.into_iter().collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::{Dim, Elem, Graph};

    /// y = (x + a) · b, with the sum recorded in `value_info`.
    fn model() -> Vec<u8> {
        let mut w = Graph::new("two", 1);
        let dims = [Dim::Fixed(1), Dim::Named("t")];
        let x = w.input("x", Elem::F32, &dims);
        let a = w.floats(&[1], &[2.0]);
        let b = w.floats(&[1], &[3.0]);
        w.op_into("Add", &[&x, &a], "sum", &[]);
        let y = w.op("Mul", &["sum", &b], &[]);
        w.output(&y, Elem::F32, &dims);
        w.info("sum", Elem::F32, &dims);
        w.model()
    }

    fn ops(model: &[u8]) -> (Vec<String>, Vec<String>, Vec<String>, usize) {
        let top = fields(model).unwrap();
        let graph = top.iter().find(|f| f.number == 7).unwrap();
        let parts = fields(graph.payload).unwrap();
        let name = |f: &Field<'_>, n: u64| {
            fields(f.payload)
                .unwrap()
                .iter()
                .find(|g| g.number == n)
                .map(Field::text)
                .unwrap()
        };
        let of = |k: u64, n: u64| -> Vec<String> {
            parts
                .iter()
                .filter(|f| f.number == k)
                .map(|f| name(f, n))
                .collect()
        };
        let inits = parts.iter().filter(|f| f.number == 5).count();
        (of(1, 4), of(11, 1), of(12, 1), inits)
    }

    #[test]
    fn each_half_keeps_what_it_needs() {
        let halves = split(&model(), &["sum"], &[]).unwrap();
        assert_eq!(
            ops(&halves.front),
            (vec!["Add".into()], vec!["x".into()], vec!["sum".into()], 1)
        );
        let (back_ops, back_in, back_out, back_inits) = ops(&halves.back);
        assert_eq!(back_ops, ["Mul"]);
        assert_eq!(back_in, ["sum"]);
        assert_eq!(back_out.len(), 1);
        assert_eq!(back_inits, 1);
    }

    #[test]
    fn a_value_without_a_type_or_a_writer_is_refused() {
        assert!(split(&model(), &["x"], &[]).is_err());
        assert!(split(&model(), &["nothing"], &[]).is_err());
    }

    /// onnxruntime runs both halves, and the back on the front's output
    /// gives what the whole model gives.
    #[test]
    fn the_halves_compute_what_the_whole_does() {
        let models = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let env =
            crate::session::environment(&models).expect("onnxruntime (run scripts/models.sh)");
        let dir = tempfile::tempdir().unwrap();
        let halves = split(&model(), &["sum"], &[]).unwrap();
        let run = |name: &str, bytes: &[u8], input: &str, x: Vec<f32>| -> Vec<f32> {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let mut s = crate::session::session(env, &path, 1).unwrap();
            let t = ort::value::Tensor::from_array((vec![1i64, x.len() as i64], x)).unwrap();
            let out = s.run(ort::inputs![input => t]).unwrap();
            out[0].try_extract_tensor::<f32>().unwrap().1.to_vec()
        };
        let x = vec![1.0, -1.0, 0.5];
        let whole = run("whole.onnx", &model(), "x", x.clone());
        let sum = run("front.onnx", &halves.front, "x", x);
        assert_eq!(sum, [3.0, 1.0, 2.5]);
        assert_eq!(run("back.onnx", &halves.back, "sum", sum), whole);
    }
}
