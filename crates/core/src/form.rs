//! Forms read into their types: the text fields of a request (multipart
//! text parts, or a JSON body's values as the text a form would carry)
//! deserialized into the form's own type, the one its OpenAPI schema is
//! derived from. Strings are taken as sent, booleans are `true` or `false`
//! exactly, numbers are parsed; a field the type does not name, a missing
//! required one or a value of the wrong type is 400 naming the field.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};

use crate::ApiError;

/// Reads `fields` into the form `T` (which should deny unknown fields).
pub fn from_fields<T: DeserializeOwned>(fields: &HashMap<String, String>) -> Result<T, ApiError> {
    // Sorted, so that of two bad fields the same one is named every time.
    let mut sorted: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    sorted.sort_unstable();
    T::deserialize(Fields {
        fields: sorted.into_iter(),
        value: None,
    })
    .map_err(|e| ApiError::invalid_parameter(e.field.as_deref().unwrap_or("body"), e.message))
}

/// A form's file part: the document shows it (a binary string), and it is
/// read as an upload, never as a text field (which is refused, naming it).
/// Fields of this type take `#[serde(default)]` and
/// `#[schema(value_type = String, format = Binary, required = true)]`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct FilePart;

impl<'de> de::Deserialize<'de> for FilePart {
    fn deserialize<D: de::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(de::Error::custom(
            "must be a file part of a multipart form (or name an uploaded file by `fileId`)",
        ))
    }
}

/// Why a form was refused, and the field at fault.
#[derive(Debug)]
struct FormError {
    field: Option<String>,
    message: String,
}

impl FormError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            field: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FormError {}

impl de::Error for FormError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        let msg = msg.to_string();
        // A form with a flattened member names an unknown field this way.
        if let Some(field) = msg
            .strip_prefix("unknown field `")
            .and_then(|m| m.strip_suffix('`'))
        {
            return Self {
                field: Some(field.to_owned()),
                message: "unknown parameter".into(),
            };
        }
        Self::new(msg)
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> Self {
        Self {
            field: Some(field.to_owned()),
            message: "unknown parameter".into(),
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Self {
            field: Some(field.to_owned()),
            message: "required".into(),
        }
    }

    fn unknown_variant(_variant: &str, expected: &'static [&'static str]) -> Self {
        Self::new(format!("must be one of {}", expected.join(", ")))
    }
}

/// The fields, as a map.
struct Fields<'a> {
    fields: std::vec::IntoIter<(&'a str, &'a str)>,
    value: Option<(&'a str, &'a str)>,
}

impl<'de, 'a> de::Deserializer<'de> for Fields<'a> {
    type Error = FormError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, 'a> MapAccess<'de> for Fields<'a> {
    type Error = FormError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, FormError> {
        let Some((key, value)) = self.fields.next() else {
            return Ok(None);
        };
        self.value = Some((key, value));
        let named = |mut e: FormError| {
            e.field.get_or_insert_with(|| key.to_owned());
            e
        };
        seed.deserialize(key.into_deserializer())
            .map(Some)
            .map_err(named)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, FormError> {
        let (key, value) = self
            .value
            .take()
            .ok_or_else(|| FormError::new("no value"))?;
        seed.deserialize(Text(value)).map_err(|mut e| {
            e.field = Some(key.to_owned());
            e
        })
    }
}

/// One field's text, read as the type asks.
struct Text<'a>(&'a str);

impl<'a> Text<'a> {
    fn parsed<T: std::str::FromStr>(&self, what: &str) -> Result<T, FormError> {
        self.0
            .trim()
            .parse()
            .map_err(|_| FormError::new(format!("must be {what}")))
    }

    fn number(&self) -> Result<f64, FormError> {
        self.parsed::<f64>("a number")
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| FormError::new("must be a number"))
    }
}

macro_rules! integers {
    ($($method:ident $visit:ident $t:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
            visitor.$visit(self.parsed::<$t>("an integer")?)
        }
    )*};
}

impl<'de, 'a> de::Deserializer<'de> for Text<'a> {
    type Error = FormError;

