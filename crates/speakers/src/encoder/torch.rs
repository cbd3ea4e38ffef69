//! Reads a state dict from PyTorch's two file formats:
//! - the legacy one, as Resemblyzer's `pretrained.pt` is saved: five
//!   pickles in a row (a magic number, the format version, system
//!   information, the object whose tensors name their storages by
//!   persistent id, and the list of storage keys), then each storage as a
//!   little-endian 8-byte element count and its raw little-endian elements;
//! - the zip one (`torch.save` since 1.6, as pyannote's and 3D-Speaker's
//!   checkpoints are): an uncompressed zip holding `<name>/data.pkl` (the
//!   object) and each storage as `<name>/data/<key>`.
//!
//! Only the pickle opcodes such files use are understood (protocol 2: no
//! arbitrary classes are built, only tensors and containers, and a few
//! plain-data classes of a checkpoint's metadata are kept as opaque
//! values), so a file that asks for anything else is refused rather than
//! run.

use std::collections::HashMap;
use std::path::Path;

use mediagen_onnx::LazySession;

/// A float tensor, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

#[derive(Debug, Clone)]
enum Value {
    None,
    /// A boolean or a float: read past, never used.
    Scalar,
    Int(i64),
    Str(String),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    Global(String),
    /// A storage named by persistent id: its key and element size.
    Storage(String, usize),
    /// A view of a storage: its key and element size, offset, shape,
    /// strides.
    Tensor(String, usize, usize, Vec<usize>, Vec<usize>),
    /// An object of a plain-data class of a checkpoint's metadata
    /// ([`OPAQUE`]), never built.
    Opaque,
}

/// Classes a checkpoint's metadata holds (a training task's description,
/// the torch version), read past as opaque values: never constructed.
const OPAQUE: &[&str] = &[
    "pyannote.audio.core.task.Problem",
    "pyannote.audio.core.task.Resolution",
    "pyannote.audio.core.task.Specifications",
    "torch.torch_version.TorchVersion",
];

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or("the file ends early")?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }

    fn line(&mut self) -> Result<String, String> {
        let rest = &self.bytes[self.at..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("a line without its end")?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.at += n + 1;
        Ok(s)
    }

    /// One pickle, up to its STOP.
    fn pickle(&mut self) -> Result<Value, String> {
        let mut stack: Vec<Value> = Vec::new();
        let mut marks: Vec<usize> = Vec::new();
        let mut memo: HashMap<u32, Value> = HashMap::new();
        let pop = |stack: &mut Vec<Value>| stack.pop().ok_or("pickle stack underflow");
        let since_mark = |stack: &mut Vec<Value>, marks: &mut Vec<usize>| {
            let m = marks.pop().ok_or("pickle mark missing")?;
            if m > stack.len() {
                return Err("pickle mark past the stack".to_owned());
            }
            Ok::<_, String>(stack.split_off(m))
        };
        loop {
            let op = self.byte()?;
            match op {
                0x80 => {
                    self.byte()?;
                }
                b'.' => return pop(&mut stack).map_err(Into::into),
                b'}' => stack.push(Value::Dict(Vec::new())),
                b']' => stack.push(Value::List(Vec::new())),
                b')' => stack.push(Value::Tuple(Vec::new())),
                b'N' => stack.push(Value::None),
                0x88 | 0x89 => stack.push(Value::Scalar),
                b'(' => marks.push(stack.len()),
                b'q' => {
                    let k = self.byte()? as u32;
                    memo.insert(k, stack.last().cloned().ok_or("nothing to memo")?);
                }
                b'r' => {
                    let k = self.u32()?;
                    memo.insert(k, stack.last().cloned().ok_or("nothing to memo")?);
                }
                b'h' => {
                    let k = self.byte()? as u32;
                    stack.push(memo.get(&k).cloned().ok_or("unknown memo")?);
                }
                b'j' => {
                    let k = self.u32()?;
                    stack.push(memo.get(&k).cloned().ok_or("unknown memo")?);
                }
                b'X' => {
                    let n = self.u32()? as usize;
                    let s = String::from_utf8_lossy(self.take(n)?).into_owned();
                    stack.push(Value::Str(s));
                }
                b'J' => stack.push(Value::Int(self.u32()? as i32 as i64)),
                b'K' => stack.push(Value::Int(self.byte()? as i64)),
                b'M' => {
                    let b = self.take(2)?;
                    stack.push(Value::Int(u16::from_le_bytes([b[0], b[1]]) as i64));
                }
                0x8a => {
                    let n = self.byte()? as usize;
                    let b = self.take(n)?;
                    // Little-endian two's complement; wider than i64 is
                    // kept to its low bits (only the magic number is).
                    let mut v: i64 = 0;
                    for (k, &x) in b.iter().enumerate().take(8) {
                        v |= (x as i64) << (8 * k);
                    }
                    stack.push(Value::Int(v));
                }
                b'G' => {
                    self.take(8)?;
                    stack.push(Value::Scalar);
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    stack.push(Value::Global(format!("{module}.{name}")));
                }
                b't' => {
                    let items = since_mark(&mut stack, &mut marks)?;
                    stack.push(Value::Tuple(items));
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    if stack.len() < n {
                        return Err("pickle stack underflow".into());
                    }
                    let items = stack.split_off(stack.len() - n);
                    stack.push(Value::Tuple(items));
                }
                b'Q' => {
                    let pid = pop(&mut stack)?;
                    stack.push(storage(pid)?);
                }
                // REDUCE, and NEWOBJ (a class and its arguments).
                b'R' | 0x81 => {
                    let args = pop(&mut stack)?;
                    let callable = pop(&mut stack)?;
                    stack.push(reduce(callable, args)?);
                }
                b'b' => {
                    // State for the object below (an OrderedDict's
                    // metadata): not needed.
                    pop(&mut stack)?;
                }
                b's' => {
                    let v = pop(&mut stack)?;
                    let k = pop(&mut stack)?;
                    match stack.last_mut() {
                        Some(Value::Dict(d)) => d.push((k, v)),
                        _ => return Err("SETITEM on a non-dict".into()),
                    }
                }
                b'u' => {
                    let items = since_mark(&mut stack, &mut marks)?;
                    let Some(Value::Dict(d)) = stack.last_mut() else {
                        return Err("SETITEMS on a non-dict".into());
                    };
                    let mut it = items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        d.push((k, v));
                    }
                }
                b'a' => {
                    let v = pop(&mut stack)?;
                    match stack.last_mut() {
                        Some(Value::List(l)) => l.push(v),
                        _ => return Err("APPEND on a non-list".into()),
                    }
                }
                b'e' => {
                    let items = since_mark(&mut stack, &mut marks)?;
                    match stack.last_mut() {
                        Some(Value::List(l)) => l.extend(items),
                        _ => return Err("APPENDS on a non-list".into()),
                    }
                }
                other => return Err(format!("unsupported pickle opcode 0x{other:02x}")),
            }
        }
    }
}

