//! Tiny latent-diffusion models with random weights, in the same layout
//! and with the same input and output names as real ones, so the whole
//! neural path (tokenizer, text encoder, UNet under the sampler, VAE
//! decoder, vocoder) runs in tests and benchmarks without any download.
//! Their pictures and sounds are noise-like: only the machinery is real.
//!
//! `mediagen models tiny <dir>` writes both (`image/tiny-sd`,
//! `sound/tiny-audioldm`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::json;

use mediagen_bpe::Flavour;
use mediagen_onnx::writer::{Attr, Dim, Elem, Graph};

/// Text encoder width, UNet channels, tokens per prompt.
const HIDDEN: i64 = 32;
const CHANNELS: i64 = 32;
const TOKENS: i64 = 77;
/// Pooled text embedding width of the sound model.
const EMBED: i64 = 16;
/// Sound model framing: 16 kHz, 160 samples a frame, 16 mel bins.
const SAMPLE_RATE: i64 = 16_000;
const HOP: i64 = 160;
const MEL_BINS: i64 = 16;
/// Latent scaling factors (Stable Diffusion's and AudioLDM's).
const IMAGE_SCALING: f32 = 0.18215;
const SOUND_SCALING: f32 = 0.9227;

/// Words the tiny vocabularies hold whole; anything else is spelt in bytes.
const WORDS: &[&str] = &[
    "a", "cat", "dog", "red", "blue", "hat", "on", "the", "beach", "at", "sunset", "rain", "heavy",
    "wind", "birds", "piano", "music", "soft", "distant", "photo", "of",
];

fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes)
}

fn write_json(path: &Path, value: &serde_json::Value) -> std::io::Result<()> {
    write(path, serde_json::to_string_pretty(value)?.as_bytes())
}

/// vocab.json and merges.txt spelling `WORDS` by left-to-right merges.
fn tokenizer(dir: &Path, flavour: Flavour) -> std::io::Result<i64> {
    let specials: &[&str] = match flavour {
        Flavour::Clip => &["<|startoftext|>", "<|endoftext|>"],
        Flavour::Gpt2 => &["<s>", "<pad>", "</s>", "<unk>"],
    };
    let end = |s: &str| match flavour {
        Flavour::Clip => format!("{s}</w>"),
        Flavour::Gpt2 => s.to_owned(),
    };
    let mut tokens: Vec<String> = specials.iter().map(|s| s.to_string()).collect();
    let mut seen: BTreeSet<String> = tokens.iter().cloned().collect();
    let mut add = |t: String, tokens: &mut Vec<String>| {
        if seen.insert(t.clone()) {
            tokens.push(t);
        }
    };
    let chars = mediagen_bpe::byte_chars();
    for &c in &chars {
        add(c.to_string(), &mut tokens);
        if flavour == Flavour::Clip {
            add(end(&c.to_string()), &mut tokens);
        }
    }
    let mut merges = vec!["#version: 0.2".to_owned()];
    for word in WORDS {
        let spelt: Vec<String> = match flavour {
            Flavour::Clip => word.chars().map(String::from).collect(),
            // A word after a space starts with Ġ.
            Flavour::Gpt2 => std::iter::once("Ġ".to_owned())
                .chain(word.chars().map(String::from))
                .collect(),
        };
        let n = spelt.len();
        let piece = |i: usize| {
            if i == n - 1 {
                end(&spelt[i])
            } else {
                spelt[i].clone()
            }
        };
        let mut left = piece(0);
        for i in 1..n {
            let right = piece(i);
            let merged = format!("{left}{right}");
            let line = format!("{left} {right}");
            if !merges.contains(&line) {
                merges.push(line);
            }
            add(merged.clone(), &mut tokens);
            left = merged;
        }
    }
    let vocab: BTreeMap<&str, usize> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i))
        .collect();
    write_json(&dir.join("tokenizer/vocab.json"), &json!(vocab))?;
    write(
        &dir.join("tokenizer/merges.txt"),
        merges.join("\n").as_bytes(),
    )?;
    let config = match flavour {
        Flavour::Clip => json!({"tokenizer_class": "CLIPTokenizer", "model_max_length": TOKENS,
                                "pad_token": "<|endoftext|>"}),
        Flavour::Gpt2 => json!({"tokenizer_class": "RobertaTokenizer", "model_max_length": TOKENS}),
    };
    write_json(&dir.join("tokenizer/tokenizer_config.json"), &config)?;
    Ok(tokens.len() as i64)
}

