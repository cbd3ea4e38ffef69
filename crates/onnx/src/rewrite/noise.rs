//! `RandomNormalLike` → our `SeededNormal` ([`crate::ops`]): the same
//! distribution (its `mean` and `scale`), drawn so that every run gives
//! the same values. Each node is keyed by its place in the graph, so two
//! noise sources of one model differ.

use super::graph::{new_node, Node};
use crate::protobuf::Pb;
use crate::writer::Attr;

/// The replacement of a float `RandomNormalLike`, `None` for another
/// element type.
pub(super) fn seeded_normal(n: &Node) -> Option<Pb> {
    if n.inputs.len() != 1 || n.outputs.len() != 1 {
        return None;
    }
    // dtype 1 is float; absent, the input's type (float in the models
    // this serves; our operator refuses any other).
    if n.single("dtype", 1) != Some(1) {
        return None;
    }
    let mean = n.floats.get("mean").copied().unwrap_or(0.0);
    let scale = n.floats.get("scale").copied().unwrap_or(1.0);
    Some(new_node(
        "SeededNormal",
        false,
        &n.name,
        &[&n.inputs[0]],
        &n.outputs[0],
        &[
            Attr::Int("seed", n.at as i64),
            Attr::Float("mean", mean),
            Attr::Float("scale", scale),
        ],
    ))
}