/// A persistent id `('storage', <type>, key, location, size)`.
fn storage(pid: Value) -> Result<Value, String> {
    let Value::Tuple(items) = pid else {
        return Err("a persistent id that is not a tuple".into());
    };
    match items.as_slice() {
        [Value::Str(tag), Value::Global(kind), Value::Str(key), ..] if tag == "storage" => {
            let size = match kind.rsplit('.').next().unwrap_or_default() {
                "FloatStorage" | "IntStorage" => 4,
                "DoubleStorage" | "LongStorage" => 8,
                "HalfStorage" | "BFloat16Storage" | "ShortStorage" => 2,
                "ByteStorage" | "CharStorage" | "BoolStorage" => 1,
                other => return Err(format!("unknown storage type {other}")),
            };
            Ok(Value::Storage(key.clone(), size))
        }
        _ => Err("a persistent id that is not a storage".into()),
    }
}

fn ints(v: &Value) -> Result<Vec<usize>, String> {
    match v {
        Value::Tuple(items) => items
            .iter()
            .map(|x| match x {
                Value::Int(i) if *i >= 0 => Ok(*i as usize),
                _ => Err("a tensor size that is not a natural number".to_owned()),
            })
            .collect(),
        _ => Err("a tensor size that is not a tuple".into()),
    }
}

/// The calls a state dict makes: tensors and ordered dicts, nothing else.
fn reduce(callable: Value, args: Value) -> Result<Value, String> {
    let Value::Global(name) = callable else {
        return Err("a call of something that is not a global".into());
    };
    let Value::Tuple(args) = args else {
        return Err("call arguments that are not a tuple".into());
    };
    match name.as_str() {
        "collections.OrderedDict" => Ok(Value::Dict(Vec::new())),
        known if OPAQUE.contains(&known) => Ok(Value::Opaque),
        "torch._utils._rebuild_tensor_v2" => match args.as_slice() {
            [Value::Storage(key, elem), Value::Int(offset), size, stride, ..] if *offset >= 0 => {
                Ok(Value::Tensor(
                    key.clone(),
                    *elem,
                    *offset as usize,
                    ints(size)?,
                    ints(stride)?,
                ))
            }
            _ => Err("a tensor with unexpected arguments".into()),
        },
        other => Err(format!(
            "the file calls {other}, which a state dict does not"
        )),
    }
}

