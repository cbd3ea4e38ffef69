//! The parts of an ONNX graph the rewrites read (nodes, initializers,
//! who reads what) and the nodes and tensors they write.

use std::collections::HashMap;

use crate::protobuf::{fields, ints, text_of, Field, Pb};
use crate::writer::Attr;

/// A node with one output, of our operator domain or (`plain`) of ONNX's.
pub(super) fn new_node(
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
pub(super) fn custom_node(op: &str, name: &str, inputs: &[&str], output: &str) -> Pb {
    new_node(op, false, name, inputs, output, &[])
}

/// A float initializer.
pub(super) fn float_tensor(name: &str, dims: &[i64], data: &[f32]) -> Pb {
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
pub(super) fn floats(tensor: &[u8]) -> Result<Vec<f32>, String> {
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
pub(super) type Replacement = (Vec<Pb>, Vec<Pb>);

/// What a pattern needs to know of a node of the main graph.
pub(super) struct Node {
    /// Its index among the graph's fields.
    pub(super) at: usize,
    pub(super) op: String,
    pub(super) domain: String,
    pub(super) name: String,
    pub(super) inputs: Vec<String>,
    pub(super) outputs: Vec<String>,
    /// Integer-list attributes (ints, or a single int), by name; any other
    /// attribute is named with no values.
    pub(super) attrs: HashMap<String, Vec<i64>>,
    /// Single-float attributes, by name.
    pub(super) floats: HashMap<String, f32>,
}

impl Node {
    /// A one-value integer attribute, `default` when absent; `None` when it
    /// holds several values (or is not an integer).
    pub(super) fn single(&self, name: &str, default: i64) -> Option<i64> {
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
pub(super) struct Graph<'a> {
    pub(super) nodes: Vec<Node>,
    pub(super) inits: HashMap<String, &'a [u8]>,
    /// Value → indices (into `nodes`) of the nodes that read it, and
    /// [`GRAPH_OUTPUT`] for a graph output.
    pub(super) readers: HashMap<String, Vec<usize>>,
    /// Value → index (into `nodes`) of the node that writes it.
    pub(super) writer: HashMap<String, usize>,
}

impl<'a> Graph<'a> {
    pub(super) fn parse(parts: &[Field<'a>]) -> Result<Self, String> {
        let mut g = Graph {
            nodes: Vec::new(),
            inits: HashMap::new(),
            readers: HashMap::new(),
            writer: HashMap::new(),
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
                    g.inits.insert(text_of(f.payload, 8)?, f.payload);
                }
                (12, 2) => {
                    g.readers
                        .entry(text_of(f.payload, 1)?)
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
    pub(super) fn only_reader(&self, value: &str) -> Option<&Node> {
        match self.readers.get(value).map(Vec::as_slice) {
            Some(&[i]) if i != GRAPH_OUTPUT => Some(&self.nodes[i]),
            _ => None,
        }
    }

    /// A per-channel constant of shape `[1, C, 1]`: its `C`.
    pub(super) fn channel_constant(&self, name: &str) -> Result<Option<i64>, String> {
        let Some(t) = self.inits.get(name) else {
            return Ok(None);
        };
        Ok(match ints(&fields(t)?, 1)?.as_slice() {
            &[1, c, 1] => Some(c),
            _ => None,
        })
    }

    pub(super) fn is_scalar(&self, name: &str, value: f32) -> Result<bool, String> {
        Ok(match self.inits.get(name) {
            Some(t) => floats(t)? == [value],
            None => false,
        })
    }
}

/// A plain ONNX node `op` with two inputs and one output.
pub(super) fn binary(node: &Node, op: &str) -> bool {
    node.op == op && node.domain.is_empty() && node.inputs.len() == 2 && node.outputs.len() == 1
}