    /// A field no member of the form's own reads (a flattened member,
    /// such as `JobFields`'s, is buffered untyped first): `true` and
    /// `false` are the booleans they spell, anything else its text.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        match self.0.trim() {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => visitor.visit_str(self.0),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        match self.0.trim() {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(FormError::new("must be true or false")),
        }
    }

    integers! {
        deserialize_u8 visit_u8 u8, deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32, deserialize_u64 visit_u64 u64,
        deserialize_i8 visit_i8 i8, deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32, deserialize_i64 visit_i64 i64
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_f32(self.number()? as f32)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_f64(self.number()?)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_some(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, FormError> {
        visitor.visit_enum(self.0.trim().into_deserializer())
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, FormError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_str(self.0)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, FormError> {
        visitor.visit_str(self.0)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Form {
        #[serde(default)]
        file: FilePart,
        voice_id: String,
        sample_rate: Option<u32>,
        max_speedup: Option<f64>,
        keep_background: Option<bool>,
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Convert,
        Resynthesize,
    }

    fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn refused(pairs: &[(&str, &str)]) -> (String, String) {
        let e = from_fields::<Form>(&fields(pairs)).unwrap_err();
        assert_eq!(e.code, crate::ErrorCode::InvalidParameter);
        (
            e.details["parameter"].as_str().unwrap().to_owned(),
            e.message,
        )
    }

    #[test]
    fn text_fields_become_the_forms_types() {
        let form: Form = from_fields(&fields(&[
            ("voiceId", "v1"),
            ("sampleRate", " 24000 "),
            ("maxSpeedup", "1.5"),
            ("keepBackground", "false"),
            ("mode", "resynthesize"),
        ]))
        .unwrap();
        assert_eq!(
            form,
            Form {
                file: FilePart,
                voice_id: "v1".into(),
                sample_rate: Some(24000),
                max_speedup: Some(1.5),
                keep_background: Some(false),
                mode: Some(Mode::Resynthesize),
            }
        );
        let bare: Form = from_fields(&fields(&[("voiceId", "v1")])).unwrap();
        assert_eq!((bare.sample_rate, bare.mode), (None, None));
    }

    /// A form with the shared job members flattened in.
    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct JobForm {
        voice_id: String,
        #[serde(flatten)]
        job: crate::JobFields,
    }

    #[test]
    fn flattened_job_members_are_read_and_unknown_fields_still_named() {
        let form: JobForm = from_fields(&fields(&[
            ("voiceId", "v1"),
            ("dryRun", "true"),
            ("webhookUrl", "https://example.com/hook"),
        ]))
        .unwrap();
        assert_eq!(form.job.dry_run, Some(true));
        assert_eq!(
            form.job.webhook_url.as_deref(),
            Some("https://example.com/hook")
        );
        let bare: JobForm = from_fields(&fields(&[("voiceId", "true")])).unwrap();
        assert_eq!((bare.voice_id.as_str(), bare.job.dry_run), ("true", None));
        let e =
            from_fields::<JobForm>(&fields(&[("voiceId", "v"), ("colour", "red")])).unwrap_err();
        assert_eq!(
            (
                e.details["parameter"].as_str(),
                e.details["reason"].as_str()
            ),
            (Some("colour"), Some("unknown parameter"))
        );
    }

    #[test]
    fn errors_name_the_field() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: [Case; 8] = [
            (
                &[("voiceId", "v"), ("file", "a.wav")],
                "file",
                "a file part",
            ),
            (&[], "voiceId", "required"),
            (
                &[("voiceId", "v"), ("colour", "red")],
                "colour",
                "unknown parameter",
            ),
            (
                &[("voiceId", "v"), ("sampleRate", "fast")],
                "sampleRate",
                "an integer",
            ),
            (
                &[("voiceId", "v"), ("sampleRate", "-1")],
                "sampleRate",
                "an integer",
            ),
            (
                &[("voiceId", "v"), ("maxSpeedup", "NaN")],
                "maxSpeedup",
                "a number",
            ),
            (
                &[("voiceId", "v"), ("keepBackground", "1")],
                "keepBackground",
                "true or false",
            ),
            (
                &[("voiceId", "v"), ("mode", "shout")],
                "mode",
                "convert, resynthesize",
            ),
        ];
        for (pairs, field, message) in cases {
            let (named, said) = refused(pairs);
            assert_eq!(named, field, "{pairs:?}");
            assert!(said.contains(message), "{pairs:?}: {said}");
        }
    }
}