/// The float tensors of the state dict stored under `key` in the file's
/// object (`model_state` in Resemblyzer's file), by name.
pub fn state_dict(bytes: &[u8], key: &str) -> Result<HashMap<String, Tensor>, String> {
    let mut r = Reader { bytes, at: 0 };
    for _ in 0..3 {
        r.pickle()?; // magic number, version, system information
    }
    let object = r.pickle()?;
    let Value::List(keys) = r.pickle()? else {
        return Err("no storage list".into());
    };
    let Value::Dict(items) = object else {
        return Err("the file's object is not a dict".into());
    };
    let (ours, rest): (Vec<_>, Vec<_>) = items
        .into_iter()
        .partition(|(k, _)| matches!(k, Value::Str(s) if s == key));
    let dict = ours
        .into_iter()
        .next()
        .map(|(_, v)| v)
        .ok_or_else(|| format!("no {key} in the file"))?;
    let object_rest = Value::Dict(rest);
    let Value::Dict(entries) = dict else {
        return Err(format!("{key} is not a dict"));
    };
    // Every storage's element size, from the tensors anywhere in the file
    // (all storages are stored, in order, whoever uses them).
    let mut sizes: HashMap<String, usize> = HashMap::new();
    collect_sizes(&object_rest, &mut sizes);
    for (_, v) in &entries {
        collect_sizes(v, &mut sizes);
    }
    let mut storages: HashMap<String, Vec<f32>> = HashMap::new();
    for k in &keys {
        let Value::Str(k) = k else {
            return Err("a storage key that is not a string".into());
        };
        let count = u64::from_le_bytes(r.take(8)?.try_into().unwrap_or_default()) as usize;
        let size = *sizes
            .get(k)
            .ok_or("a storage no tensor uses (its element size is unknown)")?;
        let raw = r.take(count.checked_mul(size).ok_or("a storage too large")?)?;
        if size != 4 {
            continue;
        }
        let floats = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        storages.insert(k.clone(), floats);
    }
    tensors(entries, &storages)
}

/// The float tensors among a state dict's `entries`, read from `storages`
/// (each storage's float elements, by key).
fn tensors(
    entries: Vec<(Value, Value)>,
    storages: &HashMap<String, Vec<f32>>,
) -> Result<HashMap<String, Tensor>, String> {
    let mut out = HashMap::new();
    for (name, v) in entries {
        let (Value::Str(name), Value::Tensor(k, elem, offset, shape, stride)) = (name, v) else {
            continue;
        };
        if elem != 4 {
            // Integer buffers (a batch norm's step count) are not weights.
            continue;
        }
        let numel: usize = shape.iter().product();
        let contiguous = shape.iter().rev().scan(1usize, |acc, &d| {
            let s = *acc;
            *acc *= d;
            Some(s)
        });
        if !contiguous.zip(stride.iter().rev()).all(|(a, &b)| a == b) {
            return Err(format!("{name} is not contiguous"));
        }
        let data = storages
            .get(&k)
            .and_then(|s| s.get(offset..offset.checked_add(numel)?))
            .ok_or_else(|| format!("{name} lies outside its storage"))?;
        out.insert(
            name,
            Tensor {
                shape,
                data: data.to_vec(),
            },
        );
    }
    Ok(out)
}

/// Makes a network's ONNX model from a state dict.
pub(crate) type BuildGraph = fn(&HashMap<String, Tensor>) -> Result<Vec<u8>, String>;

/// A session for the network `build` makes from the zip checkpoint
/// `model` under `models_dir` (its state dict under `key`, or the whole
/// file), read and built on first use; the file must be there now.
pub(crate) fn checkpoint_session(
    models_dir: &Path,
    model: &str,
    key: Option<&'static str>,
    threads: usize,
    build: BuildGraph,
) -> Result<LazySession, String> {
    let file = models_dir.join(model);
    let source = file.clone();
    LazySession::built(models_dir, &file, threads, move || {
        let bytes = std::fs::read(&source).map_err(|e| e.to_string())?;
        build(&zip_state_dict(&bytes, key)?)
    })
}

