//! The Euler samplers of k-diffusion (Karras et al. 2022, as in diffusers'
//! `EulerDiscreteScheduler` and `EulerAncestralDiscreteScheduler`), set up
//! from a model's `scheduler/scheduler_config.json`: its noise schedule
//! (β range and shape, training steps), timestep spacing and prediction
//! type.

use serde::Deserialize;

use mediagen_core::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spacing {
    Leading,
    Trailing,
    Linspace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prediction {
    Epsilon,
    VPrediction,
}

/// The parts of `scheduler_config.json` the samplers use (diffusers'
/// names; defaults are Stable Diffusion's).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct SchedulerConfig {
    #[serde(rename = "_class_name")]
    pub class_name: String,
    pub num_train_timesteps: usize,
    pub beta_start: f64,
    pub beta_end: f64,
    pub beta_schedule: String,
    pub timestep_spacing: Spacing,
    pub steps_offset: usize,
    pub prediction_type: Prediction,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            class_name: "EulerDiscreteScheduler".into(),
            num_train_timesteps: 1000,
            beta_start: 0.000_85,
            beta_end: 0.012,
            beta_schedule: "scaled_linear".into(),
            timestep_spacing: Spacing::Leading,
            steps_offset: 1,
            prediction_type: Prediction::Epsilon,
        }
    }
}

impl SchedulerConfig {
    /// Ancestral sampling (fresh noise at every step) when the model's
    /// scheduler is the ancestral one.
    pub fn ancestral(&self) -> bool {
        self.class_name.contains("Ancestral")
    }
}

/// The sampling plan for a number of steps.
#[derive(Debug, Clone)]
pub struct Euler {
    /// Model timesteps, high to low.
    pub timesteps: Vec<f64>,
    /// Noise levels at each step, with a final 0.
    pub sigmas: Vec<f64>,
    pub prediction: Prediction,
    pub ancestral: bool,
    /// Standard deviation of the starting noise.
    pub init_sigma: f64,
}

fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![a];
    }
    (0..n)
        .map(|i| a + (b - a) * i as f64 / (n - 1) as f64)
        .collect()
}

/// Linear interpolation of `ys` (at 0, 1, 2, …) at `x`.
fn interp(ys: &[f64], x: f64) -> f64 {
    let x = x.clamp(0.0, (ys.len() - 1) as f64);
    let i = (x.floor() as usize).min(ys.len() - 2);
    let f = x - i as f64;
    ys[i] * (1.0 - f) + ys[i + 1] * f
}

impl Euler {
    pub fn new(config: &SchedulerConfig, steps: usize) -> Result<Self, String> {
        let n = config.num_train_timesteps.max(2);
        let steps = steps.clamp(1, n);
        let betas: Vec<f64> = match config.beta_schedule.as_str() {
            "scaled_linear" => linspace(config.beta_start.sqrt(), config.beta_end.sqrt(), n)
                .into_iter()
                .map(|b| b * b)
                .collect(),
            "linear" => linspace(config.beta_start, config.beta_end, n),
            other => return Err(format!("beta_schedule {other:?} is not supported")),
        };
        let mut alpha_bar = 1.0;
        let all_sigmas: Vec<f64> = betas
            .iter()
            .map(|b| {
                alpha_bar *= 1.0 - b;
                ((1.0 - alpha_bar) / alpha_bar).sqrt()
            })
            .collect();
        let timesteps: Vec<f64> = match config.timestep_spacing {
            Spacing::Linspace => linspace(0.0, (n - 1) as f64, steps)
                .into_iter()
                .rev()
                .collect(),
            Spacing::Leading => {
                let ratio = n / steps;
                (0..steps)
                    .rev()
                    .map(|i| (i * ratio + config.steps_offset) as f64)
                    .collect()
            }
            Spacing::Trailing => {
                let ratio = n as f64 / steps as f64;
                (0..steps)
                    .map(|i| (n as f64 - i as f64 * ratio).round() - 1.0)
                    .collect()
            }
        };
        let mut sigmas: Vec<f64> = timesteps.iter().map(|&t| interp(&all_sigmas, t)).collect();
        sigmas.push(0.0);
        let max = sigmas[0];
        let init_sigma = match config.timestep_spacing {
            Spacing::Linspace | Spacing::Trailing => max,
            Spacing::Leading => (max * max + 1.0).sqrt(),
        };
        Ok(Self {
            timesteps,
            sigmas,
            prediction: config.prediction_type,
            ancestral: config.ancestral(),
            init_sigma,
        })
    }

