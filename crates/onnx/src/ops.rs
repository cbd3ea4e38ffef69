//! Our own ONNX operators, registered with every session built from a
//! rewritten graph ([`crate::rewrite`]): `Snake` (the vocoder activation
//! `x + inv · sin²(αx)` with per-channel α and inv, in one pass), `Sin`,
//! `Interleave` (the phases of a transposed convolution put in time
//! order), `LeakyConv` (a vocoder's `x + conv(leaky_relu(x))`) and
//! `SeededNormal` (normal noise that is the same on every run). Their
//! inner loops are in `mediagen_kernels`, which test builds compile
//! optimised. onnxruntime runs `Sin` on one thread; these split
//! their work over the session's intra-op threads (`par_for`), row by row
//! or in blocks.

use std::sync::{Mutex, OnceLock};

use mediagen_kernels::activation::{sin_into, snake_into};
use mediagen_kernels::conv1d::Conv1d;
use mediagen_kernels::interleave::interleave_into;

use ort::operator::{
    BoxedKernel, ComputeContext, KernelContext, Operator, OperatorDomain, OperatorInput,
    OperatorOutput,
};
use ort::value::TensorElementType;

/// The operator domain the rewritten graphs name.
pub const DOMAIN: &str = "ai.mediagen";

/// Elements a `Sin` task takes at a time.
const BLOCK: usize = 16 * 1024;

/// The domain with our operators, for a session builder.
pub fn domain() -> ort::Result<OperatorDomain> {
    OperatorDomain::new(DOMAIN)?
        .add(Snake)?
        .add(Sin)?
        .add(Interleave)?
        .add(LeakyConv)?
        .add(SeededNormal)
}

/// Output `i`, allocated with `shape`.
fn float_output<'a>(
    ctx: &'a ComputeContext,
    i: usize,
    shape: Vec<i64>,
) -> ort::Result<ort::value::ValueRefMut<'a>> {
    ctx.output(i, shape)?
        .ok_or_else(|| ort::Error::new(format!("output {i} missing")))
}

fn float_input(ctx: &ComputeContext, i: usize) -> ort::Result<ort::value::ValueRef<'_>> {
    ctx.input(i)?
        .ok_or_else(|| ort::Error::new(format!("input {i} missing")))
}

/// Hands task `i` (what it writes) with its index to `f` on the session's
/// threads.
fn par_tasks<T: Send>(
    ctx: &ComputeContext,
    tasks: Vec<T>,
    f: impl Fn(usize, &mut T) + Sync + Send,
) -> ort::Result<()> {
    let tasks: Vec<Mutex<T>> = tasks.into_iter().map(Mutex::new).collect();
    ctx.par_for(tasks.len(), 0, |i| {
        let mut task = tasks[i].lock().unwrap_or_else(|e| e.into_inner());
        f(i, &mut task);
    })
}

/// Splits `out` into pieces of `len` and hands piece `i` with its index to
/// `f` on the session's threads.
fn par_chunks(
    ctx: &ComputeContext,
    out: &mut [f32],
    len: usize,
    f: impl Fn(usize, &mut [f32]) + Sync + Send,
) -> ort::Result<()> {
    par_tasks(ctx, out.chunks_mut(len.max(1)).collect(), |i, piece| {
        f(i, piece)
    })
}

/// Integer attribute `name` of operator `op`, as a count.
fn count_attr(kctx: &KernelContext<'_>, op: &str, name: &str) -> ort::Result<usize> {
    let v: i64 = kctx
        .get(name)
        .ok_or_else(|| ort::Error::new(format!("{op}: no {name}")))?;
    usize::try_from(v).map_err(|_| ort::Error::new(format!("{op}: {name} {v}")))
}

struct Snake;

impl Operator for Snake {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        "Snake"
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [const { OperatorInput::required(TensorElementType::Float32) }; 3]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }

    fn create_kernel<'attr>(&self, _: &KernelContext<'attr>) -> ort::Result<Self::Kernel<'attr>> {
        Ok(Box::new(|ctx: &ComputeContext| {
            let (x, alpha, inv) = (
                float_input(ctx, 0)?,
                float_input(ctx, 1)?,
                float_input(ctx, 2)?,
            );
            let (shape, x) = x.try_extract_tensor::<f32>()?;
            let (_, alpha) = alpha.try_extract_tensor::<f32>()?;
            let (_, inv) = inv.try_extract_tensor::<f32>()?;
            let channels = alpha.len();
            let &[_, c, t] = &shape[..] else {
                return Err(ort::Error::new(format!("Snake: input of shape {shape:?}")));
            };
            if c as usize != channels || inv.len() != channels {
                return Err(ort::Error::new(
                    "Snake: α or 1/α does not match the channels",
                ));
            }
            let t = t as usize;
            let mut y = float_output(ctx, 0, shape.to_vec())?;
            let (_, out) = y.try_extract_tensor_mut::<f32>()?;
            par_chunks(ctx, out, t, |row, out| {
                let c = row % channels;
                snake_into(&x[row * t..row * t + out.len()], alpha[c], inv[c], out);
            })
        }))
    }
}

struct Sin;