/// The float tensors of a zip-format checkpoint's state dict: the file's
/// object itself, or the dict under `key` in it (`state_dict` in a
/// PyTorch Lightning checkpoint).
pub fn zip_state_dict(bytes: &[u8], key: Option<&str>) -> Result<HashMap<String, Tensor>, String> {
    let files = stored_zip(bytes)?;
    let (pickle_name, pickle) = files
        .iter()
        .find(|(name, _)| name.ends_with("/data.pkl") && name.matches('/').count() == 1)
        .ok_or("no data.pkl in the checkpoint")?;
    let prefix = &pickle_name[..pickle_name.len() - "data.pkl".len()];
    let object = Reader {
        bytes: pickle,
        at: 0,
    }
    .pickle()?;
    let dict = match key {
        None => object,
        Some(key) => {
            let Value::Dict(items) = object else {
                return Err("the checkpoint's object is not a dict".into());
            };
            items
                .into_iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v)
                .ok_or_else(|| format!("no {key} in the checkpoint"))?
        }
    };
    let Value::Dict(entries) = dict else {
        return Err("the state dict is not a dict".into());
    };
    let mut sizes = HashMap::new();
    for (_, v) in &entries {
        collect_sizes(v, &mut sizes);
    }
    let mut storages = HashMap::new();
    for (k, size) in sizes {
        if size != 4 {
            continue;
        }
        let name = format!("{prefix}data/{k}");
        let raw = files
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, b)| *b)
            .ok_or_else(|| format!("storage {k} is missing"))?;
        let floats = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        storages.insert(k, floats);
    }
    tensors(entries, &storages)
}

/// The entries of an uncompressed zip (as `torch.save` writes it), by
/// name, read from its central directory. A compressed entry, a zip64
/// archive or a range outside the file is refused.
fn stored_zip(bytes: &[u8]) -> Result<Vec<(String, &[u8])>, String> {
    let u16_at = |at: usize| -> Result<usize, String> {
        let b = bytes.get(at..at + 2).ok_or("the zip ends early")?;
        Ok(u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u32_at = |at: usize| -> Result<usize, String> {
        let b = bytes.get(at..at + 4).ok_or("the zip ends early")?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    // The end-of-central-directory record: in the last 64 KiB + 22 bytes.
    let floor = bytes.len().saturating_sub(22 + 65_535);
    let end = (floor..bytes.len().saturating_sub(21))
        .rev()
        .find(|&i| bytes[i..].starts_with(b"PK\x05\x06"))
        .ok_or("not a zip file")?;
    let count = u16_at(end + 10)?;
    let mut at = u32_at(end + 16)?;
    if count == 0xFFFF || at == 0xFFFF_FFFF {
        return Err("a zip64 checkpoint is not supported".into());
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        if bytes.get(at..at + 4) != Some(&b"PK\x01\x02"[..]) {
            return Err("a damaged zip directory".into());
        }
        let method = u16_at(at + 10)?;
        let size = u32_at(at + 20)?;
        let stored = u32_at(at + 24)?;
        let (name_len, extra_len, comment_len) =
            (u16_at(at + 28)?, u16_at(at + 30)?, u16_at(at + 32)?);
        let local = u32_at(at + 42)?;
        let name = bytes
            .get(at + 46..at + 46 + name_len)
            .ok_or("the zip ends early")?;
        let name = String::from_utf8_lossy(name).into_owned();
        if method != 0 || size != stored {
            return Err(format!("{name} is compressed"));
        }
        if bytes.get(local..local + 4) != Some(&b"PK\x03\x04"[..]) {
            return Err("a damaged zip entry".into());
        }
        let start = local + 30 + u16_at(local + 26)? + u16_at(local + 28)?;
        let data = bytes
            .get(start..start.checked_add(size).ok_or("a zip entry too large")?)
            .ok_or("a zip entry outside the file")?;
        out.push((name, data));
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// The element size of every storage a tensor in `v` uses.
fn collect_sizes(v: &Value, sizes: &mut HashMap<String, usize>) {
    match v {
        Value::Tensor(k, elem, ..) => {
            sizes.insert(k.clone(), *elem);
        }
        Value::Tuple(items) | Value::List(items) => {
            items.iter().for_each(|x| collect_sizes(x, sizes));
        }
        Value::Dict(items) => items.iter().for_each(|(k, x)| {
            collect_sizes(k, sizes);
            collect_sizes(x, sizes);
        }),
        _ => {}
    }
}
