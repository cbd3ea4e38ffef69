//! 3D-Speaker's CAM++ as an ONNX graph, built from its state dict: a
//! front of 2-D residual convolutions over the 80 fbank bands (FCM: the
//! bands down to 10, 32 channels each), a strided TDNN, three densely
//! connected blocks of context-aware masking layers (12, 24 and 16 layers
//! growing by 32 channels, each a 1×1 bottleneck of 128 and a 3-tap
//! convolution gated by the mean of the whole input and of 100-frame
//! segments), transitions halving the channels, statistics pooling (mean
//! and unbiased deviation over time) and a dense layer of 192 with batch
//! norm and ReLU. Batch norms use their running statistics (eps 1e-5).

use std::collections::HashMap;

use mediagen_onnx::writer::{Attr, Dim, Elem, Graph};

use crate::encoder::torch::Tensor;

/// Fbank bands in, embedding size out.
pub const BANDS: usize = 80;
pub const DIM: usize = 192;
const M: usize = 32;
const INIT: usize = 128;
const GROWTH: usize = 32;
const BOTTLENECK: usize = 128;
/// (layers, dilation) of each dense block.
const BLOCKS: [(usize, i64); 3] = [(12, 1), (24, 2), (16, 2)];
/// Frames of the masking layers' segment pooling.
const SEGMENT: i64 = 100;

type Weights = HashMap<String, Tensor>;

fn get<'a>(w: &'a Weights, name: &str, shape: &[usize]) -> Result<&'a Tensor, String> {
    crate::encoder::graph::get(w, "speaker embedding model", name, shape)
}

struct Builder<'w> {
    g: Graph,
    w: &'w Weights,
}