const BATCH: Dim = Dim::Named("batch");

/// Token embeddings plus positions, one self-attention block and an MLP.
fn encoder_body(g: &mut Graph, ids: &str, vocab: i64) -> String {
    let table = g.weight(&[vocab, HIDDEN], 0.5);
    let emb = g.op("Gather", &[&table, ids], &[]);
    let pos = g.weight(&[TOKENS, HIDDEN], 0.1);
    let x = g.op("Add", &[&emb, &pos], &[]);
    let q = g.linear(&x, HIDDEN, HIDDEN);
    let k = g.linear(&x, HIDDEN, HIDDEN);
    let v = g.linear(&x, HIDDEN, HIDDEN);
    let a = g.attention(&q, &k, &v, HIDDEN);
    let a = g.linear(&a, HIDDEN, HIDDEN);
    let h = g.op("Add", &[&x, &a], &[]);
    let h = g.layer_norm(&h, HIDDEN);
    let m = g.linear(&h, HIDDEN, 2 * HIDDEN);
    let m = g.silu(&m);
    let m = g.linear(&m, 2 * HIDDEN, HIDDEN);
    let h = g.op("Add", &[&h, &m], &[]);
    g.layer_norm(&h, HIDDEN)
}

/// CLIP-like: `input_ids` (int32) → `last_hidden_state` [B, 77, 32].
fn clip_text_encoder(vocab: i64, seed: u64) -> Vec<u8> {
    let mut g = Graph::new("text_encoder", seed);
    let ids = g.input("input_ids", Elem::I32, &[BATCH, Dim::Fixed(TOKENS)]);
    let h = encoder_body(&mut g, &ids, vocab);
    g.op_into("Identity", &[&h], "last_hidden_state", &[]);
    g.output(
        "last_hidden_state",
        Elem::F32,
        &[BATCH, Dim::Fixed(TOKENS), Dim::Fixed(HIDDEN)],
    );
    g.model()
}

/// CLAP-like: `input_ids`, `attention_mask` (int64) → the masked mean of
/// the tokens, projected and L2-normalised: `text_embeds` [B, 16].
fn clap_text_encoder(vocab: i64, seed: u64) -> Vec<u8> {
    let mut g = Graph::new("text_encoder", seed);
    let ids = g.input("input_ids", Elem::I64, &[BATCH, Dim::Fixed(TOKENS)]);
    let mask = g.input("attention_mask", Elem::I64, &[BATCH, Dim::Fixed(TOKENS)]);
    let h = encoder_body(&mut g, &ids, vocab);
    let m = g.op("Cast", &[&mask], &[Attr::Int("to", Elem::F32 as i64)]);
    let last = g.ints(&[1], &[-1]);
    let m3 = g.op("Unsqueeze", &[&m, &last], &[]);
    let masked = g.op("Mul", &[&h, &m3], &[]);
    let tokens_axis = g.ints(&[1], &[1]);
    let sum = g.op(
        "ReduceSum",
        &[&masked, &tokens_axis],
        &[Attr::Int("keepdims", 0)],
    );
    let count = g.op(
        "ReduceSum",
        &[&m3, &tokens_axis],
        &[Attr::Int("keepdims", 0)],
    );
    let mean = g.op("Div", &[&sum, &count], &[]);
    let p = g.linear(&mean, HIDDEN, EMBED);
    let sq = g.op("Mul", &[&p, &p], &[]);
    let norm = g.op("ReduceSum", &[&sq, &last], &[Attr::Int("keepdims", 1)]);
    let norm = g.op("Sqrt", &[&norm], &[]);
    g.op_into("Div", &[&p, &norm], "text_embeds", &[]);
    g.output("text_embeds", Elem::F32, &[BATCH, Dim::Fixed(EMBED)]);
    g.model()
}

