//! A graph rewrite applied to ONNX models as they load: onnxruntime runs the
//! `STFT` operator as a direct DFT, frame by frame, which in Kokoro's
//! vocoder (a 20-point STFT every 5 samples of the 24 kHz output) took 6 %
//! of synthesis. The same numbers come from a strided `Conv` whose kernels
//! are the windowed DFT basis, which onnxruntime runs with its optimised
//! convolution. The model file is left as it is; the rewrite is made on the
//! bytes before the session is built.
//!
//! ONNX files are protocol buffers; this reads and writes only the fields it
//! needs (nodes and initializers of the main graph) and copies every other
//! byte as it is.

/// A protobuf field: its number, wire type and the bytes of its payload
/// (for length-delimited fields, without the length); `raw` is the whole
/// field as encoded.
struct Field<'a> {
    number: u64,
    wire: u8,
    value: u64,
    payload: &'a [u8],
    raw: &'a [u8],
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        out |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err("varint too long".into())
}

fn fields(buf: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let key = varint(buf, &mut pos)?;
        let (number, wire) = (key >> 3, (key & 7) as u8);
        let (value, payload) = match wire {
            0 => (varint(buf, &mut pos)?, &buf[pos..pos]),
            1 | 5 => {
                let n = if wire == 1 { 8 } else { 4 };
                let bytes = buf.get(pos..pos + n).ok_or("truncated fixed field")?;
                pos += n;
                (0, bytes)
            }
            2 => {
                let len = varint(buf, &mut pos)? as usize;
                let bytes = buf
                    .get(pos..pos + len)
                    .ok_or("truncated length-delimited field")?;
                pos += len;
                (len as u64, bytes)
            }
            other => return Err(format!("unsupported wire type {other}")),
        };
        out.push(Field {
            number,
            wire,
            value,
            payload,
            raw: &buf[start..pos],
        });
    }
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, number << 3 | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn put_int(out: &mut Vec<u8>, number: u64, v: i64) {
    put_varint(out, number << 3);
    put_varint(out, v as u64);
}

fn text(f: &Field<'_>) -> String {
    String::from_utf8_lossy(f.payload).into_owned()
}

/// An initializer's values as f64 (float and int64 tensors).
fn values(tensor: &[u8]) -> Result<Vec<f64>, String> {
    let fs = fields(tensor)?;
    let kind = fs.iter().find(|f| f.number == 2).map_or(0, |f| f.value);
    let mut out = Vec::new();
    for f in &fs {
        match (kind, f.number, f.wire) {
            (1, 9, 2) | (1, 4, 2) => out.extend(
                f.payload
                    .chunks_exact(4)
                    .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
            ),
            (1, 4, 5) => out.push(f64::from(f32::from_le_bytes(
                f.payload.try_into().map_err(|_| "bad float")?,
            ))),
            (7, 9, 2) => out.extend(
                f.payload
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")) as f64),
            ),
            (7, 7, 2) => {
                let mut pos = 0;
                while pos < f.payload.len() {
                    out.push(varint(f.payload, &mut pos)? as i64 as f64);
                }
            }
            (7, 7, 0) => out.push(f.value as i64 as f64),
            _ => {}
        }
    }
    Ok(out)
}