impl Operator for Sin {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        "Sin"
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [OperatorInput::required(TensorElementType::Float32)]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }

    fn create_kernel<'attr>(&self, _: &KernelContext<'attr>) -> ort::Result<Self::Kernel<'attr>> {
        Ok(Box::new(|ctx: &ComputeContext| {
            let x = float_input(ctx, 0)?;
            let (shape, x) = x.try_extract_tensor::<f32>()?;
            let mut y = float_output(ctx, 0, shape.to_vec())?;
            let (_, out) = y.try_extract_tensor_mut::<f32>()?;
            par_chunks(ctx, out, BLOCK, |i, out| {
                sin_into(&x[i * BLOCK..i * BLOCK + out.len()], out);
            })
        }))
    }
}

struct Interleave;

impl Operator for Interleave {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        "Interleave"
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [OperatorInput::required(TensorElementType::Float32)]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }

    fn create_kernel<'attr>(
        &self,
        kctx: &KernelContext<'attr>,
    ) -> ort::Result<Self::Kernel<'attr>> {
        let attr = |name: &str| count_attr(kctx, "Interleave", name);
        let (stride, trim_start, trim_end) = (
            attr("stride")?.max(1),
            attr("trim_start")?,
            attr("trim_end")?,
        );
        Ok(Box::new(move |ctx: &ComputeContext| {
            let x = float_input(ctx, 0)?;
            let (shape, x) = x.try_extract_tensor::<f32>()?;
            let &[n, rows, len] = &shape[..] else {
                return Err(ort::Error::new(format!(
                    "Interleave: input of shape {shape:?}"
                )));
            };
            let (rows, len) = (rows as usize, len as usize);
            let out_len = (len * stride)
                .checked_sub(trim_start + trim_end)
                .filter(|_| rows % stride == 0)
                .ok_or_else(|| ort::Error::new(format!("Interleave: input of shape {shape:?}")))?;
            let channels = rows / stride;
            let mut y = float_output(ctx, 0, vec![n, channels as i64, out_len as i64])?;
            let (_, out) = y.try_extract_tensor_mut::<f32>()?;
            par_chunks(ctx, out, out_len, |c, out| {
                let phases = &x[c * stride * len..(c + 1) * stride * len];
                interleave_into(phases, len, stride, trim_start, out);
            })
        }))
    }
}

/// `y = conv(leaky_relu(x), w, b)`, plus `x` when `residual` is 1: a 1-D
/// convolution (stride 1, one group) with `dilation` and `pad_left` /
/// `pad_right` zeros, its weights (constant) packed on the first run.
/// Inputs x `[1, C_in, T]`, w `[C_out, C_in, K]`, b `[C_out]`; attributes
/// `slope` (of the leaky ReLU, 1 for none), `dilation`, `pad_left`,
/// `pad_right`, `residual`.
struct LeakyConv;

impl Operator for LeakyConv {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        "LeakyConv"
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [const { OperatorInput::required(TensorElementType::Float32) }; 3]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }

    fn create_kernel<'attr>(
        &self,
        kctx: &KernelContext<'attr>,
    ) -> ort::Result<Self::Kernel<'attr>> {
        let attr = |name: &str| count_attr(kctx, "LeakyConv", name);
        let slope: f32 = kctx
            .get("slope")
            .ok_or_else(|| ort::Error::new("LeakyConv: no slope"))?;
        let (dilation, pads, residual) = (
            attr("dilation")?,
            [attr("pad_left")?, attr("pad_right")?],
            attr("residual")? == 1,
        );
        let conv: OnceLock<Result<Conv1d, String>> = OnceLock::new();
        Ok(Box::new(move |ctx: &ComputeContext| {
            let (x, w, b) = (
                float_input(ctx, 0)?,
                float_input(ctx, 1)?,
                float_input(ctx, 2)?,
            );
            let (shape, x) = x.try_extract_tensor::<f32>()?;
            let conv = conv
                .get_or_init(|| {
                    let (wshape, w) = w.try_extract_tensor::<f32>().map_err(|e| e.to_string())?;
                    let (_, b) = b.try_extract_tensor::<f32>().map_err(|e| e.to_string())?;
                    let dims = <[usize; 3]>::try_from(
                        wshape.iter().map(|&d| d as usize).collect::<Vec<_>>(),
                    )
                    .map_err(|d| format!("weights of shape {d:?}"))?;
                    Conv1d::new(w, Some(b), dims, dilation, pads, slope, residual)
                        .ok_or_else(|| format!("weights of shape {wshape:?} not supported"))
                })
                .as_ref()
                .map_err(|e| ort::Error::new(format!("LeakyConv: {e}")))?;
            let &[1, c, len] = &shape[..] else {
                return Err(ort::Error::new(format!(
                    "LeakyConv: input of shape {shape:?}"
                )));
            };
            let len = len as usize;
            let out_len = conv
                .out_len(len)
                .filter(|_| c as usize == conv.c_in())
                .ok_or_else(|| ort::Error::new(format!("LeakyConv: input of shape {shape:?}")))?;
            let mut y = float_output(ctx, 0, vec![1, conv.c_out() as i64, out_len as i64])?;
            let (_, out) = y.try_extract_tensor_mut::<f32>()?;
            let chunk = conv.chunk();
            // Task i writes columns i·chunk.. of every output channel.
            let mut pieces: Vec<Vec<&mut [f32]>> = (0..out_len.div_ceil(chunk))
                .map(|_| Vec::with_capacity(conv.c_out()))
                .collect();
            for row in out.chunks_mut(out_len.max(1)) {
                for (piece, task) in row.chunks_mut(chunk).zip(&mut pieces) {
                    task.push(piece);
                }
            }
            par_tasks(ctx, pieces, |i, rows| {
                conv.run_chunk(x, len, i * chunk, rows)
            })
        }))
    }
}