    /// The factor the model's input is multiplied by at step `i`.
    pub fn input_scale(&self, i: usize) -> f32 {
        (1.0 / (self.sigmas[i] * self.sigmas[i] + 1.0).sqrt()) as f32
    }

    /// One step: from `sample` at noise level `sigmas[i]` and the model's
    /// output, the sample at `sigmas[i + 1]`. Ancestral sampling adds fresh
    /// noise from `rng`.
    pub fn step(&self, i: usize, sample: &mut [f32], model_output: &[f32], rng: &mut Rng) {
        let sigma = self.sigmas[i];
        let next = self.sigmas[i + 1];
        let (down, up) = if self.ancestral && next > 0.0 {
            let up = (next * next * (sigma * sigma - next * next) / (sigma * sigma)).sqrt();
            ((next * next - up * up).sqrt(), up)
        } else {
            (next, 0.0)
        };
        let dt = (down - sigma) as f32;
        let s = sigma as f32;
        let c = (sigma * sigma + 1.0) as f32;
        for (x, &out) in sample.iter_mut().zip(model_output) {
            let denoised = match self.prediction {
                Prediction::Epsilon => *x - s * out,
                Prediction::VPrediction => out * (-s / c.sqrt()) + *x / c,
            };
            let derivative = (*x - denoised) / s;
            *x += derivative * dt;
            if up > 0.0 {
                *x += rng.gauss() * up as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_diffusion_noise_levels() {
        // Known values of SD's scaled-linear schedule: σ(999) ≈ 14.6146,
        // σ(0) ≈ 0.0292.
        let config = SchedulerConfig {
            timestep_spacing: Spacing::Linspace,
            ..SchedulerConfig::default()
        };
        let e = Euler::new(&config, 1000).unwrap();
        assert!((e.sigmas[0] - 14.6146).abs() < 1e-3, "{}", e.sigmas[0]);
        assert!((e.sigmas[999] - 0.0292).abs() < 1e-3, "{}", e.sigmas[999]);
        assert_eq!(e.sigmas[1000], 0.0);
        assert_eq!(e.init_sigma, e.sigmas[0]);
    }

    #[test]
    fn spacings_choose_diffusers_timesteps() {
        let mut config = SchedulerConfig::default();
        assert_eq!(
            Euler::new(&config, 4).unwrap().timesteps,
            vec![751.0, 501.0, 251.0, 1.0]
        );
        config.timestep_spacing = Spacing::Trailing;
        assert_eq!(
            Euler::new(&config, 4).unwrap().timesteps,
            vec![999.0, 749.0, 499.0, 249.0]
        );
        // SD-Turbo's single step starts at the top of the schedule.
        let one = Euler::new(&config, 1).unwrap();
        assert_eq!(one.timesteps, vec![999.0]);
        assert_eq!(one.sigmas.len(), 2);
    }

    /// With a model that predicts the noise exactly, one Euler step from
    /// any level lands on the clean sample, for both prediction types.
    #[test]
    fn a_perfect_model_is_denoised_in_one_step() {
        for prediction in [Prediction::Epsilon, Prediction::VPrediction] {
            let config = SchedulerConfig {
                prediction_type: prediction,
                timestep_spacing: Spacing::Trailing,
                ..SchedulerConfig::default()
            };
            let e = Euler::new(&config, 1).unwrap();
            let s = e.sigmas[0] as f32;
            let clean = [0.5f32, -0.25, 0.8];
            let noise = [1.0f32, -0.3, 0.2];
            let mut x: Vec<f32> = clean.iter().zip(&noise).map(|(c, n)| c + s * n).collect();
            let out: Vec<f32> = match prediction {
                Prediction::Epsilon => noise.to_vec(),
                // v = α·ε − σ_t·x0 in the variance-preserving scale.
                Prediction::VPrediction => {
                    let a = 1.0 / (s * s + 1.0).sqrt();
                    clean
                        .iter()
                        .zip(&noise)
                        .map(|(c, n)| a * n - a * s * c)
                        .collect()
                }
            };
            e.step(0, &mut x, &out, &mut Rng::new(1));
            for (got, want) in x.iter().zip(clean) {
                assert!((got - want).abs() < 1e-3, "{prediction:?}: {got} vs {want}");
            }
        }
    }
}
