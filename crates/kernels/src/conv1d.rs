//! A direct 1-D convolution for the residual blocks of neural vocoders
//! (HiFi-GAN's `x + conv(leaky_relu(x))`), in one pass: the activation is
//! applied as the input is read and the residual added as the output is
//! written, so the three onnxruntime nodes it replaces (LeakyRelu, Conv,
//! Add) become one read and one write of the tensor. The convolution itself
//! runs straight from the input (no im2col copy, no packing of it), in tiles
//! of 2 output channels × 48 steps that the compiler keeps in twelve AVX2
//! registers (`pulp` compiles it for the instruction sets the machine has).
//! On this project's 2-core test machine it runs Piper's residual blocks at
//! 80-140 GFLOP/s, where onnxruntime's LeakyRelu + Conv + Add ran at 60-120.

/// Output steps a tile computes (six AVX vectors).
const TILE: usize = 48;
/// Output channels a tile computes.
const CO_BLOCK: usize = 2;
/// Input values (channels × steps) a task's window holds at most: the
/// window stays in the core's L1 cache while every output channel reads it.
const WINDOW: usize = 4096;

/// One convolution's weights, packed for the tiles, and its shape.
pub struct Conv1d {
    c_in: usize,
    c_out: usize,
    kernel: usize,
    dilation: usize,
    pad_left: usize,
    pad_right: usize,
    /// Slope of the leaky ReLU applied to the input (1 for none; within
    /// 0..=1, so that the ReLU is `max(x, slope · x)`).
    slope: f32,
    /// Whether the input is added to the output (`c_in == c_out`).
    residual: bool,
    bias: Vec<f32>,
    /// `[c_out / CO_BLOCK][c_in][kernel][CO_BLOCK]`.
    packed: Vec<f32>,
    arch: pulp::Arch,
}