/// `RandomNormalLike` made repeatable: noise of the input's shape, drawn
/// from a counter-based generator keyed by the `seed` attribute and each
/// element's index (SplitMix64, Box–Muller), so the same input gives the
/// same output on every run, thread count and process. onnxruntime's own
/// draws from a generator that runs on from call to call.
struct SeededNormal;

/// SplitMix64's output for `z`.
fn splitmix(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The two standard normal samples of pair `p` of generator `key`: one
/// 64-bit hash gives two 24-bit uniforms, Box–Muller makes them normal.
fn normal_pair(key: u64, p: u64) -> (f32, f32) {
    let h = splitmix(key ^ p);
    let unit = |bits: u64| (bits as f32 + 0.5) / (1u32 << 24) as f32;
    let (u1, u2) = (unit(h >> 40), unit((h >> 16) & 0xFF_FFFF));
    let r = (-2.0 * u1.ln()).sqrt();
    let (sin, cos) = (std::f32::consts::TAU * u2).sin_cos();
    (r * cos, r * sin)
}

/// The standard normal sample number `i` of generator `key`.
pub fn seeded_normal(key: u64, i: u64) -> f32 {
    let (a, b) = normal_pair(key, i / 2);
    if i.is_multiple_of(2) {
        a
    } else {
        b
    }
}

/// Samples `first`, `first + 1`, … of generator `key` into `out`, as
/// `mean + scale · z` (`first` even: whole pairs).
fn seeded_normals(key: u64, first: u64, mean: f32, scale: f32, out: &mut [f32]) {
    for (k, pair) in out.chunks_mut(2).enumerate() {
        let (a, b) = normal_pair(key, first / 2 + k as u64);
        pair[0] = mean + scale * a;
        if let Some(second) = pair.get_mut(1) {
            *second = mean + scale * b;
        }
    }
}

impl Operator for SeededNormal {
    type Kernel<'attr> = BoxedKernel<'attr>;

    fn name(&self) -> &str {
        "SeededNormal"
    }

    fn inputs(&self) -> impl IntoIterator<Item = OperatorInput> {
        [OperatorInput::required(TensorElementType::Float32)]
    }

    fn outputs(&self) -> impl IntoIterator<Item = OperatorOutput> {
        [OperatorOutput::required(TensorElementType::Float32)]
    }

    fn create_kernel<'attr>(
        &self,
        kctx: &KernelContext<'attr>,
    ) -> ort::Result<Self::Kernel<'attr>> {
        let seed: i64 = kctx
            .get("seed")
            .ok_or_else(|| ort::Error::new("SeededNormal: no seed"))?;
        let mean: f32 = kctx.get("mean").unwrap_or(0.0);
        let scale: f32 = kctx.get("scale").unwrap_or(1.0);
        let key = splitmix(seed as u64);
        Ok(Box::new(move |ctx: &ComputeContext| {
            let x = float_input(ctx, 0)?;
            let (shape, _) = x.try_extract_tensor::<f32>()?;
            let mut y = float_output(ctx, 0, shape.to_vec())?;
            let (_, out) = y.try_extract_tensor_mut::<f32>()?;
            par_chunks(ctx, out, BLOCK, |piece, out| {
                seeded_normals(key, (piece * BLOCK) as u64, mean, scale, out)
            })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::seeded_normal;

    #[test]
    fn seeded_noise_is_standard_normal_and_repeatable() {
        let n = 200_000u64;
        let xs: Vec<f64> = (0..n).map(|i| f64::from(seeded_normal(7, i))).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "{mean} {var}"
        );
        // Neighbours are not correlated.
        let lag1 = xs.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / n as f64;
        assert!(lag1.abs() < 0.01, "{lag1}");
        let within = xs.iter().filter(|x| x.abs() < 1.0).count() as f64 / n as f64;
        assert!((within - 0.6827).abs() < 0.01, "{within}");
        assert_eq!(seeded_normal(7, 12345), seeded_normal(7, 12345));
        assert_ne!(seeded_normal(7, 12345), seeded_normal(8, 12345));
        // A block written at once holds the same samples, shifted.
        let mut block = vec![0.0; 9];
        super::seeded_normals(7, 100, 1.0, 2.0, &mut block);
        for (k, v) in block.iter().enumerate() {
            assert_eq!(*v, 1.0 + 2.0 * seeded_normal(7, 100 + k as u64));
        }
    }
}
