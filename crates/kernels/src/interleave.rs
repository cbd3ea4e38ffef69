//! The phases of a transposed convolution put back in time order.

/// `out[c, i] = phases[c · stride + r, m]` where `i + trim_start = m ·
/// stride + r`: one channel of `Interleave`, its phases given as rows of
/// `len` steps.
pub fn interleave_into(
    phases: &[f32],
    len: usize,
    stride: usize,
    trim_start: usize,
    out: &mut [f32],
) {
    let total = out.len();
    let at = |a: usize| phases[(a % stride) * len + a / stride];
    // Up to the first whole step, then step by step (one value of each
    // phase), then what is left: no division per value in between.
    let head = ((stride - trim_start % stride) % stride).min(total);
    let (first, rest) = out.split_at_mut(head);
    for (i, o) in first.iter_mut().enumerate() {
        *o = at(trim_start + i);
    }
    let mut groups = rest.chunks_exact_mut(stride);
    for (m, group) in ((trim_start + head) / stride..).zip(&mut groups) {
        for (r, o) in group.iter_mut().enumerate() {
            *o = phases[r * len + m];
        }
    }
    let tail = groups.into_remainder();
    let from = trim_start + total - tail.len();
    for (i, o) in tail.iter_mut().enumerate() {
        *o = at(from + i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_puts_the_phases_in_time_order() {
        let (len, stride) = (7, 3);
        let phases: Vec<f32> = (0..len * stride).map(|v| v as f32).collect();
        for trim_start in 0..5 {
            for n in [0, 1, 2, 5, len * stride - trim_start] {
                let mut out = vec![-1.0; n];
                interleave_into(&phases, len, stride, trim_start, &mut out);
                let want: Vec<f32> = (0..n)
                    .map(|i| {
                        let a = i + trim_start;
                        phases[(a % stride) * len + a / stride]
                    })
                    .collect();
                assert_eq!(out, want, "trim {trim_start}, {n} values");
            }
        }
    }
}
