//! A small ONNX graph writer: enough of the protobuf format (ModelProto,
//! GraphProto, NodeProto, TensorProto, ValueInfoProto, AttributeProto) to
//! write models whose weights are made here, such as the tiny
//! random-weight diffusion models the tests and benchmarks run
//! (`mediagen_generate::diffusion::tiny`). Opset 17, IR version 8.

use crate::protobuf::Pb;
use mediagen_core::rng::Rng;

/// Tensor element types (TensorProto.DataType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    F32 = 1,
    I32 = 6,
    I64 = 7,
}

/// A dimension of a graph input or output: fixed or named (dynamic).
#[derive(Debug, Clone, Copy)]
pub enum Dim {
    Fixed(i64),
    Named(&'static str),
}

/// A node attribute.
pub enum Attr {
    Int(&'static str, i64),
    Ints(&'static str, Vec<i64>),
    Float(&'static str, f32),
    Str(&'static str, &'static str),
}

impl Attr {
    pub(crate) fn encode(&self) -> Pb {
        let mut a = Pb::default();
        match self {
            Attr::Int(name, v) => {
                a.str(1, name);
                a.int(3, *v);
                a.int(20, 2);
            }
            Attr::Ints(name, vs) => {
                a.str(1, name);
                for v in vs {
                    a.int(8, *v);
                }
                a.int(20, 7);
            }
            Attr::Float(name, v) => {
                a.str(1, name);
                a.float(2, *v);
                a.int(20, 1);
            }
            Attr::Str(name, v) => {
                a.str(1, name);
                a.bytes(4, v.as_bytes());
                a.int(20, 3);
            }
        }
        a
    }
}

/// A graph being written: nodes in order, weights as initializers.
pub struct Graph {
    name: String,
    nodes: Vec<Pb>,
    initializers: Vec<Pb>,
    inputs: Vec<Pb>,
    outputs: Vec<Pb>,
    infos: Vec<Pb>,
    next: usize,
    rng: Rng,
}

fn value_info(name: &str, elem: Elem, dims: &[Dim]) -> Pb {
    let mut shape = Pb::default();
    for d in dims {
        let mut dim = Pb::default();
        match d {
            Dim::Fixed(v) => dim.int(1, *v),
            Dim::Named(p) => dim.str(2, p),
        }
        shape.msg(1, &dim);
    }
    let mut tensor = Pb::default();
    tensor.int(1, elem as i64);
    tensor.msg(2, &shape);
    let mut ty = Pb::default();
    ty.msg(1, &tensor);
    let mut vi = Pb::default();
    vi.str(1, name);
    vi.msg(2, &ty);
    vi
}

impl Graph {
    /// An empty graph whose random weights come from `seed`.
    pub fn new(name: &str, seed: u64) -> Self {
        Self {
            name: name.to_owned(),
            nodes: Vec::new(),
            initializers: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            infos: Vec::new(),
            next: 0,
            rng: Rng::new(seed),
        }
    }

    fn fresh(&mut self, stem: &str) -> String {
        self.next += 1;
        format!("{stem}_{}", self.next)
    }

    /// Declares a graph input and returns its name.
    pub fn input(&mut self, name: &str, elem: Elem, dims: &[Dim]) -> String {
        self.inputs.push(value_info(name, elem, dims));
        name.to_owned()
    }

    /// Declares `value` (a node's output) as a graph output.
    pub fn output(&mut self, value: &str, elem: Elem, dims: &[Dim]) {
        self.outputs.push(value_info(value, elem, dims));
    }

    /// Records the type of `value` (an inner value) in `value_info`.
    pub fn info(&mut self, value: &str, elem: Elem, dims: &[Dim]) {
        self.infos.push(value_info(value, elem, dims));
    }

    fn initializer(&mut self, dims: &[i64], elem: Elem, raw: Vec<u8>) -> String {
        let name = self.fresh("w");
        let mut t = Pb::default();
        for d in dims {
            t.int(1, *d);
        }
        t.int(2, elem as i64);
        t.str(8, &name);
        t.bytes(9, &raw);
        self.initializers.push(t);
        name
    }

    /// A float constant.
    pub fn floats(&mut self, dims: &[i64], data: &[f32]) -> String {
        debug_assert_eq!(dims.iter().product::<i64>() as usize, data.len());
        let raw = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(dims, Elem::F32, raw)
    }

    /// An int64 constant.
    pub fn ints(&mut self, dims: &[i64], data: &[i64]) -> String {
        let raw = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(dims, Elem::I64, raw)
    }

    /// Random weights, normal with standard deviation `scale`.
    pub fn weight(&mut self, dims: &[i64], scale: f32) -> String {
        let n = dims.iter().product::<i64>() as usize;
        let data: Vec<f32> = (0..n).map(|_| self.rng.gauss() * scale).collect();
        self.floats(dims, &data)
    }

    /// A node with one output, named by the writer.
    pub fn op(&mut self, op: &str, inputs: &[&str], attrs: &[Attr]) -> String {
        let out = self.fresh(&op.to_lowercase());
        self.op_into(op, inputs, &out, attrs);
        out
    }

    /// A node with one output named `out`.
    pub fn op_into(&mut self, op: &str, inputs: &[&str], out: &str, attrs: &[Attr]) {
        self.op_outputs(op, inputs, &[out], attrs);
    }

    /// A node with the outputs `outs` (an empty name skips an optional
    /// output; an empty input name skips an optional input).
    pub fn op_outputs(&mut self, op: &str, inputs: &[&str], outs: &[&str], attrs: &[Attr]) {
        let mut n = Pb::default();
        for i in inputs {
            n.str(1, i);
        }
        for out in outs {
            n.str(2, out);
        }
        let name = self.fresh("node");
        n.str(3, &name);
        n.str(4, op);
        for a in attrs {
            n.msg(5, &a.encode());
        }
        self.nodes.push(n);
    }

    /// The serialized ModelProto.
    pub fn model(self) -> Vec<u8> {
        let mut g = Pb::default();
        for n in &self.nodes {
            g.msg(1, n);
        }
        g.str(2, &self.name);
        for t in &self.initializers {
            g.msg(5, t);
        }
        for i in &self.inputs {
            g.msg(11, i);
        }
        for o in &self.outputs {
            g.msg(12, o);
        }
        for v in &self.infos {
            g.msg(13, v);
        }
        let mut opset = Pb::default();
        opset.str(1, "");
        opset.int(2, 17);
        let mut m = Pb::default();
        m.int(1, 8);
        m.str(2, "mediagen");
        m.msg(7, &g);
        m.msg(8, &opset);
        m.0
    }

    // Building blocks used by the tiny models.

    /// `x · W + b` over the last axis, `W` random `[fan_in, fan_out]`.
    pub fn linear(&mut self, x: &str, fan_in: i64, fan_out: i64) -> String {
        let w = self.weight(&[fan_in, fan_out], (fan_in as f32).powf(-0.5));
        let b = self.weight(&[fan_out], 0.02);
        let y = self.op("MatMul", &[x, &w], &[]);
        self.op("Add", &[&y, &b], &[])
    }

    /// `x · sigmoid(x)`.
    pub fn silu(&mut self, x: &str) -> String {
        let s = self.op("Sigmoid", &[x], &[]);
        self.op("Mul", &[x, &s], &[])
    }

    /// Layer normalization over the last axis (unit scale, zero shift).
    pub fn layer_norm(&mut self, x: &str, width: i64) -> String {
        let ones = vec![1.0; width as usize];
        let gamma = self.floats(&[width], &ones);
        let beta = self.floats(&[width], &vec![0.0; width as usize]);
        self.op(
            "LayerNormalization",
            &[x, &gamma, &beta],
            &[Attr::Int("axis", -1)],
        )
    }

    /// A 2-D convolution with random `[out, in, k, k]` weights, same padding.
    pub fn conv2d(&mut self, x: &str, c_in: i64, c_out: i64, k: i64) -> String {
        let w = self.weight(&[c_out, c_in, k, k], ((c_in * k * k) as f32).powf(-0.5));
        let b = self.weight(&[c_out], 0.02);
        let p = k / 2;
        self.op(
            "Conv",
            &[x, &w, &b],
            &[
                Attr::Ints("kernel_shape", vec![k, k]),
                Attr::Ints("pads", vec![p, p, p, p]),
            ],
        )
    }

    /// Scaled dot-product attention of `q` `[B, Nq, C]` over `k`, `v`
    /// `[B, Nk, C]`.
    pub fn attention(&mut self, q: &str, k: &str, v: &str, width: i64) -> String {
        let kt = self.op("Transpose", &[k], &[Attr::Ints("perm", vec![0, 2, 1])]);
        let scores = self.op("MatMul", &[q, &kt], &[]);
        let scale = self.floats(&[], &[(width as f32).powf(-0.5)]);
        let scaled = self.op("Mul", &[&scores, &scale], &[]);
        let weights = self.op("Softmax", &[&scaled], &[Attr::Int("axis", -1)]);
        self.op("MatMul", &[&weights, v], &[])
    }
}