impl Conv1d {
    /// Weights `[c_out][c_in][kernel]` as ONNX lays them out. `None` where
    /// the shape is not one this computes (an odd number of output
    /// channels, a residual with different channel counts or lengths, or a
    /// machine without AVX2 and FMA, where onnxruntime's own kernels are
    /// kept).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        weights: &[f32],
        bias: Option<&[f32]>,
        [c_out, c_in, kernel]: [usize; 3],
        dilation: usize,
        [pad_left, pad_right]: [usize; 2],
        slope: f32,
        residual: bool,
    ) -> Option<Self> {
        if !(0.0..=1.0).contains(&slope)
            || c_out == 0
            || c_in == 0
            || kernel == 0
            || dilation == 0
            || c_out % CO_BLOCK != 0
            || weights.len() != c_out * c_in * kernel
            || bias.is_some_and(|b| b.len() != c_out)
            || (residual && (c_in != c_out || pad_left + pad_right != dilation * (kernel - 1)))
            || !supported()
        {
            return None;
        }
        let mut packed = vec![0.0; weights.len()];
        for co in 0..c_out {
            for ci in 0..c_in {
                for k in 0..kernel {
                    let (block, lane) = (co / CO_BLOCK, co % CO_BLOCK);
                    packed[((block * c_in + ci) * kernel + k) * CO_BLOCK + lane] =
                        weights[(co * c_in + ci) * kernel + k];
                }
            }
        }
        Some(Conv1d {
            c_in,
            c_out,
            kernel,
            dilation,
            pad_left,
            pad_right,
            slope,
            residual,
            bias: bias.map_or_else(|| vec![0.0; c_out], <[f32]>::to_vec),
            packed,
            arch: pulp::Arch::new(),
        })
    }

    pub fn c_in(&self) -> usize {
        self.c_in
    }

    pub fn c_out(&self) -> usize {
        self.c_out
    }

    /// Output steps one task takes: a multiple of the tile, its window
    /// within [`WINDOW`].
    pub fn chunk(&self) -> usize {
        (WINDOW / self.c_in / TILE).max(1) * TILE
    }

    /// Output steps for `len` input steps (`None` if the kernel is longer
    /// than the padded input).
    pub fn out_len(&self, len: usize) -> Option<usize> {
        (len + self.pad_left + self.pad_right).checked_sub(self.dilation * (self.kernel - 1))
    }

    /// Output steps `from..from + rows[0].len()` of `x` (`[c_in][len]`),
    /// one output channel's piece of them in each of `rows` (`c_out` of
    /// them, at most [`Conv1d::chunk`] long): tasks write their columns of
    /// the output side by side.
    pub fn run_chunk(&self, x: &[f32], len: usize, from: usize, rows: &mut [&mut [f32]]) {
        assert!(x.len() == self.c_in * len && rows.len() == self.c_out);
        let out_cols = rows[0].len();
        let span = self.dilation * (self.kernel - 1);
        let tiles = out_cols.div_ceil(TILE);
        // The input window these columns read, activated and zero-padded:
        // window column u is input step from + u - pad_left.
        let wl = tiles * TILE + span;
        let mut window = vec![0.0f32; self.c_in * wl];
        let start = from.saturating_sub(self.pad_left);
        let end = (from + wl).saturating_sub(self.pad_left).min(len);
        if start < end {
            let at = start + self.pad_left - from;
            for (row, dst) in x.chunks_exact(len).zip(window.chunks_exact_mut(wl)) {
                for (d, &v) in dst[at..at + end - start].iter_mut().zip(&row[start..end]) {
                    *d = v.max(v * self.slope);
                }
            }
        }
        self.arch.dispatch(Tiles {
            conv: self,
            x,
            len,
            from,
            window: &window,
            wl,
            rows,
        });
    }

    /// Every tile of a chunk, from its window.
    #[inline(always)]
    fn tiles(
        &self,
        x: &[f32],
        len: usize,
        from: usize,
        window: &[f32],
        wl: usize,
        rows: &mut [&mut [f32]],
    ) {
        let out_cols = rows[0].len();
        let per_block = self.c_in * self.kernel * CO_BLOCK;
        for col in (0..out_cols).step_by(TILE) {
            let cols = (out_cols - col).min(TILE);
            for (block, (w, out)) in self
                .packed
                .chunks_exact(per_block)
                .zip(rows.chunks_exact_mut(CO_BLOCK))
                .enumerate()
            {
                let acc = self.tile(w, &window[col..], wl);
                for (lane, (sums, out)) in acc.iter().zip(out.iter_mut()).enumerate() {
                    let co = block * CO_BLOCK + lane;
                    let out = &mut out[col..col + cols];
                    let b = self.bias[co];
                    if self.residual {
                        let res = &x[co * len + from + col..][..cols];
                        for ((o, &v), &r) in out.iter_mut().zip(sums).zip(res) {
                            *o = v + b + r;
                        }
                    } else {
                        for (o, &v) in out.iter_mut().zip(sums) {
                            *o = v + b;
                        }
                    }
                }
            }
        }
    }

    /// One tile: the sums for [`CO_BLOCK`] output channels (weights `w`,
    /// `[c_in][kernel][CO_BLOCK]`) at [`TILE`] steps from the window's
    /// first column. Written for the compiler to keep the sums in vector
    /// registers (two channels × six vectors of eight on AVX2) and use
    /// fused multiply-adds.
    #[inline(always)]
    fn tile(&self, w: &[f32], window: &[f32], wl: usize) -> [[f32; TILE]; CO_BLOCK] {
        let mut a0 = [0.0f32; TILE];
        let mut a1 = [0.0f32; TILE];
        let reach = self.dilation * (self.kernel - 1) + TILE;
        for (wc, row) in w
            .chunks_exact(self.kernel * CO_BLOCK)
            .zip(window.chunks(wl))
        {
            // The kernel's taps: windows of a tile, a dilation apart.
            let taps = row[..reach].windows(TILE).step_by(self.dilation);
            for (wk, xs) in wc.chunks_exact(CO_BLOCK).zip(taps) {
                let xs: &[f32; TILE] = xs.try_into().expect("a tile");
                let (w0, w1) = (wk[0], wk[1]);
                for i in 0..TILE {
                    a0[i] = w0.mul_add(xs[i], a0[i]);
                    a1[i] = w1.mul_add(xs[i], a1[i]);
                }
            }
        }
        [a0, a1]
    }
}

/// A chunk's tiles, compiled for each instruction set `pulp` dispatches to
/// (AVX2 + FMA where the machine has them).
struct Tiles<'a, 'r> {
    conv: &'a Conv1d,
    x: &'a [f32],
    len: usize,
    from: usize,
    window: &'a [f32],
    wl: usize,
    rows: &'a mut [&'r mut [f32]],
}

