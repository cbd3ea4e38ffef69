//! JSON bodies read strictly: a member named twice in one object is an
//! error (serde_json keeps the last one, so `{"voiceId": a, "voiceId": b}`
//! would mean whatever a reader of the first member did not expect).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Reads one JSON value from `de`, refusing an object with a member named
/// twice (the error names it).
pub fn unique_value<'de, D: Deserializer<'de>>(de: D) -> Result<Value, D::Error> {
    de.deserialize_any(UniqueVisitor)
}

struct UniqueVisitor;

impl<'de> DeserializeSeed<'de> for UniqueVisitor {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(UniqueVisitor)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            let value = map.next_value_seed(UniqueVisitor)?;
            if members.contains_key(&name) {
                return Err(serde::de::Error::custom(format!(
                    "the member `{name}` is given twice"
                )));
            }
            members.insert(name, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Value, serde_json::Error> {
        unique_value(&mut serde_json::Deserializer::from_str(text))
    }

    #[test]
    fn members_named_twice_are_refused() {
        let e = read(r#"{"text": "a", "voiceId": "x", "voiceId": "y"}"#).unwrap_err();
        assert!(e.to_string().contains("`voiceId` is given twice"), "{e}");
        let nested = read(r#"{"a": [{"b": 1, "b": 2}]}"#).unwrap_err();
        assert!(nested.to_string().contains("`b`"), "{nested}");
        // The same as serde_json's own reading otherwise.
        let text = r#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": 18446744073709551615}"#;
        assert_eq!(
            read(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }
}