/// Sinusoidal timestep embedding → MLP → [B, C, 1, 1].
fn time_embedding(g: &mut Graph, timestep: &str, extra: Option<&str>) -> String {
    let t = g.op("Cast", &[timestep], &[Attr::Int("to", Elem::F32 as i64)]);
    let one = g.ints(&[1], &[1]);
    let t = g.op("Unsqueeze", &[&t, &one], &[]);
    let freqs: Vec<f32> = (0..8)
        .map(|i| (-(i as f32) * 10_000f32.ln() / 8.0).exp())
        .collect();
    let freqs = g.floats(&[1, 8], &freqs);
    let f = g.op("Mul", &[&t, &freqs], &[]);
    let sin = g.op("Sin", &[&f], &[]);
    let cos = g.op("Cos", &[&f], &[]);
    let emb = g.op("Concat", &[&sin, &cos], &[Attr::Int("axis", 1)]);
    let mut temb = g.linear(&emb, 16, CHANNELS);
    if let Some(class) = extra {
        let c = g.linear(class, EMBED, CHANNELS);
        temb = g.op("Add", &[&temb, &c], &[]);
    }
    let temb = g.silu(&temb);
    let temb = g.linear(&temb, CHANNELS, CHANNELS);
    let axes = g.ints(&[2], &[2, 3]);
    g.op("Unsqueeze", &[&temb, &axes], &[])
}

/// Convolution in, time conditioning, attention over the positions (to
/// the text tokens when given, else to themselves), convolution out.
fn unet(latent: i64, cross: bool, seed: u64) -> Vec<u8> {
    let mut g = Graph::new("unet", seed);
    let spatial = [
        BATCH,
        Dim::Fixed(latent),
        Dim::Named("height"),
        Dim::Named("width"),
    ];
    let sample = g.input("sample", Elem::F32, &spatial);
    let timestep = g.input("timestep", Elem::I64, &[Dim::Fixed(1)]);
    let (context, class) = if cross {
        let c = g.input(
            "encoder_hidden_states",
            Elem::F32,
            &[BATCH, Dim::Fixed(TOKENS), Dim::Fixed(HIDDEN)],
        );
        (Some(c), None)
    } else {
        let c = g.input("class_labels", Elem::F32, &[BATCH, Dim::Fixed(EMBED)]);
        (None, Some(c))
    };
    let temb = time_embedding(&mut g, &timestep, class.as_deref());
    let h = g.conv2d(&sample, latent, CHANNELS, 3);
    let h = g.op("Add", &[&h, &temb], &[]);
    let h = g.silu(&h);
    let flat_shape = g.ints(&[3], &[0, 0, -1]);
    let flat = g.op("Reshape", &[&h, &flat_shape], &[]);
    let seq = g.op("Transpose", &[&flat], &[Attr::Ints("perm", vec![0, 2, 1])]);
    let q = g.linear(&seq, CHANNELS, CHANNELS);
    let (k, v) = match &context {
        Some(c) => (g.linear(c, HIDDEN, CHANNELS), g.linear(c, HIDDEN, CHANNELS)),
        None => (
            g.linear(&seq, CHANNELS, CHANNELS),
            g.linear(&seq, CHANNELS, CHANNELS),
        ),
    };
    let a = g.attention(&q, &k, &v, CHANNELS);
    let a = g.linear(&a, CHANNELS, CHANNELS);
    let a = g.op("Transpose", &[&a], &[Attr::Ints("perm", vec![0, 2, 1])]);
    let shape = g.op("Shape", &[&h], &[]);
    let a = g.op("Reshape", &[&a, &shape], &[]);
    let h = g.op("Add", &[&h, &a], &[]);
    let out = g.conv2d(&h, CHANNELS, latent, 3);
    g.op_into("Identity", &[&out], "out_sample", &[]);
    g.output("out_sample", Elem::F32, &spatial);
    g.model()
}

