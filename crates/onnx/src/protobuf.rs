//! Just enough of the protocol buffer wire format to read and write ONNX
//! models: a writer ([`Pb`]) for the models made here and a reader
//! ([`fields`]) for the rewrites made to models as they load.

/// Protobuf wire encoding of one message, written field by field.
#[derive(Default)]
pub(crate) struct Pb(pub(crate) Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    pub(crate) fn int(&mut self, field: u32, v: i64) {
        self.key(field, 0);
        self.varint(v as u64);
    }

    pub(crate) fn float(&mut self, field: u32, v: f32) {
        self.key(field, 5);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    pub(crate) fn str(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    pub(crate) fn msg(&mut self, field: u32, m: &Pb) {
        self.bytes(field, &m.0);
    }
}

/// A field as read: its number, wire type, value (varints; the length of
/// length-delimited fields) and payload (fixed-size and length-delimited
/// fields, without the length); `raw` is the whole field as encoded.
pub(crate) struct Field<'a> {
    pub(crate) number: u64,
    pub(crate) wire: u8,
    pub(crate) value: u64,
    pub(crate) payload: &'a [u8],
    pub(crate) raw: &'a [u8],
}

impl Field<'_> {
    /// A string field's text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(self.payload).into_owned()
    }
}

pub(crate) fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
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

/// The fields of one message, in order.
pub(crate) fn fields(buf: &[u8]) -> Result<Vec<Field<'_>>, String> {
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

/// The text of the first field `number` of the message `payload` (empty
/// when there is none): a node's or tensor's name.
pub(crate) fn text_of(payload: &[u8], number: u64) -> Result<String, String> {
    Ok(fields(payload)?
        .iter()
        .find(|f| f.number == number)
        .map(Field::text)
        .unwrap_or_default())
}

/// Repeated integers, packed (one length-delimited field) or not.
pub(crate) fn ints(fs: &[Field<'_>], number: u64) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    for f in fs.iter().filter(|f| f.number == number) {
        if f.wire == 2 {
            let mut pos = 0;
            while pos < f.payload.len() {
                out.push(varint(f.payload, &mut pos)? as i64);
            }
        } else {
            out.push(f.value as i64);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_base_128() {
        let mut pb = Pb::default();
        pb.varint(1);
        pb.varint(300);
        pb.int(1, -1);
        assert_eq!(&pb.0[..3], &[0x01, 0xAC, 0x02]);
        // A negative int64 takes ten bytes after its key.
        assert_eq!(pb.0.len(), 3 + 1 + 10);
    }

    #[test]
    fn what_is_written_reads_back() {
        let mut inner = Pb::default();
        inner.int(1, 3);
        inner.int(1, -2);
        let mut m = Pb::default();
        m.str(4, "Sin");
        m.float(2, 1.5);
        m.msg(7, &inner);
        m.int(9, 300);
        let fs = fields(&m.0).unwrap();
        assert_eq!(
            fs.iter().map(|f| (f.number, f.wire)).collect::<Vec<_>>(),
            [(4, 2), (2, 5), (7, 2), (9, 0)]
        );
        assert_eq!(fs[0].text(), "Sin");
        assert_eq!(fs[1].payload, 1.5f32.to_le_bytes());
        assert_eq!(ints(&fields(fs[2].payload).unwrap(), 1).unwrap(), [3, -2]);
        assert_eq!(fs[3].value, 300);
        let raw: Vec<u8> = fs.iter().flat_map(|f| f.raw.iter().copied()).collect();
        assert_eq!(raw, m.0);
        // A packed repeated field reads as the same integers.
        let mut packed = Pb::default();
        packed.bytes(1, &[3, 0x81, 0x01]);
        assert_eq!(ints(&fields(&packed.0).unwrap(), 1).unwrap(), [3, 129]);
    }
}