impl pulp::WithSimd for Tiles<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        self.conv
            .tiles(self.x, self.len, self.from, self.window, self.wl, self.rows);
    }
}

/// Whether this machine runs [`Conv1d`] (AVX2 and FMA).
pub fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The convolution as its definition reads, in f64.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        x: &[f32],
        len: usize,
        w: &[f32],
        b: &[f32],
        [c_out, c_in, kernel]: [usize; 3],
        dilation: usize,
        [pad_left, pad_right]: [usize; 2],
        slope: f32,
        residual: bool,
    ) -> Vec<f32> {
        let out_len = len + pad_left + pad_right - dilation * (kernel - 1);
        let mut y = vec![0.0; c_out * out_len];
        for co in 0..c_out {
            for t in 0..out_len {
                let mut s = f64::from(b[co]);
                for ci in 0..c_in {
                    for k in 0..kernel {
                        let at = (t + k * dilation) as isize - pad_left as isize;
                        if (0..len as isize).contains(&at) {
                            let v = x[ci * len + at as usize];
                            let v = if v < 0.0 { v * slope } else { v };
                            s += f64::from(w[(co * c_in + ci) * kernel + k]) * f64::from(v);
                        }
                    }
                }
                if residual {
                    s += f64::from(x[co * len + t]);
                }
                y[co * out_len + t] = s as f32;
            }
        }
        y
    }

    fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 2001) as f32 - 1000.0) * scale / 1000.0)
            .collect()
    }

    #[test]
    fn chunks_compute_the_convolution_by_its_definition() {
        // Shapes of Piper's residual blocks, and edges: inputs shorter than
        // a tile or than the kernel's reach, uneven padding, no residual,
        // no activation.
        for (c_out, c_in, kernel, dilation, pads, slope, residual, len) in [
            (32, 32, 7, 12, [36, 36], 0.1, true, 1000),
            (8, 8, 3, 1, [1, 1], 0.1, true, 50),
            (6, 4, 5, 2, [0, 3], 1.0, false, 37),
            (4, 3, 2, 1, [1, 1], 0.2, false, 1),
            (2, 5, 7, 3, [9, 9], 0.0, false, 3),
        ] {
            let (w, b, x) = (
                values(c_out * c_in * kernel, 1, 0.3),
                values(c_out, 2, 1.0),
                values(c_in * len, 3, 2.0),
            );
            let dims = [c_out, c_in, kernel];
            let conv = Conv1d::new(&w, Some(&b), dims, dilation, pads, slope, residual)
                .expect("a shape it computes");
            let out_len = conv.out_len(len).expect("output");
            let mut y = vec![f32::NAN; c_out * out_len];
            let chunk = conv.chunk();
            let mut tasks: Vec<Vec<&mut [f32]>> =
                (0..out_len.div_ceil(chunk)).map(|_| Vec::new()).collect();
            for row in y.chunks_mut(out_len) {
                for (piece, task) in row.chunks_mut(chunk).zip(&mut tasks) {
                    task.push(piece);
                }
            }
            for (i, rows) in tasks.iter_mut().enumerate().rev() {
                conv.run_chunk(&x, len, i * chunk, rows);
            }
            let want = reference(&x, len, &w, &b, dims, dilation, pads, slope, residual);
            for (i, (&got, &want)) in y.iter().zip(&want).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                    "{dims:?} d{dilation} at {i}: {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn shapes_it_does_not_compute_are_refused() {
        let w = vec![0.0; 3 * 4 * 3];
        // Odd output channels; a residual whose channels or length differ.
        assert!(Conv1d::new(&w, None, [3, 4, 3], 1, [1, 1], 0.1, false).is_none());
        let w = vec![0.0; 4 * 2 * 3];
        assert!(Conv1d::new(&w, None, [4, 2, 3], 1, [1, 1], 0.1, true).is_none());
        let w = vec![0.0; 4 * 4 * 3];
        assert!(Conv1d::new(&w, None, [4, 4, 3], 1, [0, 0], 0.1, true).is_none());
        // A slope outside 0..=1, weights of the wrong size.
        assert!(Conv1d::new(&w, None, [4, 4, 3], 1, [1, 1], 1.5, false).is_none());
        assert!(Conv1d::new(&w[1..], None, [4, 4, 3], 1, [1, 1], 0.1, false).is_none());
    }
}