fn tensor(name: &str, dims: &[i64], data: Data) -> Vec<u8> {
    let mut t = Vec::new();
    for &d in dims {
        put_int(&mut t, 1, d);
    }
    let (kind, raw): (i64, Vec<u8>) = match data {
        Data::Float(v) => (1, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        Data::Int(v) => (7, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
    };
    put_int(&mut t, 2, kind);
    put_bytes(&mut t, 8, name.as_bytes());
    put_bytes(&mut t, 9, &raw);
    t
}

enum Data {
    Float(Vec<f32>),
    Int(Vec<i64>),
}

fn node(op: &str, name: &str, inputs: &[&str], output: &str, ints: &[(&str, &[i64])]) -> Vec<u8> {
    let mut n = Vec::new();
    for i in inputs {
        put_bytes(&mut n, 1, i.as_bytes());
    }
    put_bytes(&mut n, 2, output.as_bytes());
    put_bytes(&mut n, 3, name.as_bytes());
    put_bytes(&mut n, 4, op.as_bytes());
    for (attr, values) in ints {
        let mut a = Vec::new();
        put_bytes(&mut a, 1, attr.as_bytes());
        for &v in *values {
            put_int(&mut a, 8, v);
        }
        put_int(&mut a, 20, 7); // AttributeType INTS
        put_bytes(&mut n, 5, &a);
    }
    n
}

/// Encoded nodes and initializers (tensors) that replace a node.
type Replacement = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// The nodes and initializers that replace one STFT node, or `None` when
/// it is not the kind handled here (one-sided, real signal, constant frame
/// step, window and length).
fn replace_stft(stft: &[u8], inits: &[(String, &[u8])]) -> Result<Option<Replacement>, String> {
    let fs = fields(stft)?;
    let inputs: Vec<String> = fs.iter().filter(|f| f.number == 1).map(text).collect();
    let outputs: Vec<String> = fs.iter().filter(|f| f.number == 2).map(text).collect();
    let name = fs
        .iter()
        .find(|f| f.number == 3)
        .map_or_else(|| "stft".to_owned(), text);
    for a in fs.iter().filter(|f| f.number == 5) {
        let af = fields(a.payload)?;
        let is_onesided = af.iter().any(|f| f.number == 1 && f.payload == b"onesided");
        let value = af.iter().find(|f| f.number == 3).map_or(0, |f| f.value);
        if is_onesided && value != 1 {
            return Ok(None);
        }
    }
    let [signal, step, window, length] = &inputs[..] else {
        return Ok(None);
    };
    let [output] = &outputs[..] else {
        return Ok(None);
    };
    let constant = |n: &str| -> Result<Option<Vec<f64>>, String> {
        inits
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, t)| values(t))
            .transpose()
    };
    let (Some(step), Some(window), Some(length)) =
        (constant(step)?, constant(window)?, constant(length)?)
    else {
        return Ok(None);
    };
    let (Some(&step), Some(&len)) = (step.first(), length.first()) else {
        return Ok(None);
    };
    let (step, len) = (step as i64, len as usize);
    if window.len() != len || step < 1 || len < 2 {
        return Ok(None);
    }
    // Kernels 2k and 2k + 1: real and imaginary part of bin k, windowed.
    let bins = len / 2 + 1;
    let mut basis = Vec::with_capacity(2 * bins * len);
    for k in 0..bins {
        for part in 0..2 {
            for (t, w) in window.iter().enumerate() {
                let angle = 2.0 * std::f64::consts::PI * (k * t) as f64 / len as f64;
                let v = if part == 0 { angle.cos() } else { -angle.sin() };
                basis.push((w * v) as f32);
            }
        }
    }
    let p = |s: &str| format!("{name}_as_conv/{s}");
    let inits = vec![
        tensor(&p("flat"), &[3], Data::Int(vec![0, 1, -1])),
        tensor(
            &p("basis"),
            &[2 * bins as i64, 1, len as i64],
            Data::Float(basis),
        ),
        tensor(&p("bins"), &[4], Data::Int(vec![0, bins as i64, 2, -1])),
    ];
    let nodes = vec![
        node(
            "Reshape",
            &p("flatten"),
            &[signal, &p("flat")],
            &p("x"),
            &[],
        ),
        node(
            "Conv",
            &p("dft"),
            &[&p("x"), &p("basis")],
            &p("y"),
            &[("kernel_shape", &[len as i64]), ("strides", &[step])],
        ),
        node("Reshape", &p("split"), &[&p("y"), &p("bins")], &p("z"), &[]),
        node(
            "Transpose",
            &p("frames_first"),
            &[&p("z")],
            output,
            &[("perm", &[0, 3, 1, 2])],
        ),
    ];
    Ok(Some((nodes, inits)))
}

