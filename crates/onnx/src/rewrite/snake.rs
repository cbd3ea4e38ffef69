//! The Snake activation (`x + 1/α · sin²(αx)`, five nodes) as one node of
//! our domain.

use super::graph::{binary, custom_node, Graph, Node};
use crate::protobuf::Pb;

/// The Snake activation around the `Sin` node `sin`: the field indices of
/// its five nodes (the final `Add` last) and the fused node, or `None` when
/// the nodes around this `Sin` are something else.
pub(super) fn match_snake(g: &Graph<'_>, sin: &Node) -> Result<Option<(Vec<usize>, Pb)>, String> {
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
