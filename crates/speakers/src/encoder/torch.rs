//! Reads a state dict from PyTorch's legacy (non-zip) file format, as
//! Resemblyzer's `pretrained.pt` is saved: five pickles in a row (a magic
//! number, the format version, system information, the object whose
//! tensors name their storages by persistent id, and the list of storage
//! keys), then each storage as a little-endian 8-byte element count and
//! its raw little-endian elements.
//!
//! Only the pickle opcodes such a file uses are understood (protocol 2:
//! no arbitrary classes are built, only tensors and containers), so a
//! file that asks for anything else is refused rather than run.

use std::collections::HashMap;

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
}

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
                b'R' => {
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
    let mut out = HashMap::new();
    for (name, v) in entries {
        let (Value::Str(name), Value::Tensor(k, elem, offset, shape, stride)) = (name, v) else {
            continue;
        };
        if elem != 4 {
            return Err(format!("{name} is not float32"));
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
            .and_then(|s| s.get(offset..offset + numel))
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