/// The model with its STFT nodes computed by convolution, or `None` when
/// it has none this handles.
pub fn stft_as_conv(model: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let top = fields(model)?;
    let Some(graph) = top.iter().find(|f| f.number == 7 && f.wire == 2) else {
        return Ok(None);
    };
    let parts = fields(graph.payload)?;
    let inits: Vec<(String, &[u8])> = parts
        .iter()
        .filter(|f| f.number == 5 && f.wire == 2)
        .map(|f| {
            let name = fields(f.payload)?
                .iter()
                .find(|t| t.number == 8)
                .map(text)
                .unwrap_or_default();
            Ok((name, f.payload))
        })
        .collect::<Result<_, String>>()?;
    let (mut body, mut added, mut changed) =
        (Vec::with_capacity(graph.payload.len()), Vec::new(), false);
    for f in &parts {
        let is_stft = f.number == 1
            && f.wire == 2
            && fields(f.payload)?
                .iter()
                .any(|n| n.number == 4 && n.payload == b"STFT");
        match is_stft
            .then(|| replace_stft(f.payload, &inits))
            .transpose()?
            .flatten()
        {
            Some((nodes, tensors)) => {
                for n in nodes {
                    put_bytes(&mut body, 1, &n);
                }
                added.extend(tensors);
                changed = true;
            }
            None => body.extend_from_slice(f.raw),
        }
    }
    if !changed {
        return Ok(None);
    }
    for t in added {
        put_bytes(&mut body, 5, &t);
    }
    let mut out = Vec::with_capacity(model.len() + 4096);
    for f in &top {
        if std::ptr::eq(f, graph) {
            put_bytes(&mut out, 7, &body);
        } else {
            out.extend_from_slice(f.raw);
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of one STFT node, as the Python `onnx` package would write it.
    fn stft_model(window: &[f32]) -> Vec<u8> {
        let mut graph = Vec::new();
        let mut n = node("STFT", "s", &["x", "step", "win", "len"], "y", &[]);
        let mut a = Vec::new();
        put_bytes(&mut a, 1, b"onesided");
        put_int(&mut a, 3, 1);
        put_int(&mut a, 20, 2);
        put_bytes(&mut n, 5, &a);
        put_bytes(&mut graph, 1, &n);
        put_bytes(&mut graph, 2, b"g");
        put_bytes(&mut graph, 5, &tensor("step", &[], Data::Int(vec![5])));
        put_bytes(
            &mut graph,
            5,
            &tensor("win", &[window.len() as i64], Data::Float(window.to_vec())),
        );
        put_bytes(
            &mut graph,
            5,
            &tensor("len", &[], Data::Int(vec![window.len() as i64])),
        );
        let mut model = Vec::new();
        put_int(&mut model, 1, 8);
        put_bytes(&mut model, 7, &graph);
        put_bytes(&mut model, 8, b"opset");
        model
    }

    #[test]
    fn an_stft_node_becomes_a_dft_convolution() {
        let window: Vec<f32> = (0..20)
            .map(|i| 0.5 - 0.5 * (i as f32 * 0.314).cos())
            .collect();
        let model = stft_model(&window);
        let out = stft_as_conv(&model).unwrap().expect("rewritten");
        let top = fields(&out).unwrap();
        // Fields other than the graph are kept, in order.
        assert_eq!(
            top.iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![1, 7, 8]
        );
        let graph = fields(top[1].payload).unwrap();
        let ops: Vec<String> = graph
            .iter()
            .filter(|f| f.number == 1)
            .map(|f| {
                fields(f.payload)
                    .unwrap()
                    .iter()
                    .find(|g| g.number == 4)
                    .map(text)
                    .unwrap()
            })
            .collect();
        assert_eq!(ops, ["Reshape", "Conv", "Reshape", "Transpose"]);
        let last = fields(graph.iter().rfind(|f| f.number == 1).unwrap().payload).unwrap();
        assert_eq!(last.iter().find(|f| f.number == 2).map(text).unwrap(), "y");
        // The basis: bin 1's real kernel is the window times a cosine of
        // one period; bin 0's imaginary kernel is zero.
        let basis = graph
            .iter()
            .filter(|f| f.number == 5)
            .map(|f| f.payload)
            .find(|t| {
                fields(t)
                    .unwrap()
                    .iter()
                    .any(|f| f.number == 8 && f.payload.ends_with(b"/basis"))
            })
            .unwrap();
        let v = values(basis).unwrap();
        assert_eq!(v.len(), 22 * 20);
        assert!(v[20..40].iter().all(|x| x.abs() < 1e-7));
        for t in 0..20 {
            let want = f64::from(window[t]) * (2.0 * std::f64::consts::PI * t as f64 / 20.0).cos();
            assert!((v[40 + t] - want).abs() < 1e-6);
        }
        // Without an STFT node nothing changes.
        assert!(stft_as_conv(&out).unwrap().is_none());
    }
}