/// Latents (divided by `scaling` by the pipeline) → `scale`× larger
/// `channels`-plane output (pixels in [-1, 1], or a one-plane mel
/// spectrogram), upsampled bilinearly.
fn vae_decoder(latent: i64, channels: i64, scale: i64, scaling: f32, seed: u64) -> Vec<u8> {
    let mut g = Graph::new("vae_decoder", seed);
    let z = g.input(
        "latent_sample",
        Elem::F32,
        &[
            BATCH,
            Dim::Fixed(latent),
            Dim::Named("height"),
            Dim::Named("width"),
        ],
    );
    let unscale = g.floats(&[], &[scaling]);
    let z = g.op("Mul", &[&z, &unscale], &[]);
    let h = g.conv2d(&z, latent, CHANNELS, 3);
    let h = g.silu(&h);
    let scales = g.floats(&[4], &[1.0, 1.0, scale as f32, scale as f32]);
    let h = g.op("Resize", &[&h, "", &scales], &[Attr::Str("mode", "linear")]);
    let h = g.conv2d(&h, CHANNELS, channels, 3);
    g.op_into("Tanh", &[&h], "sample", &[]);
    g.output(
        "sample",
        Elem::F32,
        &[
            BATCH,
            Dim::Fixed(channels),
            Dim::Named("out_height"),
            Dim::Named("out_width"),
        ],
    );
    g.model()
}

/// HiFi-GAN-shaped: `spectrogram` [B, frames, bins] → `waveform` [B, frames·hop].
fn vocoder(seed: u64) -> Vec<u8> {
    let mut g = Graph::new("vocoder", seed);
    let mel = g.input(
        "spectrogram",
        Elem::F32,
        &[BATCH, Dim::Named("frames"), Dim::Fixed(MEL_BINS)],
    );
    let x = g.op("Transpose", &[&mel], &[Attr::Ints("perm", vec![0, 2, 1])]);
    let w = g.weight(&[CHANNELS, MEL_BINS, 3], (MEL_BINS as f32 * 3.0).powf(-0.5));
    let b = g.weight(&[CHANNELS], 0.02);
    let h = g.op(
        "Conv",
        &[&x, &w, &b],
        &[
            Attr::Ints("kernel_shape", vec![3]),
            Attr::Ints("pads", vec![1, 1]),
        ],
    );
    let h = g.silu(&h);
    let w = g.weight(&[CHANNELS, 1, HOP], (CHANNELS as f32).powf(-0.5));
    let up = g.op(
        "ConvTranspose",
        &[&h, &w],
        &[
            Attr::Ints("kernel_shape", vec![HOP]),
            Attr::Ints("strides", vec![HOP]),
        ],
    );
    let y = g.op("Tanh", &[&up], &[]);
    let flat = g.ints(&[2], &[0, -1]);
    g.op_into("Reshape", &[&y, &flat], "waveform", &[]);
    g.output("waveform", Elem::F32, &[BATCH, Dim::Named("samples")]);
    g.model()
}