impl Builder<'_> {
    fn weights(&mut self, name: &str, shape: &[usize]) -> Result<String, String> {
        let t = get(self.w, name, shape)?;
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        Ok(self.g.floats(&dims, &t.data))
    }

    /// Batch norm over `c` channels from its running statistics (`affine`:
    /// with its learned scale and shift).
    fn batch_norm(
        &mut self,
        x: &str,
        name: &str,
        c: usize,
        affine: bool,
    ) -> Result<String, String> {
        let (scale, bias) = if affine {
            (
                self.weights(&format!("{name}.weight"), &[c])?,
                self.weights(&format!("{name}.bias"), &[c])?,
            )
        } else {
            (
                self.g.floats(&[c as i64], &vec![1.0; c]),
                self.g.floats(&[c as i64], &vec![0.0; c]),
            )
        };
        let mean = self.weights(&format!("{name}.running_mean"), &[c])?;
        let var = self.weights(&format!("{name}.running_var"), &[c])?;
        Ok(self.g.op(
            "BatchNormalization",
            &[x, &scale, &bias, &mean, &var],
            &[Attr::Float("epsilon", 1e-5)],
        ))
    }

    fn relu(&mut self, x: &str) -> String {
        self.g.op("Relu", &[x], &[])
    }

    /// A convolution without bias; `shape` the weight's, `stride` and
    /// `pads` per spatial axis, `dilation` on the last axis.
    fn conv(
        &mut self,
        x: &str,
        name: &str,
        shape: &[usize],
        stride: &[i64],
        pad: &[i64],
        dilation: i64,
    ) -> Result<String, String> {
        let w = self.weights(name, shape)?;
        let mut dilations = vec![1; stride.len()];
        *dilations.last_mut().expect("a spatial axis") = dilation;
        let pads = [pad, pad].concat();
        Ok(self.g.op(
            "Conv",
            &[x, &w],
            &[
                Attr::Ints("strides", stride.to_vec()),
                Attr::Ints("pads", pads),
                Attr::Ints("dilations", dilations),
            ],
        ))
    }

    /// A 1×1 convolution with bias over time.
    fn pointwise_bias(
        &mut self,
        x: &str,
        name: &str,
        out: usize,
        inp: usize,
    ) -> Result<String, String> {
        let w = self.weights(&format!("{name}.weight"), &[out, inp, 1])?;
        let b = self.weights(&format!("{name}.bias"), &[out])?;
        Ok(self.g.op("Conv", &[x, &w, &b], &[]))
    }

    /// FCM's residual block: two 3×3 convolutions (the first strided on
    /// the band axis), with a strided 1×1 shortcut where it downsamples.
    fn res_block(&mut self, x: &str, name: &str, stride: i64) -> Result<String, String> {
        let k3 = [M, M, 3, 3];
        let y = self.conv(
            x,
            &format!("{name}.conv1.weight"),
            &k3,
            &[stride, 1],
            &[1, 1],
            1,
        )?;
        let y = self.batch_norm(&y, &format!("{name}.bn1"), M, true)?;
        let y = self.relu(&y);
        let y = self.conv(
            &y,
            &format!("{name}.conv2.weight"),
            &k3,
            &[1, 1],
            &[1, 1],
            1,
        )?;
        let y = self.batch_norm(&y, &format!("{name}.bn2"), M, true)?;
        let shortcut = if stride != 1 {
            let s = self.conv(
                x,
                &format!("{name}.shortcut.0.weight"),
                &[M, M, 1, 1],
                &[stride, 1],
                &[0, 0],
                1,
            )?;
            self.batch_norm(&s, &format!("{name}.shortcut.1"), M, true)?
        } else {
            x.to_owned()
        };
        let sum = self.g.op("Add", &[&y, &shortcut], &[]);
        Ok(self.relu(&sum))
    }

    /// The head: `[B, 80, T]` → `[B, 320, T]`.
    fn head(&mut self, x: &str) -> Result<String, String> {
        let axes = self.g.ints(&[1], &[1]);
        let x = self.g.op("Unsqueeze", &[x, &axes], &[]);
        let x = self.conv(&x, "head.conv1.weight", &[M, 1, 3, 3], &[1, 1], &[1, 1], 1)?;
        let x = self.batch_norm(&x, "head.bn1", M, true)?;
        let mut x = self.relu(&x);
        for layer in ["head.layer1", "head.layer2"] {
            x = self.res_block(&x, &format!("{layer}.0"), 2)?;
            x = self.res_block(&x, &format!("{layer}.1"), 1)?;
        }
        let x = self.conv(&x, "head.conv2.weight", &[M, M, 3, 3], &[2, 1], &[1, 1], 1)?;
        let x = self.batch_norm(&x, "head.bn2", M, true)?;
        let x = self.relu(&x);
        let shape = self.g.ints(&[3], &[0, (M * BANDS / 8) as i64, -1]);
        Ok(self.g.op("Reshape", &[&x, &shape], &[]))
    }

    /// `x` `[B, C, T]` averaged over segments of 100 frames, each average
    /// repeated over its segment's frames (the last segment may be short).
    fn segment_means(&mut self, x: &str) -> String {
        let seg = self.g.op(
            "AveragePool",
            &[x],
            &[
                Attr::Ints("kernel_shape", vec![SEGMENT]),
                Attr::Ints("strides", vec![SEGMENT]),
                Attr::Int("ceil_mode", 1),
            ],
        );
        // [B, C, S] → [B, C, S, 100] → [B, C, S·100] → its first T frames.
        let last = self.g.ints(&[1], &[-1]);
        let seg = self.g.op("Unsqueeze", &[&seg, &last], &[]);
        let repeat = self.g.ints(&[4], &[1, 1, 1, SEGMENT]);
        let seg = self.g.op("Expand", &[&seg, &repeat], &[]);
        let flat = self.g.ints(&[3], &[0, 0, -1]);
        let seg = self.g.op("Reshape", &[&seg, &flat], &[]);
        let shape = self.g.op("Shape", &[x], &[]);
        let two = self.g.ints(&[1], &[2]);
        let frames = self.g.op("Gather", &[&shape, &two], &[]);
        let zero = self.g.ints(&[1], &[0]);
        self.g.op("Slice", &[&seg, &zero, &frames, &last], &[])
    }

    /// One masking layer of a dense block, on `c` channels in: 32 out.
    fn dense_layer(
        &mut self,
        x: &str,
        name: &str,
        c: usize,
        dilation: i64,
    ) -> Result<String, String> {
        let y = self.batch_norm(x, &format!("{name}.nonlinear1.batchnorm"), c, true)?;
        let y = self.relu(&y);
        let y = self.conv(
            &y,
            &format!("{name}.linear1.weight"),
            &[BOTTLENECK, c, 1],
            &[1],
            &[0],
            1,
        )?;
        let y = self.batch_norm(
            &y,
            &format!("{name}.nonlinear2.batchnorm"),
            BOTTLENECK,
            true,
        )?;
        let y = self.relu(&y);
        let cam = format!("{name}.cam_layer");
        let local = self.conv(
            &y,
            &format!("{cam}.linear_local.weight"),
            &[GROWTH, BOTTLENECK, 3],
            &[1],
            &[dilation],
            dilation,
        )?;
        let mean = self.g.op(
            "ReduceMean",
            &[&y],
            &[Attr::Ints("axes", vec![-1]), Attr::Int("keepdims", 1)],
        );
        let segments = self.segment_means(&y);
        let context = self.g.op("Add", &[&mean, &segments], &[]);
        let h = self.pointwise_bias(
            &context,
            &format!("{cam}.linear1"),
            BOTTLENECK / 2,
            BOTTLENECK,
        )?;
        let h = self.relu(&h);
        let h = self.pointwise_bias(&h, &format!("{cam}.linear2"), GROWTH, BOTTLENECK / 2)?;
        let gate = self.g.op("Sigmoid", &[&h], &[]);
        Ok(self.g.op("Mul", &[&local, &gate], &[]))
    }

    /// Mean and unbiased standard deviation over time: `[B, C, T]` → `[B, 2C]`.
    fn stats(&mut self, x: &str) -> String {
        let axes = Attr::Ints("axes", vec![-1]);
        let mean = self
            .g
            .op("ReduceMean", &[x], &[axes, Attr::Int("keepdims", 1)]);
        let centred = self.g.op("Sub", &[x, &mean], &[]);
        let squares = self.g.op("Mul", &[&centred, &centred], &[]);
        let last = self.g.ints(&[1], &[-1]);
        let sum = self
            .g
            .op("ReduceSum", &[&squares, &last], &[Attr::Int("keepdims", 0)]);
        let shape = self.g.op("Shape", &[x], &[]);
        let two = self.g.ints(&[1], &[2]);
        let frames = self.g.op("Gather", &[&shape, &two], &[]);
        let frames = self
            .g
            .op("Cast", &[&frames], &[Attr::Int("to", Elem::F32 as i64)]);
        let one = self.g.floats(&[1], &[1.0]);
        let dof = self.g.op("Sub", &[&frames, &one], &[]);
        let var = self.g.op("Div", &[&sum, &dof], &[]);
        let std = self.g.op("Sqrt", &[&var], &[]);
        let mean = self.g.op("Squeeze", &[&mean, &last], &[]);
        self.g.op("Concat", &[&mean, &std], &[Attr::Int("axis", 1)])
    }
}

