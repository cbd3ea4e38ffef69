//! Blends of style tables, and the weights of the blend whose voice should
//! come nearest a target.
//!
//! The model: a blend `Σ wᵢ·Sᵢ` of style tables (weights summing to one)
//! sounds, to the speaker encoder, about like the same blend of what each
//! table sounds like, `Σ wᵢ·eᵢ`. It is only true near the tables, so the
//! weights are pulled toward an anchor (the best table so far) by a ridge
//! term; the weaker the pull, the longer the step.

/// `Σ weights[i] · tables[i]`.
pub fn mix(tables: &[&[f32]], weights: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0f32; tables.first().map_or(0, |t| t.len())];
    for (table, &w) in tables.iter().zip(weights) {
        if w == 0.0 {
            continue;
        }
        for (o, &x) in out.iter_mut().zip(*table) {
            *o += w * x;
        }
    }
    out
}

/// The weights `w` (summing to one) that minimise
/// `|Σ wᵢ·eᵢ − target|² + pull·|w − anchor|²`: the blend whose voice the
/// linear model puts nearest `target`, no further from `anchor` than
/// `pull` allows. `None` when the system is singular.
pub fn toward(
    embeddings: &[&[f32]],
    target: &[f32],
    anchor: &[f32],
    pull: f64,
) -> Option<Vec<f32>> {
    let n = embeddings.len();
    if n == 0 || anchor.len() != n {
        return None;
    }
    let dot = |a: &[f32], b: &[f32]| -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    };
    // A = EᵀE + pull·I, b = Eᵀt + pull·anchor.
    let mut a = vec![vec![0.0f64; n]; n];
    let mut b = vec![0.0f64; n];
    for i in 0..n {
        for j in i..n {
            let v = dot(embeddings[i], embeddings[j]) + if i == j { pull } else { 0.0 };
            a[i][j] = v;
            a[j][i] = v;
        }
        b[i] = dot(embeddings[i], target) + pull * f64::from(anchor[i]);
    }
    // With Σw = 1 (a Lagrange multiplier μ): w = A⁻¹(b + μ·1),
    // μ = (1 − 1ᵀA⁻¹b) / 1ᵀA⁻¹1.
    let ab = solve(a.clone(), b)?;
    let a1 = solve(a, vec![1.0; n])?;
    let (sum_ab, sum_a1): (f64, f64) = (ab.iter().sum(), a1.iter().sum());
    if sum_a1.abs() < 1e-12 {
        return None;
    }
    let mu = (1.0 - sum_ab) / sum_a1;
    Some(
        ab.iter()
            .zip(&a1)
            .map(|(x, y)| (x + mu * y) as f32)
            .collect(),
    )
}

/// Solves `a·x = b` (Gaussian elimination with partial pivoting).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for (offset, row) in lower.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            if f == 0.0 {
                continue;
            }
            for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[col + 1 + offset] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    Some(x)
}

/// The range each number of a style table takes over the stock voices,
/// widened by a margin: a table searched for stays inside it, where the
/// model was trained to speak.
#[derive(Debug, Clone)]
pub struct Bounds {
    low: Vec<f32>,
    high: Vec<f32>,
    /// Each number's spread over the stock voices.
    pub spread: Vec<f32>,
}

impl Bounds {
    /// Bounds from the stock tables, widened by `margin` times each
    /// number's range.
    pub fn of(tables: &[&[f32]], margin: f32) -> Self {
        let len = tables.first().map_or(0, |t| t.len());
        let mut low = vec![f32::INFINITY; len];
        let mut high = vec![f32::NEG_INFINITY; len];
        let mut sum = vec![0.0f64; len];
        let mut squares = vec![0.0f64; len];
        for table in tables {
            for (i, &x) in table.iter().enumerate() {
                low[i] = low[i].min(x);
                high[i] = high[i].max(x);
                sum[i] += f64::from(x);
                squares[i] += f64::from(x) * f64::from(x);
            }
        }
        let count = tables.len().max(1) as f64;
        let spread = sum
            .iter()
            .zip(&squares)
            .map(|(s, q)| ((q / count - (s / count).powi(2)).max(0.0)).sqrt() as f32)
            .collect();
        for i in 0..len {
            let wide = (high[i] - low[i]) * margin;
            low[i] -= wide;
            high[i] += wide;
        }
        Self { low, high, spread }
    }

    /// The spread of each of a row's `width` numbers, averaged over the
    /// rows (the scale of a step that moves every row alike).
    pub fn row_spread(&self, width: usize) -> Vec<f32> {
        let rows = (self.spread.len() / width.max(1)).max(1);
        (0..width)
            .map(|k| self.spread.iter().skip(k).step_by(width).sum::<f32>() / rows as f32)
            .collect()
    }

    /// `table` with every number brought inside the bounds.
    pub fn clamp(&self, mut table: Vec<f32>) -> Vec<f32> {
        for ((x, lo), hi) in table.iter_mut().zip(&self.low).zip(&self.high) {
            *x = x.clamp(*lo, *hi);
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_reach_a_target_inside_the_span() {
        // Three embeddings; the target is 0.5·e0 + 0.25·e1 + 0.25·e2.
        let e = [
            vec![1.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
        ];
        let refs: Vec<&[f32]> = e.iter().map(|v| v.as_slice()).collect();
        let w = toward(&refs, &[0.5, 0.25, 0.25], &[1.0, 0.0, 0.0], 1e-9).unwrap();
        for (got, want) in w.iter().zip([0.5, 0.25, 0.25]) {
            assert!((got - want).abs() < 1e-4, "{w:?}");
        }
        // A strong pull keeps the weights at the anchor.
        let w = toward(&refs, &[0.0, 0.0, 1.0], &[1.0, 0.0, 0.0], 1e6).unwrap();
        assert!((w[0] - 1.0).abs() < 1e-3, "{w:?}");
        assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn blends_mix_and_bounds_clamp() {
        let (a, b) = (vec![0.0, 2.0], vec![2.0, 4.0]);
        assert_eq!(mix(&[&a, &b], &[0.5, 0.5]), vec![1.0, 3.0]);
        let bounds = Bounds::of(&[&a, &b], 0.25);
        assert_eq!(bounds.clamp(vec![-5.0, 5.0]), vec![-0.5, 4.5]);
        assert_eq!(bounds.spread, vec![1.0, 1.0]);
        assert_eq!(bounds.row_spread(1), vec![1.0]);
    }
}
