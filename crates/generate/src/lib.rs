//! Generators: sound effects and beds (`sound`), scene images composed from a
//! prompt (`image`), and neural diffusion for images and audio on ONNX
//! Runtime (`diffusion`). Each output is reproducible from its seed.

pub mod diffusion;
pub mod image;
pub mod sound;