/// A tiny Stable-Diffusion-shaped model in `dir` (4 latent channels, VAE
/// scale 8, Euler, trailing timesteps).
pub fn write_image_model(dir: &Path, seed: u64) -> std::io::Result<()> {
    let vocab = tokenizer(dir, Flavour::Clip)?;
    write(
        &dir.join("text_encoder/model.onnx"),
        &clip_text_encoder(vocab, seed),
    )?;
    write(&dir.join("unet/model.onnx"), &unet(4, true, seed + 1))?;
    write(
        &dir.join("vae_decoder/model.onnx"),
        &vae_decoder(4, 3, 8, IMAGE_SCALING, seed + 2),
    )?;
    write_json(&dir.join("unet/config.json"), &json!({"in_channels": 4}))?;
    write_json(
        &dir.join("vae_decoder/config.json"),
        &json!({"latent_channels": 4, "scaling_factor": IMAGE_SCALING,
                "block_out_channels": [CHANNELS, CHANNELS, CHANNELS, CHANNELS]}),
    )?;
    write_json(
        &dir.join("scheduler/scheduler_config.json"),
        &json!({"_class_name": "EulerDiscreteScheduler", "num_train_timesteps": 1000,
                "beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear",
                "timestep_spacing": "trailing", "prediction_type": "epsilon"}),
    )?;
    write_json(
        &dir.join("mediagen.json"),
        &json!({"steps": 4, "guidanceScale": 3.0}),
    )
}

/// A tiny AudioLDM-shaped model in `dir` (8 latent channels, VAE scale 4,
/// 16 kHz vocoder with a 160-sample hop).
pub fn write_sound_model(dir: &Path, seed: u64) -> std::io::Result<()> {
    let vocab = tokenizer(dir, Flavour::Gpt2)?;
    write(
        &dir.join("text_encoder/model.onnx"),
        &clap_text_encoder(vocab, seed),
    )?;
    write(&dir.join("unet/model.onnx"), &unet(8, false, seed + 1))?;
    write(
        &dir.join("vae_decoder/model.onnx"),
        &vae_decoder(8, 1, 4, SOUND_SCALING, seed + 2),
    )?;
    write(&dir.join("vocoder/model.onnx"), &vocoder(seed + 3))?;
    write_json(&dir.join("unet/config.json"), &json!({"in_channels": 8}))?;
    write_json(
        &dir.join("vae_decoder/config.json"),
        &json!({"latent_channels": 8, "scaling_factor": SOUND_SCALING,
                "block_out_channels": [CHANNELS, CHANNELS, CHANNELS]}),
    )?;
    write_json(
        &dir.join("vocoder/config.json"),
        &json!({"sampling_rate": SAMPLE_RATE, "upsample_rates": [10, 16], "model_in_dim": MEL_BINS}),
    )?;
    write_json(
        &dir.join("scheduler/scheduler_config.json"),
        &json!({"_class_name": "EulerAncestralDiscreteScheduler", "num_train_timesteps": 1000,
                "beta_start": 0.0015, "beta_end": 0.0195, "beta_schedule": "scaled_linear",
                "timestep_spacing": "leading", "steps_offset": 1, "prediction_type": "epsilon"}),
    )?;
    write_json(
        &dir.join("mediagen.json"),
        &json!({"steps": 4, "guidanceScale": 2.5}),
    )
}

/// Both tiny models under `models_dir` (`image/tiny-sd`,
/// `sound/tiny-audioldm`).
pub fn write_all(models_dir: &Path) -> std::io::Result<()> {
    write_image_model(&models_dir.join("image/tiny-sd"), 1)?;
    write_sound_model(&models_dir.join("sound/tiny-audioldm"), 11)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mediagen_bpe::Bpe;

    #[test]
    fn tiny_vocabularies_spell_their_words_whole() {
        let dir = tempfile::tempdir().unwrap();
        for flavour in [Flavour::Clip, Flavour::Gpt2] {
            let d = dir.path().join(format!("{flavour:?}"));
            tokenizer(&d, flavour).unwrap();
            let bpe = Bpe::load(&d.join("tokenizer")).unwrap();
            assert_eq!(bpe.flavour(), flavour);
            let (ids, mask) = bpe.encode("a red cat on the beach");
            // Six words, each one token, between the start and end.
            assert_eq!(mask.iter().sum::<i64>(), 8, "{flavour:?}: {ids:?}");
            assert_eq!(ids.len(), TOKENS as usize);
        }
    }
}
