//! The diarization checkpoints `scripts/models.sh` installs (pyannote's
//! segmentation-3.0, a PyTorch Lightning checkpoint, and 3D-Speaker's
//! CAM++, a plain state dict; both in PyTorch's zip format) read by the
//! project's own reader, against Python's pickle and zipfile reading the
//! same files (tests/data/checkpoints_reference.json, made by
//! checkpoints_reference.py beside it). A missing model fails.

use std::collections::HashMap;
use std::path::PathBuf;

use mediagen_speakers::encoder::torch::{zip_state_dict, Tensor};
use serde_json::Value;

fn models_dir() -> PathBuf {
    std::env::var_os("MEDIAGEN_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models")))
}

fn reference() -> Value {
    serde_json::from_str(include_str!("data/checkpoints_reference.json")).unwrap()
}

/// Every float tensor of the reference, with its shape, sum and first
/// element, is in `read`, and nothing else is.
fn agrees(read: &HashMap<String, Tensor>, want: &Value) {
    let want = want.as_object().unwrap();
    let mut names: Vec<&String> = read.keys().collect();
    names.sort();
    let mut wanted: Vec<&String> = want.keys().collect();
    wanted.sort();
    assert_eq!(names, wanted);
    for (name, w) in want {
        let t = &read[name];
        let shape: Vec<usize> = w["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(t.shape, shape, "{name}");
        assert_eq!(t.data.len(), shape.iter().product::<usize>(), "{name}");
        let sum: f64 = t.data.iter().map(|&x| x as f64).sum();
        let want_sum = w["sum"].as_f64().unwrap();
        assert!(
            (sum - want_sum).abs() <= 1e-6 * (1.0 + want_sum.abs()),
            "{name}: {sum} against {want_sum}"
        );
        assert_eq!(t.data[0] as f64, w["first"].as_f64().unwrap(), "{name}");
    }
}

#[test]
fn pyannotes_segmentation_checkpoint_reads_as_python_reads_it() {
    let bytes = std::fs::read(models_dir().join("diarize/segmentation-3.0.bin"))
        .expect("the segmentation model is installed by scripts/models.sh");
    let read = zip_state_dict(&bytes, Some("state_dict")).unwrap();
    assert_eq!(read.len(), 54);
    let params: usize = read.values().map(|t| t.data.len()).sum();
    assert_eq!(params, 1_473_515);
    assert_eq!(read["lstm.weight_ih_l0"].shape, [512, 60]);
    assert_eq!(read["classifier.weight"].shape, [7, 128]);
    agrees(&read, &reference()["segmentation"]);
}

#[test]
fn campplus_checkpoint_reads_as_python_reads_it() {
    let bytes = std::fs::read(models_dir().join("diarize/campplus_cn_en_common.pt"))
        .expect("the CAM++ model is installed by scripts/models.sh");
    let read = zip_state_dict(&bytes, None).unwrap();
    // Its 122 integer buffers (batch norms' step counts) are not weights.
    assert_eq!(read.len(), 815);
    let params: usize = read.values().map(|t| t.data.len()).sum();
    assert_eq!(params, 6_930_720);
    agrees(&read, &reference()["campplus"]);
}

#[test]
fn a_damaged_checkpoint_is_refused() {
    let bytes = std::fs::read(models_dir().join("diarize/segmentation-3.0.bin")).unwrap();
    assert!(zip_state_dict(&bytes[..bytes.len() / 2], Some("state_dict")).is_err());
    assert!(zip_state_dict(b"not a zip", None).is_err());
    let err = zip_state_dict(&bytes, Some("no_such_key")).unwrap_err();
    assert!(err.contains("no_such_key"), "{err}");
}