/// The model: input `feats` `[batch, frames, 80]` (mean-subtracted log
/// fbank), output `embeddings` `[batch, 192]`.
pub fn build(w: &Weights) -> Result<Vec<u8>, String> {
    let mut b = Builder {
        g: Graph::new("campplus", 0),
        w,
    };
    let feats = b.g.input(
        "feats",
        Elem::F32,
        &[
            Dim::Named("batch"),
            Dim::Named("frames"),
            Dim::Fixed(BANDS as i64),
        ],
    );
    let x =
        b.g.op("Transpose", &[&feats], &[Attr::Ints("perm", vec![0, 2, 1])]);
    let x = b.head(&x)?;
    let c = M * BANDS / 8;
    let x = b.conv(
        &x,
        "xvector.tdnn.linear.weight",
        &[INIT, c, 5],
        &[2],
        &[2],
        1,
    )?;
    let x = b.batch_norm(&x, "xvector.tdnn.nonlinear.batchnorm", INIT, true)?;
    let mut x = b.relu(&x);
    let mut c = INIT;
    for (k, (layers, dilation)) in BLOCKS.into_iter().enumerate() {
        let block = format!("xvector.block{}", k + 1);
        for l in 0..layers {
            let y = b.dense_layer(&x, &format!("{block}.tdnnd{}", l + 1), c, dilation)?;
            x = b.g.op("Concat", &[&x, &y], &[Attr::Int("axis", 1)]);
            c += GROWTH;
        }
        let transit = format!("xvector.transit{}", k + 1);
        let y = b.batch_norm(&x, &format!("{transit}.nonlinear.batchnorm"), c, true)?;
        let y = b.relu(&y);
        x = b.conv(
            &y,
            &format!("{transit}.linear.weight"),
            &[c / 2, c, 1],
            &[1],
            &[0],
            1,
        )?;
        c /= 2;
    }
    let x = b.batch_norm(&x, "xvector.out_nonlinear.batchnorm", c, true)?;
    let x = b.relu(&x);
    let x = b.stats(&x);
    // The dense layer as a 1×1 convolution over one frame.
    let last = b.g.ints(&[1], &[-1]);
    let x = b.g.op("Unsqueeze", &[&x, &last], &[]);
    let x = b.conv(
        &x,
        "xvector.dense.linear.weight",
        &[DIM, 2 * c, 1],
        &[1],
        &[0],
        1,
    )?;
    let x = b.batch_norm(&x, "xvector.dense.nonlinear.batchnorm", DIM, false)?;
    let x = b.relu(&x);
    let out = "embeddings";
    b.g.op_into("Squeeze", &[&x, &last], out, &[]);
    b.g.output(
        out,
        Elem::F32,
        &[Dim::Named("batch"), Dim::Fixed(DIM as i64)],
    );
    Ok(b.g.model())
}
